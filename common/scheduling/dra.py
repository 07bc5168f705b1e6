"""Dynamic Resource Allocation's structured allocator, as kube-scheduler v1.37 allocates
(k8s.io/dynamic-resource-allocation/structured), pure: no framework, no store. The shard's
DynamicResources plugin, the binder's device check and the store committer share it.

* Devices come from ResourceSlices of complete pools (every slice of the pool's newest
  generation present) that are usable on the node (nodeName, nodeSelector or allNodes).
* A request takes devices its class's selectors and its own selectors (CEL, over `device`:
  driver, attributes[domain][id], capacity[domain][id]) all accept; ExactCount takes `count`
  of them, All takes every one on the node (and fails if any is taken, or there is none).
* A device is given once: never one already allocated (the claims' allocations, plus the ones
  in flight), never twice among the claims of one pod. adminAccess requests (kube v1.37 has
  DRAAdminAccess on) may take allocated devices and hold none.
* firstAvailable (DRAPrioritizedList, on in v1.37) tries its alternatives in order; the
  result names the one taken "request/alternative".
* matchAttribute constraints: every device of the requests a constraint names (all of the
  claim's when it names none) has the attribute, with one value.
The search backtracks over devices in slice order, as kube's does, so where the choice is
determined the same devices are chosen.

CEL is the common-expression-language package (`cel`: compile ~1 ms, evaluation ~8.5 us per
device against ~134 us for cel-python; see the README), each expression compiled once
(`CelCache`), and each device's verdict on an expression kept with the device.
"""
from __future__ import annotations

import glob
import importlib.util
import os

from ..model.dra import ALL, NODE_NAME_FIELD, node_allocation_selector

