"""`shardsched create|delete|get|verify`: kubectl-like management of an existing store.

These commands act on a store that something else runs (`shardsched up`, a Redis server,
an API server), so unlike `fleet` they never start a throwaway embedded redis-server: with
no `--store` and no `store.url` in `--config` they stop with a usage error (exit 2). The
store is found as `top` and the component processes find it (common.store.configured_url).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from datetime import datetime

import orjson
import yaml

from .. import config as config_mod
from ..model.admission import admit, stored_classes
from ..errors import ObjectError
from ..model.objects import NAMESPACED, TERMINAL_PHASES, object_key, parse_node, parse_object, parse_pod
from ..model.podgroup import NATIVE_KIND
from ..model.resources import CPU, MEMORY, PODS, format_amount, padded, resource_name, vadd
from ..scheduling.pools import pool_of
from ..store import configured_url, open_configured
from ..store.podstatus import SCHEDULING_GATED, scheduled_condition
from ..tools.verify import summary, verify_store
from .errors import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, UsageError, fail, print_error
from . import podgroups
from .manifests import read_documents
from . import dra_tables, storage_tables
from .workload_tables import RAW_TABLES

#: kind -> its table of parsed objects
TABLES = {**storage_tables.TABLES, **dra_tables.TABLES}
#: kind -> kubectl's resource name in "created"/"deleted" lines
RESOURCE_NAMES = {
    "PriorityClass": "priorityclass.scheduling.k8s.io",
    "Node": "node",
    "PodDisruptionBudget": "poddisruptionbudget.policy",
    "PodGroup": "podgroup.scheduling.x-k8s.io",
    NATIVE_KIND: "podgroup.scheduling.k8s.io",
    "Pod": "pod",
    "PersistentVolumeClaim": "persistentvolumeclaim",
    "PersistentVolume": "persistentvolume",
    "StorageClass": "storageclass.storage.k8s.io",
    "CSINode": "csinode.storage.k8s.io",
    "Namespace": "namespace",
    "Service": "service",
    "ReplicaSet": "replicaset.apps",
    "StatefulSet": "statefulset.apps",
    "ReplicationController": "replicationcontroller",
    "ResourceClaim": "resourceclaim.resource.k8s.io",
    "ResourceClaimTemplate": "resourceclaimtemplate.resource.k8s.io",
    "DeviceClass": "deviceclass.resource.k8s.io",
    "ResourceSlice": "resourceslice.resource.k8s.io",
}
#: Aliases `get` and `delete` take for the kinds (in the order their --help lists them) ...
KIND_ALIASES = ("no", "node", "nodes", "po", "pod", "pods", "pg", "pgs", "podgroup", "podgroups",
                "podgroups.scheduling.x-k8s.io", "podgroups.scheduling.k8s.io",
                "pvc", "persistentvolumeclaim", "persistentvolumeclaims", "pv", "persistentvolume",
                "persistentvolumes", "sc", "storageclass", "storageclasses", "csinode", "csinodes",
                "ns", "namespace", "namespaces", "svc", "service", "services", "rs", "replicaset", "replicasets",
                "sts", "statefulset", "statefulsets", "rc", "replicationcontroller", "replicationcontrollers",
                "resourceclaim", "resourceclaims", "resourceclaimtemplate", "resourceclaimtemplates",
                "deviceclass", "deviceclasses", "resourceslice", "resourceslices")
#: ... and the Events `get` lists.
EVENT_ALIASES = ("ev", "event", "events")
#: The kind each command-line spelling means.
ALIASES = {"pod": "Pod", "pods": "Pod", "po": "Pod", "node": "Node", "nodes": "Node", "no": "Node",
           "podgroup": "PodGroup", "podgroups": "PodGroup", "pg": "PodGroup", "pgs": "PodGroup",
           # kubectl's names qualified by API group tell the two PodGroups apart; the short
           # ones mean scheduler-plugins' (as they always did here)
           "podgroups.scheduling.x-k8s.io": "PodGroup", "podgroups.scheduling.k8s.io": NATIVE_KIND,
           "event": "Event", "events": "Event", "ev": "Event",
           "pvc": "PersistentVolumeClaim", "persistentvolumeclaim": "PersistentVolumeClaim",
           "persistentvolumeclaims": "PersistentVolumeClaim", "pv": "PersistentVolume",
           "persistentvolume": "PersistentVolume", "persistentvolumes": "PersistentVolume",
           "sc": "StorageClass", "storageclass": "StorageClass", "storageclasses": "StorageClass",
           "csinode": "CSINode", "csinodes": "CSINode",
           "ns": "Namespace", "namespace": "Namespace", "namespaces": "Namespace",
           "svc": "Service", "service": "Service", "services": "Service",
           "rs": "ReplicaSet", "replicaset": "ReplicaSet", "replicasets": "ReplicaSet",
           "sts": "StatefulSet", "statefulset": "StatefulSet", "statefulsets": "StatefulSet",
           "rc": "ReplicationController", "replicationcontroller": "ReplicationController",
           "replicationcontrollers": "ReplicationController",
           "resourceclaim": "ResourceClaim", "resourceclaims": "ResourceClaim",
           "resourceclaimtemplate": "ResourceClaimTemplate", "resourceclaimtemplates": "ResourceClaimTemplate",
           "deviceclass": "DeviceClass", "deviceclasses": "DeviceClass",
           "resourceslice": "ResourceSlice", "resourceslices": "ResourceSlice"}

NO_STORE_HELP = ("store URL; required here (or store.url in --config): these commands act on an "
                 "existing store and never start an embedded redis-server")


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", help=NO_STORE_HELP)
    p.add_argument("--config", help="configuration file whose store.url (and store.kubeconfig) to use")


def register(sub: argparse._SubParsersAction) -> None:
    cr = sub.add_parser("create", help="create Nodes, Pods, PDBs, PriorityClasses, PodGroups, PVCs, PVs, "
                                       "StorageClasses, CSINodes, Namespaces, Services, ReplicaSets, "
                                       "StatefulSets and ReplicationControllers from a file (like kubectl)")
    cr.add_argument("-f", "--filename", dest="file", required=True, metavar="FILE",
                    help="YAML (one or more documents, or kind: List) or JSON; '-' reads stdin")
    _store_args(cr)
    cr.set_defaults(handler=cmd_create)
    d = sub.add_parser("delete", help="delete pods, pod groups, claims, services, replica sets, stateful sets, "
                                      "replication controllers (NS/NAME) or nodes, volumes, storage classes, "
                                      "CSINodes, namespaces (NAME) from the store")
    d.add_argument("kind", choices=KIND_ALIASES)
    d.add_argument("names", nargs="+", metavar="NAME",
                   help="NS/NAME for namespaced kinds (NAME = default/NAME)")
    _store_args(d)
    d.set_defaults(handler=cmd_delete)
    ge = sub.add_parser("get", help="list pods, nodes, pod groups, claims, volumes, storage classes, CSINodes, "
                                    "namespaces, services, replica sets, stateful sets, replication controllers "
                                    "or events as a table, or as a kind: List")
    ge.add_argument("kind", choices=KIND_ALIASES + EVENT_ALIASES)
    ge.add_argument("-o", "--output", choices=("wide", "json", "yaml"), help="wide table or the stored objects")
    _store_args(ge)
    ge.set_defaults(handler=cmd_get)
    ve = sub.add_parser("verify", help="check the store's invariants (capacity, host ports, taints, "
                                       "affinity, missing nodes, double binding)")
    ve.add_argument("--json", action="store_true", help="print {ok, bound, pending, violations, ...} as JSON")
    ve.add_argument("--settled", type=float, metavar="SECONDS",
                    help="also fail on any pod pending longer than this that some node could take "
                         "(pods of --config's profiles when given)")
    _store_args(ve)
    ve.set_defaults(handler=cmd_verify)


@contextlib.contextmanager
def opened_store(args):
    """The store of --store / --config's store.url (a missing URL raises ValueError, which
    the CLI reports as a usage error)."""
    cfg = config_mod.load(args.config)
    store = open_configured(cfg, configured_url(args.store, cfg, args.cmd))
    try:
        yield store
    finally:
        store.close()


# --- create -------------------------------------------------------------------------------

def _display_name(kind: str, key: str) -> str:
    """kubectl names objects without their namespace: pod/web-1."""
    return f"{RESOURCE_NAMES[kind]}/{key.rsplit('/', 1)[-1]}"


def cmd_create(args) -> int:
    """`create -f FILE`: every valid object is created even when others are rejected."""
    try:
        docs, unreadable = read_documents(args.file)
        if not docs and not unreadable:
            raise UsageError(f"{args.file}: no objects to create")
    except UsageError as e:
        return fail(str(e), EXIT_USAGE)
    with opened_store(args) as store:
        accepted, errors = admit(docs, stored_classes(store))
        refused = store.create_many([doc for _, _, doc in accepted]) if accepted else []
    failed = {e.obj for e in refused}
    errors = unreadable + errors + refused
    for kind, key, _ in accepted:
        if f"{kind} {key}" not in failed:
            print(f"{_display_name(kind, key)} created")
    for e in errors:
        print_error(str(e))
    return EXIT_REJECTED if errors else EXIT_OK


# --- delete -------------------------------------------------------------------------------

def delete_key(kind: str, name: str) -> str:
    """Store key of a command-line name: namespaced kinds' are NS/NAME (NAME alone = namespace
    default)."""
    parts = name.split("/")
    namespaced = kind in NAMESPACED
    if not all(parts) or len(parts) > (2 if namespaced else 1):
        raise UsageError(f"bad {kind} name {name!r}: use " + ("NAMESPACE/NAME or NAME" if namespaced else "NAME"))
    return name if not namespaced or len(parts) == 2 else f"default/{name}"


def cmd_delete(args) -> int:
    """`delete pod NS/NAME...` / `delete node NAME...`: exit 1 when any was not found.
    Deleting a node leaves its pods bound to it (as the API server does without a
    controller), which `verify` then reports."""
    kind = ALIASES[args.kind]
    try:
        keys = [delete_key(kind, n) for n in args.names]
    except UsageError as e:
        return fail(str(e), EXIT_USAGE)
    code = EXIT_OK
    with opened_store(args) as store:
        for key in keys:
            if store.delete(kind, key):
                print(f'{RESOURCE_NAMES[kind]} "{key.rsplit("/", 1)[-1]}" deleted')
            else:
                code = fail(f"{kind} {key} not found", EXIT_REJECTED)
    return code


# --- get ----------------------------------------------------------------------------------

def age(created: str | None, now: float) -> str:
    """kubectl's AGE column (apimachinery's HumanDuration, abridged)."""
    if not created:
        return "<unknown>"
    try:
        s = int(now - datetime.fromisoformat(str(created).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return "<unknown>"
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{max(s, 0)}s"
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if h < 3:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    return f"{d}d" if d < 730 else f"{d // 365}y"


def table(header: list[str], rows: list[list[str]]) -> str:
    """kubectl's plain layout: left-aligned columns three spaces apart, no borders."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


