"""What the parsers of the object model share (common/model/objects.py, common/model/podgroup.py): an
object's metadata, timestamps, resource lists and their vectors, and the pod phases that hold
nothing. It sits below both, so each imports it and neither imports the other's internals.
"""
from __future__ import annotations

from datetime import datetime

from .resources import TooManyResources, parse_amount, resource_vector
from .selectors import Field

#: Phases of pods that hold nothing on their node any more.
TERMINAL_PHASES = ("Succeeded", "Failed")


_TIMES: dict = {}


def parse_time(value, f: Field) -> float:
    """RFC 3339 timestamp to epoch seconds (0.0 when absent). Pods created together share
    their timestamps (to the second): a recent one is parsed once and its float shared."""
    if not value:
        return 0.0
    if value.__class__ is str:
        t = _TIMES.get(value)
        if t is not None:
            return t
    if isinstance(value, datetime):  # PyYAML turns unquoted timestamps into datetimes
        return value.timestamp()
    try:
        t = datetime.fromisoformat(f.str(value)).timestamp()
    except ValueError:
        raise f.error(f"invalid timestamp {value!r}") from None
    if len(_TIMES) >= 4096:
        _TIMES.clear()
    _TIMES[value] = t
    return t


def cached_time(value) -> float | None:
    """parse_time for a reader without a Field (common.model.objects' lean pod): the epoch
    seconds of an RFC 3339 string (0.0 when absent), None when parse_time would refuse it."""
    if not value:
        return 0.0
    t = _TIMES.get(value) if value.__class__ is str else None
    if t is not None or value.__class__ is not str:
        return t
    try:
        t = datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
    if len(_TIMES) >= 4096:
        _TIMES.clear()
    _TIMES[value] = t
    return t


def object_field(d, kind: str, namespaced: bool) -> Field:
    """The Field naming an object in errors ("Kind ns/name" or "Kind name"), read leniently:
    the checks of its metadata come after it and name it with this."""
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    return Field(f"{kind} {meta.get('namespace') or 'default'}/{name}" if namespaced else f"{kind} {name}")


def parse_metadata(d: dict, f: Field, namespaced: bool):
    """(metadata, namespace ("" for a cluster-scoped kind), name, labels), checked."""
    meta = f.get_dict(d, "metadata", required=True)
    mf = f.at("metadata")
    name = mf.get_str(meta, "name", required=True)
    ns = mf.get_str(meta, "namespace", default="default") if namespaced else ""
    labels = mf.get_str_map(meta, "labels")
    return meta, ns, name, labels


def parse_resource_list(value, f: Field, allow_negative: bool = False) -> dict[str, int]:
    """{"cpu": "100m", ...} -> {"cpu": 100, ...} in integer units; rejects junk and negatives."""
    out = {}
    for name, raw in f.dict(value).items():
        try:
            amount, negative = parse_amount(name, raw)
        except ValueError as e:
            raise f.at(name).error(str(e)) from None
        if negative and not allow_negative:
            raise f.at(name).error(f"must not be negative, got {raw!r}")
        out[name] = amount
    return out


def resource_vector_at(amounts: dict[str, int], field_of) -> tuple:
    """(vector, its SlotHold or None) of `amounts`; `field_of(name)` is the Field to blame
    when the resource table is full. Zero extended amounts (hugepages-2Mi: 0) take no slot.

    Parsers build the vector last, once nothing else can fail: an error's traceback keeps the
    parser's locals, and with them the hold, alive for as long as the error is kept."""
    try:
        return resource_vector(amounts)
    except TooManyResources as e:
        raise field_of(e.name).error(str(e)) from None
