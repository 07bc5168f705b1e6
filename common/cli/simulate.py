"""`shardsched simulate FILE...`: the manifests' pending pods scheduled through the shard code
on an in-memory store, the outcome printed as one JSON object."""
from __future__ import annotations

import orjson

from .. import config as config_mod
from .errors import UsageError, fail
from .manifests import read_documents


def simulate(paths, cfg: dict, seed: int = 0) -> tuple[dict, int]:
    """(the JSON document, exit status 0 or 1) for the manifests in `paths` ('-' = stdin);
    raises UsageError for an unreadable file."""
    from shard.simulate import run

    return run([doc for path in paths for doc in read_documents(path)], cfg, seed)


def cmd_simulate(args) -> int:
    cfg = config_mod.load(args.config)
    try:
        doc, code = simulate(args.files, cfg, args.seed)
    except UsageError as e:
        return fail(str(e))
    print(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    return code