def _parsed_pods(pod_docs: list, classes: dict | None) -> list:
    """Pods with their priority resolved from `classes` (None: spec.priority or 0, cheaper);
    one whose class is gone still shows, with its spec values."""
    out = []
    for d in pod_docs:
        try:
            out.append(parse_pod(d, classes))
        except ObjectError:
            with contextlib.suppress(ObjectError):
                out.append(parse_pod(d))
    return out


def pod_rows(pods: list, wide: bool, now: float, pool_label: str = "") -> tuple[list, list]:
    """With sub-clusters (`pool_label`), a POOL column: the pool the pod belongs to (`*`:
    the cluster-wide pool)."""
    header = ["NAMESPACE", "NAME", "STATUS", "NODE", "AGE"] + (["POOL"] if pool_label else [])
    if wide:
        header += ["NOMINATED NODE", "PRIORITY", "CPU", "MEMORY"]
    rows = []
    for p in sorted(pods, key=lambda p: p.key):
        status = "Terminating" if p.deleting else p.phase
        if not p.deleting and (scheduled_condition(p.raw) or {}).get("reason") == SCHEDULING_GATED:
            status = SCHEDULING_GATED  # as kubectl shows it
        row = [p.namespace, p.name, status, p.node_name or "<none>",
               age(p.raw["metadata"].get("creationTimestamp"), now)]
        if pool_label:
            row.append(pool_of(p, pool_label) or "*")
        if wide:
            row += [p.nominated_node or "<none>", str(p.priority),
                    format_amount("cpu", p.requests[CPU]), format_amount("memory", p.requests[MEMORY])]
        rows.append(row)
    return header, rows


