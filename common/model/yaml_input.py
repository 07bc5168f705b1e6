"""Reading YAML (and JSON) from files under bounds, for `create -f`, `simulate` and every
config loader (`config validate`, the processes' `--config`, `up`, `bench`).

Two limits, each refusing only the document at fault (the other documents of the file are
read):

* nesting depth, at most common.model.limits.MAX_NESTING_DEPTH levels of mappings and sequences,
  found by a linear scan of the text (`scan_documents`) BEFORE PyYAML sees the document.
  PyYAML's scanner keeps one possible simple key per flow level and walks all of them for
  every token, so a document of N levels costs O(N^2): 100,000 levels in 200 KB ran for
  minutes even though the composer refused them at level 101. The scan bounds the flow
  nesting (`[`, `{`) exactly and the block nesting by the indentation of a line's ancestors
  and the collection indicators on it; the composer still checks the exact depth of what
  the scan let through (it then costs at most MAX_NESTING_DEPTH per token);
* alias expansion, by go-yaml's rule (sigs.k8s.io/yaml, which the API server decodes YAML
  with): once more than 100 nodes were decoded through aliases and more than 1,000 in all,
  the share decoded through aliases may not pass 99%, falling to 10% between 400,000 and
  4,000,000 decoded nodes. Without it a few hundred bytes of anchors expand to tens of
  megabytes wherever the object is serialised (PyYAML itself shares the aliased lists, so
  nothing is expanded while reading; the count is linear in the document's events).
"""
from __future__ import annotations

import re

import orjson
import yaml

from .limits import MAX_NESTING_DEPTH

#: go-yaml's bounds for its alias rule (decode.go: alias_ratio_range_low/high).
ALIAS_RATIO_RANGE = (400_000, 4_000_000)


class Refused(Exception):
    """A document breaks a limit; `line` is where (1-based)."""

    def __init__(self, reason: str, line: int):
        super().__init__(reason)
        self.reason = reason
        self.line = line


class Unreadable(Exception):
    """Not YAML or JSON at all (the whole input): the message is PyYAML's."""


def read_text(text: str) -> tuple[list, list[tuple[int, Refused]]]:
    """The documents of `text` in order (None for an empty one; a JSON array's items), and
    (document number, 1-based, refusal) for each document refused; raises Unreadable when
    the text is not YAML or JSON at all."""
    if text.lstrip()[:1] in ("{", "["):
        try:  # JSON first (PyYAML's YAML 1.1 misreads some valid JSON); orjson is C and linear
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            docs = doc if isinstance(doc, list) else [doc]
            refused = [(n, Refused(f"exceeded max depth of {MAX_NESTING_DEPTH}", 1))
                       for n, d in enumerate(docs, 1) if _deeper_than(d, MAX_NESTING_DEPTH)]
            return [None if any(n == i for i, _ in refused) else d for n, d in enumerate(docs, 1)], refused
    docs, refused = [], []
    for number, (start, end, first_line, refusal) in enumerate(scan_documents(text), 1):
        if refusal is not None:
            refused.append((number, refusal))
            docs.append(None)
            continue
        loader = _LimitedLoader(text[start:end])
        loader.line = first_line - 1  # PyYAML's marks count the file's lines
        try:
            if loader.check_node():
                docs.append(loader.get_data())
            else:
                docs.append(None)
        except Refused as e:
            refused.append((number, e))
            docs.append(None)
        except yaml.YAMLError as e:
            raise Unreadable(str(e)) from None
        finally:
            loader.dispose()
    return docs, refused


def read_single(text: str):
    """The one document of a config file (None when empty): raises Refused or Unreadable."""
    docs = scan_documents(text)
    if len(docs) > 1:
        raise Unreadable(f"expected a single document, found {len(docs)}")
    if not docs:
        return None
    start, end, first_line, refusal = docs[0]
    if refusal is not None:
        raise refusal
    loader = _LimitedLoader(text[start:end])
    loader.line = first_line - 1
    try:
        return loader.get_data() if loader.check_node() else None
    except yaml.YAMLError as e:
        raise Unreadable(str(e)) from None
    finally:
        loader.dispose()


