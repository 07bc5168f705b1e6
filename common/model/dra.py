"""Dynamic Resource Allocation's kinds (resource.k8s.io/v1, the version kube v1.37 serves):
ResourceClaim, ResourceClaimTemplate, DeviceClass and ResourceSlice, parsed lean.

Kept is what the allocator (common/scheduling/dra.py), the DynamicResources plugin, the
binder's device check and the claim controller read: requests with their classes, selectors
(CEL expression text; compiled once, by the allocator), allocation modes, counts, admin
access and prioritized alternatives (firstAvailable), matchAttribute constraints, a claim's
allocation and reservedFor, a slice's pool, node and devices with their attributes as CEL
sees them (`device.attributes[domain][id]`, unqualified names in the driver's domain).
What the API server would default is read as its default (mode ExactCount, count 1).
"""
from __future__ import annotations

from .parsing import object_field, parse_metadata
from .resources import parse_amount
from .selectors import Field, parse_node_selector_term

API_VERSION = "resource.k8s.io/v1"
#: kube's ResourceClaimReservedForMaxSize: at most this many consumers share one claim.
RESERVED_FOR_MAX = 256
#: kube's FirstAvailableDeviceRequestMaxSize (scores the alternative taken).
FIRST_AVAILABLE_MAX = 8
EXACT_COUNT, ALL = "ExactCount", "All"
#: Device attribute value fields (v1 DeviceAttribute): exactly one is set.
_ATTRIBUTE_TYPES = ("int", "bool", "string", "version")
#: The node field an allocation's node selector names a node-local device's node by.
NODE_NAME_FIELD = "metadata.name"


def _object(d, kind: str, namespaced: bool):
    f = object_field(d, kind, namespaced)
    meta, ns, name, labels = parse_metadata(d, f, namespaced)
    return f, meta, ns, name, labels


def _identity(obj, meta: dict, d: dict) -> None:
    obj.uid = meta.get("uid") or ""
    obj.resource_version = str(meta.get("resourceVersion") or "")
    obj.deleting = bool(meta.get("deletionTimestamp"))
    obj.raw = d


def _selectors(value: dict, f: Field) -> tuple:
    """The CEL expressions of `selectors` ([{cel: {expression}}]); other selector kinds are
    refused, as the API server refuses them."""
    out = []
    for i, s in enumerate(f.get_list(value, "selectors")):
        sf = f.at("selectors").at(i)
        cel = sf.get_dict(sf.dict(s), "cel", required=True)
        out.append(sf.at("cel").get_str(cel, "expression", required=True))
    return tuple(out)


# --- DeviceClass -------------------------------------------------------------------------------

class DeviceClass:
    kind = "DeviceClass"
    __slots__ = ("name", "key", "uid", "selectors", "resource_version", "deleting", "raw")

    def __repr__(self):
        return f"DeviceClass({self.name})"


def parse_device_class(d: dict) -> DeviceClass:
    f, meta, _, name, _ = _object(d, "DeviceClass", False)
    c = DeviceClass()
    c.name = c.key = name
    _identity(c, meta, d)
    spec = f.get_dict(d, "spec")
    c.selectors = _selectors(spec, f.at("spec"))
    return c


# --- ResourceSlice -----------------------------------------------------------------------------

class Device:
    """One device of a slice. `cel` is what a CEL selector sees as `device`; `verdicts` the
    selectors' verdicts on it (common/scheduling/dra.py)."""
    __slots__ = ("name", "driver", "pool", "attributes", "capacity", "cel", "verdicts")

    @property
    def id(self) -> tuple:
        """(driver, pool, device): how allocations name it (kube's DeviceID)."""
        return (self.driver, self.pool, self.name)

    def attribute(self, qualified: str):
        """The value of a fully qualified attribute ("domain/id"), or None."""
        domain, _, ident = qualified.rpartition("/")
        return self.attributes.get(domain or self.driver, {}).get(ident)

    def __repr__(self):
        return f"Device({self.driver}/{self.pool}/{self.name})"


def _attributes(value, f: Field, driver: str) -> dict:
    """{domain: {id: value}}; an unqualified name is in the driver's domain."""
    out: dict = {}
    for qualified, v in f.dict(value).items():
        af = f.at(qualified)
        v = af.dict(v)
        set_ = [t for t in _ATTRIBUTE_TYPES if t in v]
        if len(set_) != 1:
            raise af.error(f"must have exactly one of {', '.join(_ATTRIBUTE_TYPES)}")
        kind = set_[0]
        raw = v[kind]
        if kind == "int":
            raw = af.at("int").int(raw)
        elif kind == "bool":
            if not isinstance(raw, bool):
                raise af.at("bool").error(f"must be a boolean, got {raw!r}")
        else:
            raw = af.at(kind).str(raw, required=True)
        domain, _, ident = qualified.rpartition("/")
        out.setdefault(domain or driver, {})[ident] = raw
    return out