def node_status(node) -> str:
    """kubectl's STATUS: the Ready condition (Unknown when absent), then SchedulingDisabled."""
    conditions = (node.raw.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    status = {"True": "Ready", "False": "NotReady"}.get(ready, "Unknown")
    return status + (",SchedulingDisabled" if node.unschedulable else "")


def node_rows(nodes: list, pods: list, wide: bool, now: float, pool_label: str = "") -> tuple[list, list]:
    """Resource columns read requested/allocatable, summed over non-terminal bound pods; with
    sub-clusters (`pool_label`), a POOL column: the node's value of the label."""
    used: dict[str, tuple] = {}
    for p in pods:
        if p.node_name and p.phase not in TERMINAL_PHASES:
            used[p.node_name] = vadd(used[p.node_name], p.requests) if p.node_name in used else p.requests
    header = ["NAME", "STATUS", "CPU", "MEMORY", "PODS", "AGE"] + (["POOL"] if pool_label else [])
    if wide:
        header += ["ZONE", "EXTENDED", "TAINTS"]
    rows = []
    for n in sorted(nodes, key=lambda n: n.name):
        width = max(len(n.allocatable), len(used.get(n.name, ())))
        u, a = padded(used.get(n.name, ()), width), padded(n.allocatable, width)
        cell = [f"{format_amount(resource_name(i), u[i])}/{format_amount(resource_name(i), a[i])}"
                for i in range(width)]
        row = [n.name, node_status(n), cell[0], cell[1], cell[PODS],
               age(n.raw["metadata"].get("creationTimestamp"), now)]
        if pool_label:
            row.append(n.labels.get(pool_label, "<none>"))
        if wide:
            extended = [f"{resource_name(i)}={cell[i]}" for i in range(PODS + 1, width) if a[i] or u[i]]
            row += [n.labels.get("topology.kubernetes.io/zone", "<none>"), ",".join(extended) or "<none>",
                    ",".join(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
                             for t in n.taints) or "<none>"]
        rows.append(row)
    return header, rows


def event_rows(events: list[dict], wide: bool, now: float) -> tuple[list, list]:
    """kubectl's `get events` columns (SUBOBJECT left out: shardsched's events have none),
    oldest last-seen first."""
    def last_seen(ev):
        return (ev.get("series") or {}).get("lastObservedTime") or ev.get("eventTime") or ""

    header = ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT"]
    header += ["SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"] if wide else ["MESSAGE"]
    rows = []
    for ev in sorted(events, key=last_seen):
        ref = ev.get("regarding") or {}
        row = [ev["metadata"].get("namespace", ""), age(last_seen(ev), now), ev.get("type", ""),
               ev.get("reason", ""), f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"]
        if wide:
            source = ", ".join(x for x in (ev.get("reportingController"), ev.get("reportingInstance")) if x)
            row += [source, ev.get("note", ""), age(ev.get("eventTime"), now),
                    str((ev.get("series") or {}).get("count", 1)), ev["metadata"]["name"]]
        else:
            row.append(ev.get("note", ""))
        rows.append(row)
    return header, rows


def _print_list(items: list[dict], output: str, rv: str | None = None) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": rv} if rv else {}, "items": items}
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
                     if output == "json" else yaml.safe_dump(doc, sort_keys=False))


def cmd_get(args) -> int:
    """`get KIND`: a table, or with -o json|yaml a `kind: List` of the stored objects
    unchanged (so `create -f` takes pods, nodes and the storage kinds back)."""
    kind = ALIASES[args.kind]
    if kind == "Event":
        with opened_store(args) as store:
            events = store.list_events()
        if args.output in ("json", "yaml"):
            events.sort(key=lambda ev: (ev["metadata"].get("namespace", ""), ev["metadata"]["name"]))
            _print_list(events, args.output)
            return EXIT_OK
        header, rows = event_rows(events, args.output == "wide", time.time())
        print(table(header, rows) if rows else "No resources found.", file=sys.stdout if rows else sys.stderr)
        return EXIT_OK
    with opened_store(args) as store:
        items, rv = store.list(kind)
        if args.output in ("json", "yaml"):
            items.sort(key=lambda d: object_key(kind, d["metadata"].get("namespace", ""), d["metadata"]["name"]))
            _print_list(items, args.output, rv)
            return EXIT_OK
        wide, now = args.output == "wide", time.time()
        if kind in TABLES:
            header, rows = TABLES[kind](_parse_all(items, parse_object), wide,
                                        lambda d: age(d["metadata"].get("creationTimestamp"), now))
        elif kind in RAW_TABLES:
            header, rows = RAW_TABLES[kind](items, wide, lambda d: age(d["metadata"].get("creationTimestamp"), now))
        elif kind == "Pod":
            header, rows = pod_rows(_parsed_pods(items, stored_classes(store) if wide else None), wide, now,
                                    _pool_label(args))
        elif kind in ("PodGroup", NATIVE_KIND):
            units = {}
            if wide:  # asks the shards (gRPC): loaded only here
                from ..runtime.security import Security
                from ..tools.top import shard_units
                units = shard_units(store, Security.from_config(config_mod.load(args.config).security))
            header, rows = podgroups.rows(items, store.list("Pod")[0], wide, now, units, age)
            if kind == NATIVE_KIND:
                header[header.index("MINMEMBER")] = "MINCOUNT"
        else:
            pods = _parsed_pods(store.list("Pod")[0], None)
            header, rows = node_rows(_parse_all(items, parse_node), pods, wide, now, _pool_label(args))
    if not rows:
        print("No resources found.", file=sys.stderr)
    else:
        print(table(header, rows))
    return EXIT_OK


def _pool_label(args) -> str:
    """The configuration's subClusters.label ("" without --config: no POOL column)."""
    return config_mod.load(args.config).sub_clusters.label if args.config else ""


def _parse_all(docs: list, parse) -> list:
    """Stored objects that parse; another client may have written one we cannot read."""
    out = []
    for d in docs:
        with contextlib.suppress(ObjectError):
            out.append(parse(d))
    return out


# --- verify -------------------------------------------------------------------------------

def cmd_verify(args) -> int:
    """`verify`: common.tools.verify's invariants over the store; every violation on its own line
    (not just the first few, as in the benchmark summary). An object that does not parse
    could hide a violation, so it fails the check too."""
    names = None
    if args.config:
        cfg = config_mod.load(args.config)
        names = {p.scheduler_name for p in cfg.profiles}
        if cfg.dispatcher.also_default_scheduler:
            names.add("default-scheduler")
    with opened_store(args) as store:
        report = verify_store(store, args.settled, names)
    ok = not report["violations"] and not report["unparsable"]
    if args.json:
        keys = ("nodes", "bound", "pending", "violations", "unparsable")
        print(orjson.dumps({"ok": ok, **{k: report[k] for k in keys}}, option=orjson.OPT_INDENT_2).decode())
    else:
        print(summary(report).split("\n", 1)[0])
        for v in report["violations"]:
            print(f"  {v['kind']}: {v['object']}: {v['message']}")
        for e in report["unparsable"]:
            print(f"  unparsable: {e['object']}: {e['field']}: {e['message']}")
    return EXIT_OK if ok else EXIT_REJECTED
