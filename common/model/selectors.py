"""Label selectors, node selector terms, taints and tolerations in matchable form.

Parsed once into small tuples so that plugins evaluate them with a few dictionary lookups,
never by re-reading the Kubernetes dicts.
"""
from __future__ import annotations

import re

from ..errors import ObjectError

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = LABEL_OPERATORS + ("Gt", "Lt")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Field:
    """Where we are inside an object: raises ObjectError with the path when input is bad.

    The path is spelled out only when an error is raised: every pod event is parsed by
    several processes and almost none fails, so building path strings up front was a large
    share of parsing. The `get_*` methods read `d[key]` and create the child Field only when
    the value is not the plain well-formed case.
    """

    __slots__ = ("obj", "name", "parent")

    def __init__(self, obj: str, path: str = "", parent: "Field | None" = None):
        self.obj = obj
        self.name = path
        self.parent = parent

    @property
    def path(self) -> str:
        if self.parent is None:
            return self.name
        head = self.parent.path
        if isinstance(self.name, int):
            return f"{head}[{self.name}]"
        return f"{head}.{self.name}" if head else self.name

    def at(self, name) -> "Field":
        return Field(self.obj, name, self)

    def error(self, message: str) -> ObjectError:
        return ObjectError(self.obj, self.path or "<root>", message)

    def dict(self, value, required: bool = False) -> dict:
        if value is None:
            if required:
                raise self.error("is required")
            return {}
        if not isinstance(value, dict):
            raise self.error(f"must be an object, got {type(value).__name__}")
        return value

    def list(self, value) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(f"must be a list, got {type(value).__name__}")
        return value

    def str(self, value, required: bool = False, default: str = "") -> str:
        if value is None or value == "":
            if required:
                raise self.error("is required")
            return default
        if not isinstance(value, str):
            raise self.error(f"must be a string, got {type(value).__name__}")
        return value

    def int(self, value, default=None, minimum=None):
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(f"must be >= {minimum}, got {value}")
        return value

    def str_map(self, value) -> dict[str, str]:
        d = self.dict(value)
        for k, v in d.items():
            if not isinstance(v, str):
                raise self.at(k).error(f"must be a string, got {type(v).__name__}")
        return d

    # --- d[key], checked, with the child Field made only when needed -----------------------

    def get_dict(self, d: dict, key: str, required: bool = False) -> dict:
        value = d.get(key)
        if value.__class__ is dict:
            return value
        return self.at(key).dict(value, required)

    def get_list(self, d: dict, key: str) -> list:
        value = d.get(key)
        if value is None:
            return []
        if value.__class__ is list:
            return value
        return self.at(key).list(value)

    def get_str(self, d: dict, key: str, required: bool = False, default: str = "") -> str:
        value = d.get(key)
        if value.__class__ is str and value:
            return value
        return self.at(key).str(value, required, default)

    def get_int(self, d: dict, key: str, default=None, minimum=None):
        value = d.get(key)
        if value is None:
            return default
        return self.at(key).int(value, default, minimum)

    def get_str_map(self, d: dict, key: str) -> dict[str, str]:
        value = d.get(key)
        if value is None:
            return {}
        return self.at(key).str_map(value)


# --- label selectors -------------------------------------------------------------------------

class LabelSelector:
    """matchLabels + matchExpressions; `None` selector (absent) matches nothing, `{}` everything."""

    __slots__ = ("match_labels", "expressions")

    def __init__(self, match_labels: dict[str, str], expressions: tuple):
        self.match_labels = match_labels
        self.expressions = expressions  # ((key, op, frozenset(values)), ...)

    @property
    def key(self) -> tuple:
        """Hashable identity: equal selectors of different pods share cached counts."""
        return (frozenset(self.match_labels.items()), self.expressions)

    def matches(self, labels: dict[str, str]) -> bool:
        for k, v in self.match_labels.items():
            if labels.get(k) != v:
                return False
        for key, op, values in self.expressions:
            if not _label_expr(labels, key, op, values):
                return False
        return True

    def is_empty(self) -> bool:
        return not self.match_labels and not self.expressions

    def __repr__(self):
        return f"LabelSelector({self.match_labels!r}, {self.expressions!r})"


def _label_expr(labels: dict, key: str, op: str, values: frozenset) -> bool:
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def parse_label_selector(value, f: Field) -> LabelSelector | None:
    if value is None:
        return None
    d = f.dict(value)
    exprs = [(key, op, frozenset(values))
             for key, op, values in _expressions(f, d, "matchExpressions", LABEL_OPERATORS)]
    return LabelSelector(f.at("matchLabels").str_map(d.get("matchLabels")), tuple(exprs))


def _expressions(f: Field, d: dict, name: str, operators: tuple, only_key: str | None = None):
    """Validated (key, operator, values) of the requirements listed under `d[name]`."""
    out = []
    lf = f.at(name)
    for i, e in enumerate(lf.list(d.get(name))):
        ef = lf.at(i)
        e = ef.dict(e)
        key = ef.at("key").str(e.get("key"), required=True)
        if only_key is not None and key != only_key:
            raise ef.at("key").error(f"only {only_key} is supported in {name}, got {key!r}")
        op = ef.at("operator").str(e.get("operator"), required=True)
        if op not in operators:
            raise ef.at("operator").error(f"unknown operator {op!r} (one of {', '.join(operators)})")
        values = [ef.at("values").at(j).str(v, required=True)
                  for j, v in enumerate(ef.at("values").list(e.get("values")))]
        _check_values(ef, op, values)
        out.append((key, op, values))
    return out