def _capacity(value, f: Field, driver: str) -> dict:
    """{domain: {id: integer amount}} (a quantity's value in its base unit)."""
    out: dict = {}
    for qualified, v in f.dict(value).items():
        cf = f.at(qualified)
        v = cf.dict(v)
        try:
            amount, negative = parse_amount("storage", v.get("value"))
        except (ValueError, TypeError) as e:
            raise cf.at("value").error(str(e)) from None
        if negative:
            raise cf.at("value").error(f"must not be negative, got {v.get('value')!r}")
        domain, _, ident = qualified.rpartition("/")
        out.setdefault(domain or driver, {})[ident] = amount
    return out


class ResourceSlice:
    kind = "ResourceSlice"
    __slots__ = ("name", "key", "uid", "driver", "pool", "generation", "slice_count", "node_name",
                 "all_nodes", "node_selector", "devices", "resource_version", "deleting", "raw")

    def available_on(self, node_name: str, labels: dict) -> bool:
        """Whether the slice's devices can be used on that node."""
        if self.node_name:
            return self.node_name == node_name
        if self.all_nodes:
            return True
        return self.node_selector is not None and any(t.matches(labels, node_name) for t in self.node_selector)

    def __repr__(self):
        return f"ResourceSlice({self.name})"


def parse_resource_slice(d: dict) -> ResourceSlice:
    f, meta, _, name, _ = _object(d, "ResourceSlice", False)
    s = ResourceSlice()
    s.name = s.key = name
    _identity(s, meta, d)
    spec = f.get_dict(d, "spec", required=True)
    sf = f.at("spec")
    s.driver = sf.get_str(spec, "driver", required=True)
    pool = sf.get_dict(spec, "pool", required=True)
    pf = sf.at("pool")
    s.pool = pf.get_str(pool, "name", required=True)
    s.generation = pf.get_int(pool, "generation", default=0, minimum=0)
    s.slice_count = pf.get_int(pool, "resourceSliceCount", default=1, minimum=1)
    s.node_name = sf.get_str(spec, "nodeName")
    s.all_nodes = bool(spec.get("allNodes"))
    terms = None
    if spec.get("nodeSelector") is not None:
        nf = sf.at("nodeSelector")
        terms = tuple(parse_node_selector_term(t, nf.at("nodeSelectorTerms").at(i))
                      for i, t in enumerate(nf.get_list(nf.dict(spec["nodeSelector"]), "nodeSelectorTerms")))
    s.node_selector = terms
    if sum((bool(s.node_name), s.all_nodes, terms is not None, bool(spec.get("perDeviceNodeSelection")))) != 1:
        raise sf.error("exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is required")
    if spec.get("perDeviceNodeSelection"):
        raise sf.at("perDeviceNodeSelection").error("is not supported by shardsched")
    devices = []
    for i, raw in enumerate(sf.get_list(spec, "devices")):
        df = sf.at("devices").at(i)
        raw = df.dict(raw)
        dev = Device()
        dev.name = df.get_str(raw, "name", required=True)
        dev.driver, dev.pool = s.driver, s.pool
        dev.attributes = _attributes(raw.get("attributes") or {}, df.at("attributes"), s.driver)
        dev.capacity = _capacity(raw.get("capacity") or {}, df.at("capacity"), s.driver)
        dev.cel = {"driver": s.driver, "attributes": dev.attributes, "capacity": dev.capacity,
                   "allowMultipleAllocations": False}
        dev.verdicts = {}
        devices.append(dev)
    s.devices = tuple(devices)
    return s


# --- requests, claims and templates ------------------------------------------------------------

class Request:
    """A device request (spec.devices.requests[i], its `exactly` read in), or one alternative
    of a request's firstAvailable, named "request/subrequest" as allocations name it."""
    __slots__ = ("name", "class_name", "selectors", "mode", "count", "admin_access", "alternatives")

    def __repr__(self):
        return f"Request({self.name})"


