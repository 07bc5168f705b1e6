"""Logging for every process: stdlib `logging`, one line per event that matters.

Verbosity works like kube's `--v`: 0 (the default) logs what an operator wants to see
(start, leases gained and lost, streams opened and broken, relists, re-dispatches, errors);
2 adds periodic detail; 4 and above add per-pod debugging (a rejected decision and why).
`--log-format json` writes one JSON object per line for log collectors.

A line about one object carries kube's structured-logging keys (klog's): `pod` (namespace/name),
`node`, `plugin`, passed as `extra={"pod": key, ...}` (see `keys`): fields of the JSON object,
and key="value" pairs after the message in text, as klog writes them, so that one query finds
a pod's lines in either format.
"""
from __future__ import annotations

import logging
import sys
import time
import traceback

import orjson

#: The level of messages shown from verbosity 2 (between INFO and DEBUG).
DETAIL = 15
logging.addLevelName(DETAIL, "DETAIL")
FORMATS = ("text", "json")
#: kube's keys a log record may carry (its `extra`), in the order text lines show them.
KEYS = ("pod", "node", "plugin")


def keys(pod: str | None = None, node: str | None = None, plugin: str | None = None) -> dict:
    """The `extra` of a log call about a pod, a node, a plugin (those given)."""
    return {"extra": {k: v for k, v in (("pod", pod), ("node", node), ("plugin", plugin)) if v}}


def _pairs(record: logging.LogRecord) -> list[tuple[str, str]]:
    return [(k, str(getattr(record, k))) for k in KEYS if getattr(record, k, None)]


def level_for(verbosity: int) -> int:
    if verbosity >= 4:
        return logging.DEBUG
    return DETAIL if verbosity >= 2 else logging.INFO


class TextFormatter(logging.Formatter):
    """The text line, then the record's kube keys as key="value" pairs, as klog's text format."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        pairs = _pairs(record)
        if not pairs:
            return line
        first, nl, rest = line.partition("\n")  # a traceback stays under its line
        return first + "".join(f" {k}={orjson.dumps(v).decode()}" for k, v in pairs) + nl + rest


class JsonFormatter(logging.Formatter):
    """{"ts", "level", "logger", "msg", "component", kube's keys the record carries (pod,
    node, plugin), and "error" with the traceback}."""

    def __init__(self, component: str):
        super().__init__()
        self.component = component

    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
               + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name,
               "msg": record.getMessage(), "component": self.component}
        doc.update(_pairs(record))
        if record.exc_info:
            doc["error"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return orjson.dumps(doc).decode()


def setup(component: str, verbosity: int = 0, fmt: str = "text", stream=None) -> None:
    """Configure the root logger of this process; `component` ("shard 1") prefixes lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter(component))
    else:
        handler.setFormatter(TextFormatter(f"%(asctime)s %(levelname)s {component} %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_for(verbosity))
    # grpc and urllib3 are chatty at debug level and say nothing an operator of this needs.
    for noisy in ("grpc", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(max(logging.INFO, level_for(verbosity)))


class ErrorLog:
    """Logs each distinct error once with its traceback (later repeats only count), so a loop
    that keeps failing the same way neither floods the log nor fails silently."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self.seen: dict[tuple, int] = {}

    def error(self, what: str, exc: BaseException) -> bool:
        """Record `exc`; True if this is its first occurrence (and it was logged)."""
        key = (type(exc).__name__, str(exc)[:200])
        n = self.seen.get(key, 0) + 1
        self.seen[key] = n
        if n == 1:
            self.logger.error("%s: %s: %s", what, type(exc).__name__, exc, exc_info=exc)
        elif n in (10, 100, 1000) or n % 10000 == 0:
            self.logger.error("%s: %s: %s (seen %d times)", what, type(exc).__name__, exc, n)
        return n == 1
