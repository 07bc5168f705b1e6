"""`shardsched get` tables of Dynamic Resource Allocation's kinds, with kubectl's columns:

    resourceclaim          NAMESPACE NAME STATE AGE      (STATE: pending, allocated,reserved, ...)
    resourceclaimtemplate  NAMESPACE NAME AGE
    deviceclass            NAME AGE
    resourceslice          NAME NODE DRIVER POOL AGE

`-o wide` adds what the scheduler reads: a claim's devices and the pods it is reserved for,
a slice's device count.
"""
from __future__ import annotations


def _claim_state(c) -> str:
    """kubectl's STATE column of a claim."""
    states = []
    if c.deleting:
        states.append("deleted")
    if c.allocation is not None:
        states.append("allocated")
    if c.reserved_for:
        states.append("reserved")
    return ",".join(states) or "pending"


def claim_rows(claims: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAMESPACE", "NAME", "STATE", "AGE"] + (["DEVICES", "RESERVED FOR"] if wide else [])
    rows = []
    for c in sorted(claims, key=lambda c: c.key):
        row = [c.namespace, c.name, _claim_state(c), age(c.raw)]
        if wide:
            devices = [f"{r['driver']}/{r['pool']}/{r['device']}" for r in (c.allocation.results if c.allocation else ())]
            row += [",".join(devices) or "<none>", ",".join(r[1] for r in c.reserved_for) or "<none>"]
        rows.append(row)
    return header, rows


def template_rows(templates: list, wide: bool, age) -> tuple[list, list]:
    return ["NAMESPACE", "NAME", "AGE"], [[t.namespace, t.name, age(t.raw)] for t in sorted(templates, key=lambda t: t.key)]


def class_rows(classes: list, wide: bool, age) -> tuple[list, list]:
    return ["NAME", "AGE"], [[c.name, age(c.raw)] for c in sorted(classes, key=lambda c: c.name)]


def slice_rows(slices: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAME", "NODE", "DRIVER", "POOL", "AGE"] + (["DEVICES"] if wide else [])
    rows = []
    for s in sorted(slices, key=lambda s: s.name):
        row = [s.name, s.node_name or "<none>", s.driver, s.pool, age(s.raw)]
        if wide:
            row += [str(len(s.devices))]
        rows.append(row)
    return header, rows


#: kind -> its table
TABLES = {"ResourceClaim": claim_rows, "ResourceClaimTemplate": template_rows, "DeviceClass": class_rows,
          "ResourceSlice": slice_rows}
