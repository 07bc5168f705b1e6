"""`shardsched get` tables of the kinds the scheduler reads only a little of, with kubectl's
columns (abridged), from the stored objects as they are (their parse keeps only what the
scheduler reads):

    ns       NAME STATUS AGE                                 (-o wide: LABELS)
    svc      NAMESPACE NAME TYPE CLUSTER-IP PORT(S) AGE      (-o wide: SELECTOR)
    rs, rc   NAMESPACE NAME DESIRED CURRENT READY AGE        (-o wide: SELECTOR)
    sts      NAMESPACE NAME READY AGE                        (-o wide: SELECTOR)
"""
from __future__ import annotations


def _labels(m: dict | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((m or {}).items())) or "<none>"


def _selector(sel) -> str:
    """A map (Service, ReplicationController) or a LabelSelector, as kubectl prints it."""
    if not isinstance(sel, dict):
        return "<none>"
    if "matchLabels" not in sel and "matchExpressions" not in sel:
        return _labels(sel)
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        values = ",".join(e.get("values") or [])
        parts.append(f"{e.get('key')} {e.get('operator', '').lower()} ({values})" if values
                     else f"{'!' if e.get('operator') == 'DoesNotExist' else ''}{e.get('key')}")
    return ",".join(parts) or "<none>"


def _ns_name(d: dict) -> tuple[str, str]:
    return d["metadata"].get("namespace") or "default", d["metadata"]["name"]


def namespace_rows(items: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAME", "STATUS", "AGE"] + (["LABELS"] if wide else [])
    rows = []
    for d in sorted(items, key=lambda d: d["metadata"]["name"]):
        meta = d["metadata"]
        status = (d.get("status") or {}).get("phase") or ("Terminating" if meta.get("deletionTimestamp") else "Active")
        rows.append([meta["name"], status, age(d)] + ([_labels(meta.get("labels"))] if wide else []))
    return header, rows


def service_rows(items: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "PORT(S)", "AGE"] + (["SELECTOR"] if wide else [])
    rows = []
    for d in sorted(items, key=_ns_name):
        spec = d.get("spec") or {}
        ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []) or "<none>"
        row = [*_ns_name(d), spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>", ports, age(d)]
        rows.append(row + ([_selector(spec.get("selector"))] if wide else []))
    return header, rows


def replica_rows(items: list, wide: bool, age) -> tuple[list, list]:
    """ReplicaSets and ReplicationControllers."""
    header = ["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "AGE"] + (["SELECTOR"] if wide else [])
    rows = []
    for d in sorted(items, key=_ns_name):
        spec, status = d.get("spec") or {}, d.get("status") or {}
        row = [*_ns_name(d), str(spec.get("replicas", 1)), str(status.get("replicas", 0)),
               str(status.get("readyReplicas", 0)), age(d)]
        rows.append(row + ([_selector(spec.get("selector"))] if wide else []))
    return header, rows


def stateful_set_rows(items: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAMESPACE", "NAME", "READY", "AGE"] + (["SELECTOR"] if wide else [])
    rows = []
    for d in sorted(items, key=_ns_name):
        spec, status = d.get("spec") or {}, d.get("status") or {}
        row = [*_ns_name(d), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", age(d)]
        rows.append(row + ([_selector(spec.get("selector"))] if wide else []))
    return header, rows


#: kind -> its table, over the stored objects
RAW_TABLES = {"Namespace": namespace_rows, "Service": service_rows, "ReplicaSet": replica_rows,
              "ReplicationController": replica_rows, "StatefulSet": stateful_set_rows}
