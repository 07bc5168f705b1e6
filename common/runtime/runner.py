"""Running one component as its own process: `python -m dispatcher|shard|binder`, which is
what the container runs, what `shardsched up` spawns, and what `shardsched shard ...` calls.

Each role passes its `build(cfg, store, args)`; this module knows no role (it sits below them).
"""
from __future__ import annotations

import argparse
import logging

from .. import config as config_mod
from . import orphans
from .component import METRICS_OFF, freeze_before_list, stop_on_signals
from ..errors import StoreUnavailable
from .logs import FORMATS, setup
from .security import SecurityError
from ..store import configured_url, open_configured

log = logging.getLogger(__name__)

#: The config sections whose `host` --host overrides (a process reads only its own).
SECTIONS = ("dispatcher", "shards", "binders")

#: Exit statuses, as the CLI's: invalid configuration content; unusable arguments or store.
EXIT_INVALID_CONFIG, EXIT_USAGE = 1, 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of a component process (shared with the CLI's role subcommands)."""
    p.add_argument("--config", help="configuration file (default: built-in defaults)")
    p.add_argument("--id", default="0", help="index of this process (shard/binder number)")
    p.add_argument("--store", help="store URL (default: store.url from the config)")
    p.add_argument("--host", help="address to listen on and to advertise in the lease (default: the "
                                  "config's host; a pod passes its IP from the downward API)")
    p.add_argument("--port", type=int, help="gRPC port (default: from the config; 0 = any free port)")
    p.add_argument("--metrics-port", type=metrics_port_arg, metavar="PORT|off",
                   help="Prometheus metrics port (default: from the config; 0 = any free port, "
                        "off = no metrics, as the config's null)")
    p.add_argument("--seed", type=int, default=0)
    add_logging_arguments(p)


def metrics_port_arg(text: str) -> int | str:
    """--metrics-port's value: a port (0 = any free one) or `off`."""
    if text == METRICS_OFF:
        return text
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number or {METRICS_OFF!r}, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {port}")
    return port


def add_logging_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbosity", type=int, default=0, metavar="N",
                   help="log verbosity, as kube's --v: 0 lifecycle and errors, 2 detail, 4 debug")
    p.add_argument("--log-format", choices=FORMATS, default="text", help="text (default) or json lines")


def run(role: str, args, build) -> int:
    """Load the config, open the store, run the component until SIGTERM/SIGINT."""
    orphans.die_with_parent()  # started by `up` (or a LocalCluster): never outlive it
    setup(f"{role}-{args.id}", args.verbosity, args.log_format)
    try:
        cfg, notes = config_mod.load_with_notes(args.config)
    except config_mod.ConfigError as e:
        log.error("%s", e)
        return EXIT_USAGE if e.unreadable else EXIT_INVALID_CONFIG
    for note in notes:
        log.warning("config: %s", note)
    if args.host:
        cfg = cfg.replace(**{section: {"host": args.host} for section in SECTIONS})
    try:
        store = open_configured(cfg, configured_url(args.store, cfg, f"{role} {args.id}"),
                                max_in_flight=cfg.binders.max_in_flight if role == "binder" else None)
    except (ValueError, StoreUnavailable) as e:
        log.error("%s", e)
        return EXIT_USAGE
    try:
        try:
            component = build(cfg, store, args)
        except SecurityError as e:
            log.error("config: %s", e)
            return EXIT_INVALID_CONFIG
        except config_mod.ConfigError as e:  # a rule between fields the role checks itself
            log.error("%s", e)
            return EXIT_INVALID_CONFIG
        stop_on_signals(component)
        log.info("%s %s starting", role, args.id)
        # No cyclic collections while the initial lists are loaded (hundreds of ms each at
        # 50,000 pods, common.runtime.gcstats); Component.start's settle_heap (the dispatcher's run calls it)
        # freezes what they built and turns collection back on.
        freeze_before_list()
        try:
            component.run()
        except OSError as e:  # its ports: nothing was served yet
            log.error("%s", e)
            return EXIT_USAGE
    finally:
        store.close()
    return 0


def main(role: str, build, argv=None) -> int:
    p = argparse.ArgumentParser(prog=f"python -m {role}", description=f"Run one shardsched {role}.")
    add_arguments(p)
    return run(role, p.parse_args(argv), build)