_INTEGER = re.compile(r"[+-]?[0-9]+")


def label_int(value) -> int | None:
    """A label value as Gt/Lt read it: a plain decimal integer (Python's int() would also take
    '1_0', ' 5' or non-ASCII digits, which Kubernetes rejects), else None."""
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return None


def _check_values(f: Field, op: str, values: list) -> None:
    if op in ("In", "NotIn") and not values:
        raise f.at("values").error(f"must be non-empty for operator {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise f.at("values").error(f"must be empty for operator {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise f.at("values").error(f"must have exactly one value for operator {op}")
        if label_int(values[0]) is None:
            raise f.at("values").at(0).error(f"must be an integer for operator {op}")


# --- node selector terms (node affinity) -----------------------------------------------------

class NodeSelectorTerm:
    """One term: all expressions must hold; terms of a NodeSelector are ORed."""

    __slots__ = ("expressions", "fields")

    def __init__(self, expressions: tuple, fields: tuple):
        self.expressions = expressions  # ((key, op, frozenset(values) | int), ...)
        self.fields = fields            # matchFields on metadata.name: ((op, frozenset), ...)

    def matches(self, labels: dict[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False  # an empty term matches no objects
        for key, op, values in self.expressions:
            if op == "Gt" or op == "Lt":
                n = label_int(labels.get(key))
                if n is None:
                    return False
                if (op == "Gt" and not n > values) or (op == "Lt" and not n < values):
                    return False
            elif not _label_expr(labels, key, op, values):
                return False
        for op, values in self.fields:
            if not _label_expr({"metadata.name": node_name}, "metadata.name", op, values):
                return False
        return True

    def pinned_names(self) -> frozenset | None:
        """The node names this term's matchFields metadata.name In requirements allow (their
        intersection), or None when it has none (any node may match): kube-scheduler's
        NodeAffinity PreFilter reads terms so."""
        names = None
        for op, values in self.fields:
            if op == "In":
                names = values if names is None else names & values
        return names

    def single_node_name(self) -> str | None:
        """The node this term pins to (matchFields metadata.name In [one]), if it does."""
        for op, values in self.fields:
            if op == "In" and len(values) == 1:
                return next(iter(values))
        return None


def parse_node_selector_term(value, f: Field) -> NodeSelectorTerm:
    d = f.dict(value)
    exprs = [(key, op, int(values[0]) if op in ("Gt", "Lt") else frozenset(values))
             for key, op, values in _expressions(f, d, "matchExpressions", NODE_OPERATORS)]
    fields = [(op, frozenset(values))
              for _, op, values in _expressions(f, d, "matchFields", ("In", "NotIn"),
                                                only_key="metadata.name")]
    return NodeSelectorTerm(tuple(exprs), tuple(fields))


# --- taints and tolerations ------------------------------------------------------------------

class Taint:
    __slots__ = ("key", "value", "effect")

    def __init__(self, key: str, value: str, effect: str):
        self.key, self.value, self.effect = key, value, effect

    def __eq__(self, other):
        return isinstance(other, Taint) and (self.key, self.value, self.effect) == (
            other.key, other.value, other.effect)

    def __hash__(self):
        return hash((self.key, self.value, self.effect))

    def describe(self) -> str:
        """kube-scheduler's rendering in messages: {key: value}."""
        return f"{{{self.key}: {self.value}}}"

    def __repr__(self):
        return f"Taint({self.key}={self.value}:{self.effect})"


def parse_taint(value, f: Field) -> Taint:
    d = f.dict(value)
    key = f.at("key").str(d.get("key"), required=True)
    effect = f.at("effect").str(d.get("effect"), required=True)
    if effect not in TAINT_EFFECTS:
        raise f.at("effect").error(f"unknown effect {effect!r} (one of {', '.join(TAINT_EFFECTS)})")
    return Taint(key, f.at("value").str(d.get("value")), effect)


class Toleration:
    __slots__ = ("key", "operator", "value", "effect")

    def __init__(self, key: str, operator: str, value: str, effect: str):
        self.key, self.operator, self.value, self.effect = key, operator, value, effect

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ToleratesTaint: empty effect matches all, empty key with Exists all keys."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def parse_toleration(value, f: Field) -> Toleration:
    d = f.dict(value)
    key = f.at("key").str(d.get("key"))
    op = f.at("operator").str(d.get("operator"), default="Equal")
    if op not in ("Equal", "Exists"):
        raise f.at("operator").error(f"unknown operator {op!r} (Equal or Exists)")
    val = f.at("value").str(d.get("value"))
    if op == "Exists" and val:
        raise f.at("value").error("must be empty when operator is Exists")
    if not key and op != "Exists":
        raise f.at("operator").error("must be Exists when key is empty")
    effect = f.at("effect").str(d.get("effect"))
    if effect and effect not in TAINT_EFFECTS:
        raise f.at("effect").error(f"unknown effect {effect!r} (one of {', '.join(TAINT_EFFECTS)})")
    return Toleration(key, op, val, effect)


def tolerated(taint: Taint, tolerations) -> bool:
    for t in tolerations:
        if t.tolerates(taint):
            return True
    return False
