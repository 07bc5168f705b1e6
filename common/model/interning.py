"""Shared, read-only values for what many pods hold alike.

A cluster's running pods come from a few thousand Deployments, Jobs and StatefulSets: the
pods of one share their labels, annotations, namespace, owner and node names. Every process
keeps every running pod (the shard and binder count them on their nodes), so each parse
hands out one shared object per distinct value instead of a copy per pod:

* `shared_map(d)`: a `FrozenMap` equal to `d` (labels, annotations), the same object for
  equal maps seen recently. It is a dict (plugins, selectors and `==` read it as one) that
  refuses to be changed: a pod's labels are shared, so writing to them would change other
  pods too.
* `shared_refs(refs)`: the tuple of OwnerRefs, the same for the pods of one owner.
* `sys.intern` for short strings repeated across pods (namespaces, node names, phases).

The tables are bounded (cleared when full, as common.model.objects' spec memo is): a cleared
table only means the next pods get new shared objects; what pods already hold stays valid.
"""
from __future__ import annotations

import sys

_MAX = 1 << 16


class FrozenMap(dict):
    """A dict that cannot be changed in place (copies of it can: `dict(m)`, `{**m}`)."""

    __slots__ = ()

    def _frozen(self, *args, **kwargs):
        raise TypeError("a pod's labels and annotations are shared between pods and read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _frozen
    __ior__ = _frozen

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return FrozenMap, (dict(self),)

    def __hash__(self):
        return hash(frozenset(self.items()))


EMPTY_MAP = FrozenMap()

_MAPS: dict = {}
_REFS: dict = {}


def shared_map(d: dict) -> FrozenMap:
    """The shared FrozenMap equal to `d` (a checked str -> str map)."""
    if not d:
        return EMPTY_MAP
    if d.__class__ is FrozenMap:
        return d
    key = tuple(d.items())
    m = _MAPS.get(key)
    if m is None:
        if len(_MAPS) >= _MAX:
            _MAPS.clear()
        m = FrozenMap((sys.intern(k), sys.intern(v) if len(v) <= 64 else v) for k, v in key)
        _MAPS[key] = m
    return m


def shared_refs(refs: tuple, make) -> tuple:
    """The shared tuple of owner references for `refs`, a tuple of (kind, name, uid,
    controller, apiVersion) tuples; `make(*fields)` builds one reference."""
    if not refs:
        return ()
    out = _REFS.get(refs)
    if out is None:
        if len(_REFS) >= _MAX:
            _REFS.clear()
        out = _REFS[refs] = tuple(make(*r) for r in refs)
    return out


def shared_str(s):
    """`s` interned (None and non-strings as they are)."""
    return sys.intern(s) if s.__class__ is str else s