def _load_cel():
    """The CEL library's compiled module alone: the package's __init__ also loads its command
    line (typer, rich), which no component process may load (tests/test_layers.py)."""
    package = importlib.util.find_spec("cel")
    if package is None or package.origin is None:
        raise ImportError("DRA's selectors need the common-expression-language package (pyproject.toml)")
    found = glob.glob(os.path.join(os.path.dirname(package.origin), "cel.*.so"))
    if not found:
        raise ImportError(f"no compiled module in {os.path.dirname(package.origin)} (common-expression-language)")
    spec = importlib.util.spec_from_file_location("cel.cel", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cel = _load_cel()

#: kube's messages (structured allocator), the ones a user sees in a pod's Error status.
CLASS_MISSING = "request {request}: device class {cls} does not exist"


class AllocatorError(Exception):
    """Something wrong with a claim or class (a CEL expression that does not compile, fails at
    run time or is not a boolean): kube stops the pod's cycle with an Error, not Unschedulable."""


class CelCache:
    """Each expression compiled once (kube's cel.Cache); compile errors kept too."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self._programs: dict = {}

    def program(self, expression: str):
        got = self._programs.get(expression)
        if got is None:
            try:
                got = cel.compile(expression)
            except ValueError as e:
                got = AllocatorError(f"compilation failed: {e}")
            if len(self._programs) >= self.limit:
                self._programs.clear()
            self._programs[expression] = got
        if isinstance(got, AllocatorError):
            raise got
        return got


def selected(device, expression: str, cache: CelCache) -> bool:
    """Whether `expression` accepts `device`; the verdict is kept with the device (a slice's
    devices are parsed anew when it changes, so the verdict never outlives what it judged)."""
    verdicts = device.verdicts
    got = verdicts.get(expression)
    if got is None:
        try:
            got = cache.program(expression).execute({"device": device.cel})
        except AllocatorError:
            raise
        except KeyError as e:  # an attribute the device lacks, said as cel-go says it
            got = AllocatorError(f"CEL runtime error: no such key: {e.args[0] if e.args else e}")
        except Exception as e:  # a type mismatch, a bad argument: the expression failed
            got = AllocatorError(f"CEL runtime error: {e}")
        if not isinstance(got, (bool, AllocatorError)):
            got = AllocatorError(f"expression must evaluate to a bool, got {type(got).__name__}")
        verdicts[expression] = got
    if isinstance(got, AllocatorError):
        raise got
    return got


class Inventory:
    """The devices of complete pools, by node: node-local slices indexed by node name, the
    others (allNodes, nodeSelector) checked per node."""

    def __init__(self, slices):
        pools: dict = {}
        for s in slices:
            pools.setdefault((s.driver, s.pool), []).append(s)
        self.local: dict = {}
        self.shared: list = []
        for group in pools.values():
            newest = max(s.generation for s in group)
            current = sorted((s for s in group if s.generation == newest), key=lambda s: s.name)
            if len(current) < current[0].slice_count:
                continue  # kube uses no device of an incomplete pool
            for s in current:
                if s.node_name:
                    self.local.setdefault(s.node_name, []).append(s)
                else:
                    self.shared.append(s)
        for lst in self.local.values():
            lst.sort(key=lambda s: (s.driver, s.pool, s.name))

    def slices_on(self, node_name: str, labels: dict) -> list:
        return self.local.get(node_name, []) + [s for s in self.shared if s.available_on(node_name, labels)]


def _candidates(request, classes: dict, slices: list, cache: CelCache, claim_key: str) -> list:
    """(device, slice) pairs the request's class and selectors accept, in slice order."""
    cls = classes.get(request.class_name)
    if cls is None:
        raise AllocatorError(CLASS_MISSING.format(request=request.name, cls=request.class_name))
    key = selector_key(cls, request)  # one verdict per device for the whole set
    exprs = None
    out = []
    for s in slices:
        for d in s.devices:
            ok = d.verdicts.get(key)
            if ok is None:
                if exprs is None:
                    exprs = [(f"class {cls.name}: selector #{i}", e) for i, e in enumerate(cls.selectors)]
                    exprs += [(f"claim {claim_key}: selector #{i}", e) for i, e in enumerate(request.selectors)]
                ok = d.verdicts[key] = _accepts(d, exprs, cache)
            if ok:
                out.append((d, s))
    return out


def selector_key(cls, request) -> tuple:
    """What one verdict per device stands for: the class's and the request's selectors."""
    return (cls.name, cls.selectors, request.selectors)


def matching_by_node(inventory: Inventory, cls, request, cache: CelCache, claim_key: str):
    """Over the node-local slices: ({device id: node} of the devices the class's and the
    request's selectors accept, {node: how many}, {nodes where a selector failed on some
    device}). Verdicts are the allocator's own (kept with each device), so a node counted here
    offers exactly the candidates `allocate` would try there; a failing selector makes the
    node's Filter an Error, as `allocate` raises there."""
    key = selector_key(cls, request)
    exprs = [(f"class {cls.name}: selector #{i}", e) for i, e in enumerate(cls.selectors)]
    exprs += [(f"claim {claim_key}: selector #{i}", e) for i, e in enumerate(request.selectors)]
    node_of: dict = {}
    total: dict = {}
    broken: set = set()
    for node_name, slices in inventory.local.items():
        n = 0
        for s in slices:
            for d in s.devices:
                ok = d.verdicts.get(key)
                if ok is None:
                    try:
                        ok = d.verdicts[key] = _accepts(d, exprs, cache)
                    except AllocatorError:
                        broken.add(node_name)
                        continue
                if ok:
                    node_of[d.id] = node_name
                    n += 1
        total[node_name] = n
    return node_of, total, broken


def _accepts(device, exprs: list, cache: CelCache) -> bool:
    for where, e in exprs:
        try:
            if not selected(device, e, cache):
                return False
        except AllocatorError as err:  # kube's words: "claim ns/name: selector #0: CEL runtime error: ..."
            raise AllocatorError(f"{where}: {err}") from None
    return True


class _Search:
    """One pod's claims on one node: a depth-first search over the devices each request could
    take, undone on failure (kube's allocator backtracks the same way)."""

    def __init__(self, claims, classes, slices, allocated, cache):
        self.claims, self.classes, self.slices, self.allocated, self.cache = claims, classes, slices, allocated, cache
        self.taken: set = set()
        self.results = [[] for _ in claims]
        self.values = [dict() for _ in claims]  # per claim: constraint index -> attribute value
        self._cands: dict = {}

    def candidates(self, ci: int, request) -> list:
        key = (ci, request.name)
        got = self._cands.get(key)
        if got is None:
            got = self._cands[key] = _candidates(request, self.classes, self.slices, self.cache, self.claims[ci].key)
        return got

    def free(self, device, admin: bool) -> bool:
        return admin or (device.id not in self.allocated and device.id not in self.taken)

    def fits_constraints(self, ci: int, request_name: str, device) -> list | None:
        """The constraint values this device sets (to undo), or None when it breaks one."""
        newly = []
        for k, c in enumerate(self.claims[ci].constraints):
            if not c.applies(request_name):
                continue
            value = device.attribute(c.attribute)
            if value is None:
                break
            have = self.values[ci].get(k)
            if have is None:
                self.values[ci][k] = value
                newly.append(k)
            elif have != value:
                break
        else:
            return newly
        for k in newly:
            del self.values[ci][k]
        return None

    def take(self, ci: int, request, device, pool_slice, name: str) -> list | None:
        undo = self.fits_constraints(ci, name, device)
        if undo is None:
            return None
        if not request.admin_access:
            self.taken.add(device.id)
        r = {"request": name, "driver": device.driver, "pool": device.pool, "device": device.name}
        if request.admin_access:
            r["adminAccess"] = True
        self.results[ci].append((r, pool_slice))
        return undo

    def give_back(self, ci: int, request, device, undo: list) -> None:
        self.results[ci].pop()
        if not request.admin_access:
            self.taken.discard(device.id)
        for k in undo:
            del self.values[ci][k]

    def requests(self):
        """(claim index, request) in order."""
        for ci, claim in enumerate(self.claims):
            for r in claim.requests:
                yield ci, r

    def run(self) -> bool:
        return self._request(list(self.requests()), 0)

    def _request(self, todo: list, i: int) -> bool:
        if i == len(todo):
            return True
        ci, request = todo[i]
        for alt in (request.alternatives or (request,)):
            name = alt.name
            if alt.mode == ALL:
                if self._all(ci, alt, name, todo, i):
                    return True
            elif self._count(ci, alt, name, self.candidates(ci, alt), 0, alt.count, todo, i):
                return True
        return False

    def _count(self, ci, request, name, cands, start: int, left: int, todo, i) -> bool:
        if left == 0:
            return self._request(todo, i + 1)
        for j in range(start, len(cands) - left + 1):
            device, s = cands[j]
            if not self.free(device, request.admin_access):
                continue
            undo = self.take(ci, request, device, s, name)
            if undo is None:
                continue
            if self._count(ci, request, name, cands, j + 1, left - 1, todo, i):
                return True
            self.give_back(ci, request, device, undo)
        return False

    def _all(self, ci, request, name, todo, i) -> bool:
        cands = self.candidates(ci, request)
        if not cands or not all(self.free(d, request.admin_access) for d, _ in cands):
            return False
        done = []
        for device, s in cands:
            undo = self.take(ci, request, device, s, name)
            if undo is None:
                break
            done.append((device, undo))
        else:
            if self._request(todo, i + 1):
                return True
        for device, undo in reversed(done):
            self.give_back(ci, request, device, undo)
        return False


def _node_selector(node_name: str, used: list) -> dict | None:
    """Where the allocation can be used: the node of a node-local device, else a selector
    slice's terms, else anywhere (allNodes)."""
    if any(s.node_name for s in used):
        return node_allocation_selector(node_name)
    for s in used:
        if s.node_selector is not None:
            return (s.raw.get("spec") or {}).get("nodeSelector")
    return None


def allocate(claims, node_name: str, labels: dict, inventory: Inventory, classes: dict, allocated,
             cache: CelCache) -> list | None:
    """The allocation (status.allocation documents, one per claim, in order) of `claims` on
    the node, or None when they cannot all be allocated there. `allocated`: the ids of the
    devices already given (allocations in the view plus in flight). Raises AllocatorError for
    a bad claim or class."""
    search = _Search(claims, classes, inventory.slices_on(node_name, labels), allocated, cache)
    if not search.run():
        return None
    out = []
    for results in search.results:
        allocation = {"devices": {"results": [r for r, _ in results]}}
        selector = _node_selector(node_name, [s for _, s in results])
        if selector is not None:
            allocation["nodeSelector"] = selector
        out.append(allocation)
    return out


def with_config(claims, allocations: list, classes: dict) -> list:
    """The allocations as written: each with the opaque configuration kube copies into it
    (left out while filtering, where only the devices matter)."""
    out = []
    for claim, allocation in zip(claims, allocations):
        config = _config(claim, classes)
        out.append({**allocation, "devices": {**allocation["devices"], "config": config}} if config else allocation)
    return out


def _config(claim, classes: dict) -> list:
    """The opaque configuration kube copies into an allocation: the classes' (FromClass),
    then the claim's (FromClaim)."""
    out = []
    names = {r.class_name for r in claim.requests} | {a.class_name for r in claim.requests for a in r.alternatives}
    for name in sorted(n for n in names if n):
        for c in ((classes[name].raw.get("spec") or {}).get("config") or []) if name in classes else ():
            out.append({"source": "FromClass", **c})
    for c in ((claim.raw.get("spec") or {}).get("devices") or {}).get("config") or []:
        out.append({"source": "FromClaim", **c})
    return out


def score(claims, allocations: list) -> int:
    """kube v1.37's DynamicResources Score: for each firstAvailable request, 8 minus the index
    of the alternative taken (0 for claims without alternatives)."""
    total = 0
    for claim, allocation in zip(claims, allocations):
        taken = {r["request"] for r in allocation["devices"]["results"] if "/" in r["request"]}
        for request in claim.requests:
            for i, alt in enumerate(request.alternatives):
                if alt.name in taken:
                    total += 8 - i
    return total


def allocated_devices(allocation: dict) -> list:
    """The (driver, pool, device) ids an allocation document holds exclusively."""
    return [(r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]
            if not r.get("adminAccess")]


def node_pinned(allocation: dict) -> str | None:
    """The node an allocation document's selector names by metadata.name, if it is one."""
    for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or ()):
        for f in term.get("matchFields") or ():
            if f.get("key") == NODE_NAME_FIELD and f.get("operator") == "In" and len(f.get("values") or ()) == 1:
                return f["values"][0]
    return None