def _exact(value: dict, f: Field, name: str) -> Request:
    r = Request()
    r.name = name
    r.class_name = f.get_str(value, "deviceClassName", required=True)
    r.selectors = _selectors(value, f)
    r.mode = f.get_str(value, "allocationMode", default=EXACT_COUNT)
    if r.mode not in (EXACT_COUNT, ALL):
        raise f.at("allocationMode").error(f"must be {EXACT_COUNT} or {ALL}, got {r.mode!r}")
    r.count = f.get_int(value, "count", default=1, minimum=1)
    if r.mode == ALL and value.get("count") is not None:
        raise f.at("count").error(f"must not be set when allocationMode is {ALL}")
    r.admin_access = bool(value.get("adminAccess"))
    r.alternatives = ()
    return r


def _request(value, f: Field) -> Request:
    value = f.dict(value)
    name = f.get_str(value, "name", required=True)
    exactly, first = value.get("exactly"), value.get("firstAvailable")
    if (exactly is None) == (not first):
        raise f.error("exactly one of exactly, firstAvailable is required")
    if exactly is not None:
        return _exact(f.at("exactly").dict(exactly), f.at("exactly"), name)
    r = Request()
    r.name, r.class_name, r.selectors, r.mode, r.count, r.admin_access = name, "", (), EXACT_COUNT, 0, False
    alts = []
    ff = f.at("firstAvailable")
    if len(f.get_list(value, "firstAvailable")) > FIRST_AVAILABLE_MAX:
        raise ff.error(f"must have at most {FIRST_AVAILABLE_MAX} items")
    for i, sub in enumerate(f.get_list(value, "firstAvailable")):
        sub = ff.at(i).dict(sub)
        alts.append(_exact(sub, ff.at(i), f"{name}/{ff.at(i).get_str(sub, 'name', required=True)}"))
    r.alternatives = tuple(alts)
    return r


class Constraint:
    """matchAttribute over `requests` (empty: all of the claim's requests)."""
    __slots__ = ("requests", "attribute")

    def applies(self, request_name: str) -> bool:
        base = request_name.partition("/")[0]
        return not self.requests or request_name in self.requests or base in self.requests


def _claim_spec(spec: dict, f: Field) -> tuple[tuple, tuple]:
    devices = f.get_dict(spec, "devices")
    df = f.at("devices")
    requests = tuple(_request(r, df.at("requests").at(i)) for i, r in enumerate(df.get_list(devices, "requests")))
    names = {r.name for r in requests}
    constraints = []
    for i, c in enumerate(df.get_list(devices, "constraints")):
        cf = df.at("constraints").at(i)
        c = cf.dict(c)
        k = Constraint()
        k.attribute = cf.get_str(c, "matchAttribute", required=True)
        if "/" not in k.attribute:
            raise cf.at("matchAttribute").error(f"must be a fully qualified name (domain/id), got {k.attribute!r}")
        k.requests = tuple(cf.at("requests").at(j).str(r, required=True) for j, r in enumerate(cf.get_list(c, "requests")))
        for j, r in enumerate(k.requests):
            if r.partition("/")[0] not in names:
                raise cf.at("requests").at(j).error(f"must name a request of the claim, got {r!r}")
        constraints.append(k)
    return requests, tuple(constraints)


class Allocation:
    """A claim's status.allocation: its device results and the nodes it is usable on."""
    __slots__ = ("results", "node_selector", "raw")

    def devices(self) -> list:
        """The (driver, pool, device) ids it holds exclusively (admin access holds none)."""
        return [(r["driver"], r["pool"], r["device"]) for r in self.results if not r.get("adminAccess")]

    def allows(self, node_name: str, labels: dict) -> bool:
        return self.node_selector is None or any(t.matches(labels, node_name) for t in self.node_selector)


def parse_allocation(value, f: Field) -> Allocation:
    a = Allocation()
    value = f.dict(value)
    devices = f.get_dict(value, "devices")
    results = []
    for i, r in enumerate(f.at("devices").get_list(devices, "results")):
        rf = f.at("devices").at("results").at(i)
        r = rf.dict(r)
        for key in ("request", "driver", "pool", "device"):
            rf.get_str(r, key, required=True)
        results.append(r)
    a.results = tuple(results)
    a.node_selector = None
    if value.get("nodeSelector") is not None:
        nf = f.at("nodeSelector")
        a.node_selector = tuple(parse_node_selector_term(t, nf.at("nodeSelectorTerms").at(i))
                                for i, t in enumerate(nf.get_list(nf.dict(value["nodeSelector"]), "nodeSelectorTerms")))
    a.raw = value
    return a


def node_allocation_selector(node_name: str) -> dict:
    """The nodeSelector of an allocation of node-local devices (as kube writes it)."""
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": NODE_NAME_FIELD, "operator": "In", "values": [node_name]}]}]}


