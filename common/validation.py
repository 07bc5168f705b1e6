"""Kubernetes' validation vocabulary, for the configuration: field errors printed as
k8s.io/apimachinery's field.Error prints them (`path: Invalid value: 101: not in valid range
[0, 100]`), the qualified-name rule label keys and resource names follow, and Go's duration
strings (`15s`, `1m30s`) that kube's configuration files use.

It sits beside common/config, not inside it, because the plugins' arguments (common/plugins)
are checked with it too, and common/config reads the plugin registry: inside the config
package, importing any plugin would first run the config package, which needs the registry
that plugin is part of.

A user who pastes a KubeSchedulerConfiguration gets kube-scheduler's own words for its
mistakes, byte for byte where kube-scheduler reports them, so they can search for them.
"""
from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any

REQUIRED = "Required value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"
DUPLICATE = "Duplicate value"
FORBIDDEN = "Forbidden"

#: Error types whose message leaves the value out (as field.Error.ErrorBody does).
_VALUE_LESS = (REQUIRED, FORBIDDEN)


class Verbatim(str):
    """A value printed as is, not quoted: kube prints a field path or a duration this way."""


class FieldError(ValueError):
    """One invalid field: its path (`profiles[0].pluginConfig[1].args.x`), kube's error type,
    the bad value and a detail sentence."""

    def __init__(self, path: str, kind: str, value=None, detail: str = ""):
        self.path = path
        self.kind = kind
        self.value = value
        self.detail = detail
        #: Every error this one stands for: itself (FieldErrors holds several).
        self.errors = [self]
        super().__init__(f"{path}: {self.body}")

    @property
    def body(self) -> str:
        """The message without the path (field.Error.ErrorBody)."""
        s = self.kind if self.kind in _VALUE_LESS else f"{self.kind}: {go_value(self.value)}"
        return f"{s}: {self.detail}" if self.detail else s


class FieldErrors(FieldError):
    """Several invalid fields of one document, reported together as kube-scheduler reports a
    file's errors (utilerrors.Aggregate: `[first, second]`), so a user fixes them in one go.
    path, kind, value and detail are the first error's; `errors` holds them all."""

    def __init__(self, errors: list[FieldError]):
        flat = [one for e in errors for one in e.errors]
        first = flat[0]
        super().__init__(first.path, first.kind, first.value, first.detail)
        self.errors = flat
        self.args = ("[" + ", ".join(str(e) for e in flat) + "]",)

    def __str__(self) -> str:
        return self.args[0]