def _deeper_than(doc, limit: int) -> bool:
    """Whether parsed JSON nests more than `limit` levels (orjson reads any depth)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


# --- the linear scan -------------------------------------------------------------------------

_MARKER = re.compile(r"(?:---|\.\.\.)(?=[ \t]|$)")
_FLOW_STOP = re.compile(r"[\[\]{}'\"#,:]")
_PLAIN_STOP = re.compile(r":(?=[ \t]|$)|[ \t]#")
_SINGLE_END = re.compile(r"'")
_DOUBLE_END = re.compile(r'\\.|"')
_SPACES = re.compile(r"[ \t]*")
_TOKEN = re.compile(r"[^ \t]*")


def scan_documents(text: str, limit: int = MAX_NESTING_DEPTH) -> list[tuple[int, int, int, Refused | None]]:
    """Split `text` into its YAML documents and bound each one's nesting depth, in one pass
    over the lines: (start, end, first line (1-based), refusal or None) per document.

    A document is what lies between two lines starting with `---` (or after a `...`);
    directives and comments before a `---` belong to the document it starts. The depth of
    a line is the number of ancestors its indentation shows (lines less indented above it
    that are still open), plus the block collections its own indicators open (`- `, `? `,
    `key: `) beyond the first, plus the flow collections open (`[`, `{`, counted through
    quoted scalars and comments). Block scalars (`|`, `>`) and quoted scalars are skipped."""
    lines = text.splitlines(keepends=True)
    docs: list[list] = []  # [start offset, first line, refusal]
    offset = 0
    cur = None
    pending_start = None  # offset and line of directives/comments before a `---`
    state = _State(limit)
    for i, line in enumerate(lines):
        if _MARKER.match(line):
            if line.startswith("---"):
                if cur is not None and cur[3]:
                    docs.append(cur)
                start = pending_start if pending_start is not None else (offset, i + 1)
                cur = [start[0], start[1], None, True]
                pending_start = None
                state.reset()
                try:
                    state.line(line, i + 1, 3)
                except Refused as e:
                    cur[2] = e
            else:  # `...`: the document ends
                if cur is not None:
                    docs.append(cur)
                cur = None
                state.reset()
            offset += len(line)
            continue
        if cur is None:
            stripped = line.strip()
            if not stripped or stripped.startswith(("#", "%")):
                if pending_start is None:
                    pending_start = (offset, i + 1)
                offset += len(line)
                continue
            start = pending_start if pending_start is not None else (offset, i + 1)
            cur = [start[0], start[1], None, True]
            pending_start = None
            state.reset()
        if cur[2] is None:
            try:
                state.line(line, i + 1, 0)
            except Refused as e:
                cur[2] = e
        offset += len(line)
    if cur is not None:
        docs.append(cur)
    out = []
    for n, d in enumerate(docs):
        end = docs[n + 1][0] if n + 1 < len(docs) else len(text)
        out.append((d[0], end, d[1], d[2]))
    return out


class _State:
    """The scan's state within one document."""

    def __init__(self, limit: int):
        self.limit = limit
        self.reset()

    def reset(self) -> None:
        self.ancestors: list[int] = []  # indentation of the open block lines above
        self.flow = 0                   # flow collections open
        self.quote = ""                 # a quoted scalar continues on the next line
        self.block_scalar = None        # indentation a block scalar's lines exceed
        self.after = ""                 # the last significant character in flow context
        self.key_open = False           # the last line ended with a mapping key (`key:`)

    def _check(self, depth: int, line_no: int) -> None:
        if depth > self.limit:
            raise Refused(f"exceeded max depth of {self.limit}", line_no)

    def line(self, line: str, line_no: int, pos: int) -> None:
        text = line.rstrip("\r\n")
        if self.block_scalar is not None:
            indent = len(_SPACES.match(text).group())
            if not text.strip() or indent > self.block_scalar:
                return
            self.block_scalar = None
        own = None  # what the line's first collection indicator opens (None: its column)
        if self.quote:
            pos = self._quoted(text, pos, self.quote)
            if pos is None:
                return
        elif self.flow == 0:
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                return
            if pos == 0:
                indent = pos = len(_SPACES.match(text).group())
                anc, own = self.ancestors, indent
                if text.startswith("- ", indent) or text[indent:].rstrip() == "-":
                    # a sequence at its key's own column is the key's value (indentless):
                    # its entry sits half a column deeper
                    while anc and anc[-1] > indent + 0.5:
                        anc.pop()
                    if anc and anc[-1] == indent + 0.5:
                        own = False  # the same sequence goes on
                    elif self.key_open and anc and anc[-1] == indent:
                        own = indent + 0.5
                if own is not False and own == indent:
                    while anc and anc[-1] >= indent:
                        anc.pop()
        self.key_open = False
        self._rest(text, pos, line_no, own)

    def _quoted(self, text: str, pos: int, quote: str) -> int | None:
        """Past the closing quote, or None (the scalar continues on the next line)."""
        end = _SINGLE_END if quote == "'" else _DOUBLE_END
        while True:
            m = end.search(text, pos)
            if m is None:
                self.quote = quote
                return None
            pos = m.end()
            if m.group() == quote:
                if quote == "'" and text.startswith("'", pos):
                    pos += 1  # '' is a quote inside
                    continue
                self.quote = ""
                return pos

    def _open(self, own, col, line_no: int):
        """A block collection indicator at `col`: the line's first opens `own` (False: none,
        the sequence it continues is open already), the others their own column."""
        if own is None:
            self.ancestors.append(col)
        elif own is not False:
            self.ancestors.append(own)
        self._check(len(self.ancestors), line_no)

    def _rest(self, text: str, pos: int, line_no: int, own) -> None:
        n = len(text)
        while pos < n:
            if self.flow:
                m = _FLOW_STOP.search(text, pos)
                if m is None:
                    self.after = "x" if text[pos:].strip() else self.after
                    return
                c, at = m.group(), m.start()
                if text[pos:at].strip():
                    self.after = "x"
                pos = at + 1
                if c in "[{":
                    self.flow += 1
                    self._check(len(self.ancestors) + self.flow, line_no)
                    self.after = c
                elif c in "]}":
                    self.flow -= 1
                    self.after = "x"
                    if self.flow <= 0:
                        self.flow = 0
                        # back in block context: only a comment may follow
                        return
                elif c in "'\"":
                    if self.after in "[{,:?":
                        q = self._quoted(text, pos, c)
                        if q is None:
                            return
                        pos = q
                        self.after = "x"
                elif c == "#":
                    if at == 0 or text[at - 1] in " \t":
                        return
                else:  # , :
                    self.after = c
                continue
            # block context, where a node may start
            pos += len(_SPACES.match(text, pos).group())
            if pos >= n:
                return
            c = text[pos]
            if c == "#":
                return
            if c in "-?" and (pos + 1 == n or text[pos + 1] in " \t"):
                self._open(own, pos, line_no)
                own = None
                pos += 1
                continue
            if c in "[{":
                self.flow, self.after = 1, c
                pos += 1
                self._check(len(self.ancestors) + 1, line_no)
                continue
            if c in "&!":  # an anchor or a tag before the node
                pos = _TOKEN.match(text, pos).end()
                continue
            if c in "|>":
                self.block_scalar = len(_SPACES.match(text).group())
                return
            key_col = pos
            if c in "'\"":
                q = self._quoted(text, pos + 1, c)
                if q is None:
                    return
                pos = q
            m = _PLAIN_STOP.search(text, pos)
            if m is None or m.group() != ":":
                return
            self._open(own, key_col, line_no)  # a mapping key
            own = None
            pos = m.end()
            rest = text[pos:].strip()
            if not rest or rest.startswith("#"):
                self.key_open = True
                return