class ResourceClaim:
    kind = "ResourceClaim"
    __slots__ = ("namespace", "name", "key", "uid", "annotations", "owner", "requests", "constraints",
                 "allocation", "reserved_for", "resource_version", "deleting", "raw")

    def reserved_for_pod(self, uid: str) -> bool:
        return any(r[2] == uid for r in self.reserved_for)

    def can_be_reserved(self) -> bool:
        """kube's CanBeReserved: room for one more consumer."""
        return len(self.reserved_for) < RESERVED_FOR_MAX

    def __repr__(self):
        return f"ResourceClaim({self.key})"


def parse_resource_claim(d: dict) -> ResourceClaim:
    f, meta, ns, name, _ = _object(d, "ResourceClaim", True)
    c = ResourceClaim()
    c.namespace, c.name, c.key = ns, name, f"{ns}/{name}"
    _identity(c, meta, d)
    mf = f.at("metadata")
    c.annotations = mf.get_str_map(meta, "annotations")
    c.owner = None
    for i, r in enumerate(mf.get_list(meta, "ownerReferences")):
        r = mf.at("ownerReferences").at(i).dict(r)
        if r.get("controller"):
            c.owner = (r.get("kind"), r.get("name"), r.get("uid"))
    c.requests, c.constraints = _claim_spec(f.get_dict(d, "spec"), f.at("spec"))
    status = f.get_dict(d, "status")
    stf = f.at("status")
    c.allocation = parse_allocation(status["allocation"], stf.at("allocation")) if status.get("allocation") else None
    reserved = []
    for i, r in enumerate(stf.get_list(status, "reservedFor")):
        rf = stf.at("reservedFor").at(i)
        r = rf.dict(r)
        reserved.append((rf.get_str(r, "resource", required=True), rf.get_str(r, "name", required=True),
                         rf.get_str(r, "uid", required=True)))
    c.reserved_for = tuple(reserved)
    return c


class ResourceClaimTemplate:
    kind = "ResourceClaimTemplate"
    __slots__ = ("namespace", "name", "key", "uid", "spec", "labels", "annotations", "resource_version",
                 "deleting", "raw")

    def __repr__(self):
        return f"ResourceClaimTemplate({self.key})"


def parse_resource_claim_template(d: dict) -> ResourceClaimTemplate:
    f, meta, ns, name, _ = _object(d, "ResourceClaimTemplate", True)
    t = ResourceClaimTemplate()
    t.namespace, t.name, t.key = ns, name, f"{ns}/{name}"
    _identity(t, meta, d)
    spec = f.get_dict(d, "spec", required=True)
    sf = f.at("spec")
    tmeta = sf.get_dict(spec, "metadata")
    t.labels = sf.at("metadata").get_str_map(tmeta, "labels")
    t.annotations = sf.at("metadata").get_str_map(tmeta, "annotations")
    t.spec = sf.get_dict(spec, "spec", required=True)
    _claim_spec(t.spec, sf.at("spec"))  # checked here: a claim made from it must parse
    return t


# --- a pod's claims ----------------------------------------------------------------------------

class PodClaim:
    """One entry of a pod's spec.resourceClaims: its name and exactly one of the claim it names
    or the template a claim is made from for it."""
    __slots__ = ("name", "claim_name", "template_name")

    def __eq__(self, other):
        return isinstance(other, PodClaim) and (self.name, self.claim_name, self.template_name) == (
            other.name, other.claim_name, other.template_name)

    def __hash__(self):
        return hash((self.name, self.claim_name, self.template_name))


def parse_pod_claims(spec: dict, sf: Field) -> tuple:
    out = []
    for i, c in enumerate(sf.get_list(spec, "resourceClaims")):
        cf = sf.at("resourceClaims").at(i)
        c = cf.dict(c)
        pc = PodClaim()
        pc.name = cf.get_str(c, "name", required=True)
        pc.claim_name = cf.get_str(c, "resourceClaimName")
        pc.template_name = cf.get_str(c, "resourceClaimTemplateName")
        if bool(pc.claim_name) == bool(pc.template_name):
            raise cf.error("exactly one of resourceClaimName, resourceClaimTemplateName is required")
        out.append(pc)
    return tuple(out)


def parse_claim_statuses(status: dict, f: Field) -> dict:
    """pod.status.resourceClaimStatuses: pod claim name -> generated claim name (None: the
    controller decided no claim is needed)."""
    out = {}
    for i, s in enumerate(f.get_list(status, "resourceClaimStatuses")):
        sf = f.at("resourceClaimStatuses").at(i)
        s = sf.dict(s)
        out[sf.get_str(s, "name", required=True)] = s.get("resourceClaimName") or None
    return out