def raise_all(errors: list[FieldError]) -> None:
    """Raise `errors` (nothing when empty; one error as itself, several as FieldErrors)."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FieldErrors(errors)


def collecting(errors: list, fn, *args, default=None):
    """fn(*args), its FieldErrors appended to `errors` (then `default` is returned)."""
    try:
        return fn(*args)
    except FieldError as e:
        errors.extend(e.errors)
        return default


def invalid(path: str, value, detail: str) -> FieldError:
    return FieldError(path, INVALID, value, detail)


def not_supported(path: str, value, supported) -> FieldError:
    return FieldError(path, NOT_SUPPORTED, value,
                      "supported values: " + ", ".join(json.dumps(str(s)) for s in supported))


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, REQUIRED, "", detail)


def duplicate(path: str, value) -> FieldError:
    return FieldError(path, DUPLICATE, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, FORBIDDEN, "", detail)


def go_value(value) -> str:
    """A value as Go's fmt prints it in a field error: numbers and booleans bare, strings
    quoted, nil as "null", anything else (lists, mappings) as compact JSON."""
    if isinstance(value, Verbatim):
        return str(value)
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), default=str)


# --- qualified names (k8s.io/apimachinery/pkg/util/validation) --------------------------------

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = f"{_DNS_LABEL_FMT}(\\.{_DNS_LABEL_FMT})*"
_DNS_SUBDOMAIN = re.compile(f"^{_DNS_SUBDOMAIN_FMT}$")
_DNS_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def qualified_name_errors(value: str) -> list[str]:
    """Why `value` is not a qualified name (a label key, a resource name): kube's sentences."""
    errs = []
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS_SUBDOMAIN.match(prefix):
                errs.append("prefix part " + _regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_name_errors(value: str, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelName."""
    return [invalid(path, value, msg) for msg in qualified_name_errors(value)]


# --- Go durations (time.ParseDuration, time.Duration.String) ---------------------------------

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
          "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds from a Go duration string ("15s", "1m30s", "1.5h", "-2s", "0"); None when it
    is not one."""
    s = text.strip()
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    if not s:
        return None
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total / 1e9


def format_duration(seconds: float) -> Verbatim:
    """Go's time.Duration.String(): "15s", "1m30s", "1h0m0s", "500ms", "0s"."""
    ns = round(seconds * 1e9)
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns == 0:
        return Verbatim("0s")
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return Verbatim(sign + _trim(ns / size) + unit)
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _trim(rest / 1e9) + "s"
    if hours:
        return Verbatim(f"{sign}{hours}h{minutes}m{secs}")
    if minutes:
        return Verbatim(f"{sign}{minutes}m{secs}")
    return Verbatim(sign + secs)


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


# --- kube-shaped documents: typed fields ---------------------------------------------------

@dataclass(frozen=True)
class Field:
    """One field of a kube-shaped document (a plugin's args, a KubeSchedulerConfiguration).
    `kind` is int, number, bool, str, list, object or any; `default` is what an absent (or
    null) field means; `refused` (non-empty) is why shardsched refuses any value of a field
    kube has (null and empty values are accepted: they mean unset)."""

    kind: str
    default: Any = None
    item: "Field | None" = None
    fields: dict = dc_field(default_factory=dict)
    bits: int = 32
    refused: str = ""


def Int(default=0, bits=32) -> Field:
    return Field("int", default, bits=bits)


def Num(default=0.0) -> Field:
    return Field("number", default)


def Bool(default=False) -> Field:
    return Field("bool", default)


def Str(default="") -> Field:
    return Field("str", default)


def List(item: Field) -> Field:
    return Field("list", [], item=item)


def Obj(**fields) -> Field:
    """A nested object; an absent one stays None (a Go pointer)."""
    return Field("object", None, fields=fields)


def Refused(why: str) -> Field:
    return Field("any", None, refused=why)


ANY = Field("any")
_INT_RANGE = {32: (-2**31, 2**31 - 1), 64: (-2**63, 2**63 - 1)}
_TYPE_WORDS = {"int": "an integer", "number": "a finite number", "bool": "a boolean", "str": "a string",
               "list": "a list", "object": "a mapping"}
_TYPE_CHECKS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def decode(f: Field, value, path: str):
    """`value` checked against `f`, defaults filled in; raises FieldError naming `path`."""
    if f.refused:
        if value in (None, {}, [], ""):
            return None
        raise forbidden(path, f.refused)
    if value is None:
        return copy.deepcopy(f.default)
    if f.kind == "any":
        return value
    if not _TYPE_CHECKS[f.kind](value):
        raise invalid(path, value, f"must be {_TYPE_WORDS[f.kind]}")
    if f.kind == "int":
        lo, hi = _INT_RANGE[f.bits]
        if not lo <= value <= hi:
            raise invalid(path, value, f"must fit in a {f.bits}-bit integer")
    elif f.kind == "list":
        errors: list[FieldError] = []
        out = [collecting(errors, decode, f.item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        raise_all(errors)
        return out
    elif f.kind == "object":
        return decode_object(f.fields, value, path)
    return value


def decode_object(fields: dict, value, path: str, errors: list | None = None) -> dict:
    """A mapping with exactly `fields` (name -> Field): unknown keys are refused by name.
    Every bad field is reported: raised together, or, given `errors`, appended to it while
    the mapping comes back with defaults in the bad fields' place."""
    own: list[FieldError] = []
    if value is None:
        value = {}
    if not isinstance(value, dict):
        own.append(invalid(path, value, "must be a mapping"))
        value = {}
    known = f"unknown field (known: {', '.join(fields) or 'none'})"
    own += [forbidden(f"{path}.{k}" if path else str(k), known) for k in value if k not in fields]
    out = {k: collecting(own, decode, sub, value.get(k), f"{path}.{k}" if path else k,
                         default=copy.deepcopy(sub.default)) for k, sub in fields.items()}
    if errors is None:
        raise_all(own)
    else:
        errors += own
    return out
