"""`shardsched simulate FILE...`: the manifests' pending pods scheduled through the shard code
on an in-memory store, the outcome printed as one JSON object."""
from __future__ import annotations

import argparse

import orjson

from .. import config as config_mod
from .errors import UsageError, fail
from .manifests import read_documents


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("simulate", help="schedule the pending pods of manifests, print the outcome as JSON")
    s.add_argument("files", nargs="+", metavar="FILE", help="YAML with Nodes, Pods, PDBs, PriorityClasses")
    s.add_argument("--config", help="configuration file (default: built-in defaults)")
    s.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    s.set_defaults(handler=cmd_simulate)


def simulate(paths, cfg: config_mod.Config, seed: int = 0) -> tuple[dict, int]:
    """(the JSON document, exit status 0 or 1) for the manifests in `paths` ('-' = stdin);
    raises UsageError for an unreadable file. Documents refused while reading are listed in
    `errors` first, as the objects admission refuses are."""
    from shard.simulate import run

    docs, unreadable = [], []
    for path in paths:
        read, refused = read_documents(path)
        docs += read
        unreadable += refused
    doc, code = run(docs, cfg, seed)
    if unreadable:
        doc["errors"] = [e.as_dict() for e in unreadable] + doc["errors"]
    return doc, (1 if unreadable else code)


def cmd_simulate(args) -> int:
    cfg = config_mod.load(args.config)
    try:
        doc, code = simulate(args.files, cfg, args.seed)
    except UsageError as e:
        return fail(str(e))
    print(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    return code