# --- the loader ------------------------------------------------------------------------------

def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's allowedAliasRatio: 99% for small documents, 10% for huge ones, linear between."""
    low, high = ALIAS_RATIO_RANGE
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting as it composes each document what go-yaml counts as it
    decodes one: nodes decoded, nodes decoded through aliases (an alias decodes its anchor's
    whole expanded subtree again), and the nesting depth."""

    def __init__(self, text: str):
        super().__init__(text)
        self._depth = self._decoded = self._aliased = 0
        #: expanded node count of each anchor whose node is complete
        self._sizes: dict[str, int] = {}

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            size = self._sizes.get(event.anchor)
            if size is None and event.anchor in self.anchors:
                raise Refused(f"anchor {event.anchor!r} value contains itself", event.start_mark.line + 1)
            if size is not None:  # (an undefined alias is PyYAML's own error)
                self._count(1 + size, size, event.start_mark)
            return super().compose_node(parent, index)
        nests = isinstance(event, yaml.CollectionStartEvent)
        if nests:
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise Refused(f"exceeded max depth of {MAX_NESTING_DEPTH}", event.start_mark.line + 1)
        before = self._decoded
        self._count(1, 0, event.start_mark)
        node = super().compose_node(parent, index)
        if nests:
            self._depth -= 1
        if event.anchor is not None:
            self._sizes[event.anchor] = self._decoded - before
        return node

    def _count(self, decoded: int, aliased: int, mark) -> None:
        """go-yaml's check, made after each node or whole alias: within one alias the share
        only rises and the allowance only falls, so its end is where it would fail first."""
        self._decoded += decoded
        self._aliased += aliased
        if (self._aliased > 100 and self._decoded > 1000
                and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)):
            raise Refused("document contains excessive aliasing", mark.line + 1)
