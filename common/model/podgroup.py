"""PodGroups: the gang of scheduler-plugins' coscheduling (`scheduling.x-k8s.io/v1alpha1`),
and kube's own (`scheduling.k8s.io/v1beta1`, GangScheduling; see NativePodGroup).

A PodGroup names how many of its pods must be placed together (`minMember`), what they need
between them at least (`minResources`, checked against what the cluster could free), and how
long its first members may wait for the rest (`scheduleTimeoutSeconds`). Pods join a group
with the label `scheduling.x-k8s.io/pod-group: <name>` in the group's namespace.

Kube v1.37's PodGroup shares the kind's name but not its API group: a pod joins one through
`spec.schedulingGroup.podGroupName`, and its gang policy is `spec.schedulingPolicy.gang.minCount`
(or `basic`: no gang). Both kinds go through the same index, units and group commits; they
are told apart by apiVersion in documents, by store kind (`NATIVE_KIND`) in the stores, and
by key: a native group's key is `scheduling.k8s.io/NS/NAME` (`NATIVE_PREFIX`), a
scheduler-plugins group's `NS/NAME`, so two groups of one name never meet.

What every role shares lives here: the parsed object, which group a pod is in, the index of
groups and their members that each process keeps from its watch (`GroupIndex`), the status
the dispatcher writes back, the rule that never takes a running group below its quorum by
preemption, and the binding intent the binder records on a group while it commits it
(see common/scheduling/group_commit.py).
"""
from __future__ import annotations

import orjson

from ..errors import ObjectError
from .parsing import TERMINAL_PHASES, parse_metadata, parse_resource_list, parse_time, resource_vector_at
from .resources import ZERO, format_amount, resource_name
from .selectors import Field

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
KIND = "PodGroup"
#: kube's own PodGroup (GenericWorkload, beta in v1.37): its API group and version, and the
#: kind the stores file it under (the document's kind is "PodGroup", as kubectl's
#: `podgroups.scheduling.k8s.io` resource names it).
NATIVE_API_GROUP = "scheduling.k8s.io"
NATIVE_API_VERSION = "scheduling.k8s.io/v1beta1"
NATIVE_KIND = "PodGroup.scheduling.k8s.io"
#: What begins a native group's key (see the module doc).
NATIVE_PREFIX = "scheduling.k8s.io/"
#: The gang policies of a native PodGroup.
GANG, BASIC = "gang", "basic"
#: Pods of one group carry this label (scheduler-plugins' coscheduling); the dispatcher keeps
#: them on one shard.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
#: The annotation holding a binder's intent while it commits a group (JSON, see Intent).
INTENT_ANNOTATION = "scheduling.shardsched.io/binding-intent"
#: Phases, as scheduler-plugins' PodGroup controller names them.
PENDING, SCHEDULING, SCHEDULED, RUNNING, FINISHED, FAILED = (
    "Pending", "Scheduling", "Scheduled", "Running", "Finished", "Failed")


def group_key(pod) -> str | None:
    """The key of a parsed pod's group ("namespace/group", or NATIVE_PREFIX + that for kube's
    PodGroup), or None when it is in none. A pod naming a native group through
    spec.schedulingGroup is in that one, whatever its labels say."""
    if pod.scheduling_group:
        return f"{NATIVE_PREFIX}{pod.namespace}/{pod.scheduling_group}"
    name = pod.labels.get(POD_GROUP_LABEL)
    return f"{pod.namespace}/{name}" if name else None


def raw_group_key(obj: dict) -> str | None:
    """The same for a pod dict as a watch delivers it, without parsing it."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    sg = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    native = sg.get("podGroupName") if isinstance(sg, dict) else None
    if native and isinstance(native, str):
        return f"{NATIVE_PREFIX}{meta.get('namespace') or 'default'}/{native}"
    labels = meta.get("labels")
    name = labels.get(POD_GROUP_LABEL) if isinstance(labels, dict) else None
    if not name or not isinstance(name, str):
        return None
    return f"{meta.get('namespace') or 'default'}/{name}"


#: what a stored pod document that may name a pod group holds (its bytes searched)
_GROUP_MARKS = (f'"{POD_GROUP_LABEL}"'.encode(), b'"schedulingGroup"')


def may_name_group(document: bytes) -> bool:
    """Whether a pod's stored JSON may name a pod group (raw_group_key), judged on its bytes:
    False only when it holds neither the group label's name nor spec.schedulingGroup."""
    return _GROUP_MARKS[0] in document or _GROUP_MARKS[1] in document


def is_native(obj: dict) -> bool:
    """Whether a PodGroup document is kube's own (by its apiVersion), not scheduler-plugins'."""
    return str(obj.get("apiVersion") or "").startswith(NATIVE_API_GROUP + "/")


def object_key_of(obj: dict) -> str:
    """"namespace/name" of a PodGroup dict (or any namespaced object), unparsed."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def index_key_of(obj: dict) -> str:
    """The group key (see group_key) of a PodGroup document of either kind, unparsed."""
    key = object_key_of(obj)
    return NATIVE_PREFIX + key if is_native(obj) else key


def store_ref(key: str) -> tuple[str, str]:
    """(store kind, store key) of the PodGroup a group key names."""
    if key.startswith(NATIVE_PREFIX):
        return NATIVE_KIND, key[len(NATIVE_PREFIX):]
    return KIND, key


class PodGroup:
    """scheduler-plugins' PodGroup. `key` is its store key ("namespace/name"); `index_key`
    the key the GroupIndex and the units know it by (the same for this kind)."""

    kind = KIND
    #: always a gang (minMember is at least 1); a native group may be `basic`
    policy = GANG
    __slots__ = ("namespace", "name", "key", "uid", "min_member", "min_resources", "hold", "schedule_timeout",
                 "creation_time", "phase", "intent_json", "resource_version", "raw")

    @property
    def index_key(self) -> str:
        return self.key

    def wait_seconds(self, default: float) -> float:
        """How long members wait at Permit: the group's scheduleTimeoutSeconds when set (and
        not 0), else the plugin's permitWaitingTimeSeconds, as scheduler-plugins decides."""
        return float(self.schedule_timeout) if self.schedule_timeout else float(default)

    def __repr__(self):
        return f"PodGroup({self.key})"


def parse_pod_group(d: dict) -> PodGroup:
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    f = Field(f"PodGroup {meta.get('namespace') or 'default'}/{meta.get('name', '<unnamed>')}")
    meta, ns, name, _ = parse_metadata(d, f, namespaced=True)
    spec = f.at("spec").dict(d.get("spec"))
    status = f.at("status").dict(d.get("status"))
    g = PodGroup()
    g.namespace, g.name, g.key = ns, name, f"{ns}/{name}"
    g.uid = f.at("metadata").get_str(meta, "uid")
    g.min_member = f.at("spec").get_int(spec, "minMember", default=1, minimum=1)
    if g.min_member > 2 ** 31 - 1:
        raise f.at("spec.minMember").error(f"must fit in int32, got {g.min_member}")
    g.schedule_timeout = f.at("spec").get_int(spec, "scheduleTimeoutSeconds", default=None, minimum=0)
    g.creation_time = parse_time(meta.get("creationTimestamp"), f.at("metadata.creationTimestamp"))
    g.phase = f.at("status").get_str(status, "phase")
    annotations = f.at("metadata").get_str_map(meta, "annotations")
    g.intent_json = annotations.get(INTENT_ANNOTATION)
    g.resource_version = str(meta.get("resourceVersion") or "")
    g.raw = d
    # the vector last, once nothing else can fail (common.model.parsing.resource_vector_at says why)
    rf = f.at("spec.minResources")
    g.min_resources, g.hold = (resource_vector_at(parse_resource_list(spec.get("minResources"), rf), rf.at)
                               if spec.get("minResources") else (ZERO, None))
    return g


class NativePodGroup(PodGroup):
    """Kube v1.37's PodGroup (`scheduling.k8s.io/v1beta1`), as its GangScheduling plugin reads
    it: a `gang` policy with `minCount` (min_member), or `basic` (each pod on its own;
    min_member 1). No minResources, no timeout of its own (kube waits 5 minutes at Permit)."""

    kind = NATIVE_KIND
    __slots__ = ("policy",)

    @property
    def index_key(self) -> str:
        return NATIVE_PREFIX + self.key

    def __repr__(self):
        return f"PodGroup.scheduling.k8s.io({self.key})"


def parse_native_pod_group(d: dict) -> NativePodGroup:
    """A `scheduling.k8s.io/v1beta1` PodGroup; the policy is required and exactly one of
    `basic` and `gang`, as the API server validates it."""
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    f = Field(f"PodGroup.scheduling.k8s.io {meta.get('namespace') or 'default'}/{meta.get('name', '<unnamed>')}")
    meta, ns, name, _ = parse_metadata(d, f, namespaced=True)
    spec = f.get_dict(d, "spec", required=True)
    pf = f.at("spec.schedulingPolicy")
    policy = pf.dict(spec.get("schedulingPolicy"))
    chosen = [k for k in (BASIC, GANG) if policy.get(k) is not None]
    if len(chosen) != 1:
        raise pf.error("must specify exactly one of: `basic`, `gang`" if chosen else "must specify one of: `basic`, `gang`")
    g = NativePodGroup()
    g.namespace, g.name, g.key = ns, name, f"{ns}/{name}"
    g.uid = f.at("metadata").get_str(meta, "uid")
    g.policy = chosen[0]
    if g.policy == GANG:
        gang = pf.at(GANG).dict(policy[GANG])
        if gang.get("minCount") is None:
            raise pf.at("gang.minCount").error("is required")
        g.min_member = pf.at(GANG).get_int(gang, "minCount", minimum=1)
        if g.min_member > 2 ** 31 - 1:
            raise pf.at("gang.minCount").error(f"must fit in int32, got {g.min_member}")
    else:
        g.min_member = 1
    g.schedule_timeout = None
    g.min_resources, g.hold = ZERO, None
    g.creation_time = parse_time(meta.get("creationTimestamp"), f.at("metadata.creationTimestamp"))
    g.phase = ""
    g.intent_json = f.at("metadata").get_str_map(meta, "annotations").get(INTENT_ANNOTATION)
    g.resource_version = str(meta.get("resourceVersion") or "")
    g.raw = d
    return g


def parse_any_pod_group(d: dict) -> PodGroup:
    """A PodGroup document of either kind, by its apiVersion."""
    return parse_native_pod_group(d) if is_native(d) else parse_pod_group(d)


def unsatisfiable(min_count: int, scheduled: int, remaining: int) -> str:
    """kube v1.37's verdict on a gang (GangScheduling's PlacementFeasible) once the pods still
    to try cannot make up minCount with those scheduled."""
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


def gave_up(min_count: int, scheduled: int, remaining: int) -> tuple[str, str]:
    """kube v1.37's words on the members of a gang it gave up on (schedule_one_podgroup.go),
    as (placed, untried): a member placed in the cycle gets the group's status (its error,
    `pod group is unschedulable`, GangScheduling's verdict, then what the group's PostFilter
    said), a member the cycle never tried a copy taken before that PostFilter ran. The member
    that failed keeps its filters' words. shardsched has no group preemption: a gang given
    up on is one whose failed member's preemption found nothing, which kube's group
    preemption words as below."""
    untried = f"pod group is unschedulable, {unsatisfiable(min_count, scheduled, remaining)}"
    return f"{untried}, pod group preemption: No preemption victims found for incoming preemptor", untried


def format_resources(v) -> str:
    """A resource vector as scheduler-plugins prints a resource list: map[cpu:4 memory:2Gi]."""
    items = sorted((resource_name(i), format_amount(resource_name(i), x)) for i, x in enumerate(v) if x > 0)
    return "map[" + " ".join(f"{k}:{a}" for k, a in items) + "]"


# --- members -----------------------------------------------------------------------------

class Member:
    """What the index keeps of a pod in a group: enough to count, never the parsed pod."""

    __slots__ = ("key", "group", "node", "phase", "deleting", "gated", "uid")

    def __init__(self, key: str, group: str, obj: dict):
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        self.key, self.group = key, group
        self.uid = meta.get("uid") or ""
        self.node = spec.get("nodeName") or None
        self.phase = status.get("phase") or "Pending"
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.gated = bool(spec.get("schedulingGates"))

    @property
    def live(self) -> bool:
        """Counts towards the group: neither finished nor on its way out."""
        return not self.deleting and self.phase not in TERMINAL_PHASES

    @property
    def placed(self) -> bool:
        """Bound (running or not), or ran to completion: it took its place in the group."""
        return (self.node is not None and not self.deleting) or self.phase in TERMINAL_PHASES


class Counts:
    """A group's members by state."""

    __slots__ = ("total", "live", "bound", "pending", "gated", "running", "succeeded", "failed", "placed")

    def __init__(self, members):
        self.total = self.live = self.bound = self.pending = self.gated = 0
        self.running = self.succeeded = self.failed = self.placed = 0
        for m in members:
            self.total += 1
            self.placed += m.placed
            self.running += m.phase == "Running" and m.node is not None
            self.succeeded += m.phase == "Succeeded"
            self.failed += m.phase == "Failed"
            if not m.live:
                continue
            self.live += 1
            if m.node is not None:
                self.bound += 1
            else:
                self.pending += 1
                self.gated += m.gated


class GroupIndex:
    """The PodGroups and which pods are in each, kept from a watch (not thread-safe).

    Every role keeps one: the shard for its Coscheduling plugin, the binder to judge group
    decisions and victims, the dispatcher to write the groups' status, `verify` to find a
    group left partly placed. Pods are read raw (a label, the node, the phase): cheap enough
    for every event of every pod.
    """

    def __init__(self):
        self.groups: dict[str, PodGroup] = {}
        self.members: dict[str, dict[str, Member]] = {}   # group key -> pod key -> Member
        self.group_of: dict[str, str] = {}                 # pod key -> group key
        self.errors: dict[str, ObjectError] = {}

    def apply_group(self, type_: str, obj: dict) -> PodGroup | None:
        """A PodGroup event (of either kind, by its apiVersion); returns the parsed group
        (None when deleted or invalid)."""
        key = index_key_of(obj)
        if type_ == "DELETED":
            self.groups.pop(key, None)
            return None
        try:
            g = parse_any_pod_group(obj)
        except ObjectError as e:
            self.errors[key] = e
            self.groups.pop(key, None)
            return None
        self.errors.pop(key, None)
        self.groups[key] = g
        return g

    def apply_pod(self, type_: str, key: str, obj: dict) -> str | None:
        """A Pod event (raw); returns the group the pod is (or was) in, if any."""
        old = self.group_of.get(key)
        new = None if type_ == "DELETED" else raw_group_key(obj)
        if old is not None and old != new:
            members = self.members.get(old)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self.members[old]
            del self.group_of[key]
        if new is not None:
            self.members.setdefault(new, {})[key] = Member(key, new, obj)
            self.group_of[key] = new
        return new or old

    def clear(self) -> None:
        """Before a relist: the fresh list brings back whatever still exists."""
        self.groups.clear()
        self.members.clear()
        self.group_of.clear()
        self.errors.clear()

    def get(self, key: str | None) -> PodGroup | None:
        return self.groups.get(key) if key else None

    def counts(self, key: str) -> Counts:
        return Counts(self.members.get(key, {}).values())


# --- status ------------------------------------------------------------------------------

def status_of(group: PodGroup, counts: Counts) -> dict:
    """The status the dispatcher keeps on a PodGroup, by scheduler-plugins' controller rules
    (with its older `scheduled` count and Scheduled phase): Pending until minMember pods
    exist, Scheduling until minMember are bound, Scheduled, Running once minMember run (or
    ran), Failed when a member failed and the rest cannot make up the quorum without it,
    Finished when minMember succeeded."""
    m = group.min_member
    scheduled = counts.bound + counts.succeeded + counts.failed
    if counts.succeeded >= m:
        phase = FINISHED
    elif counts.failed and counts.failed + counts.running + counts.succeeded >= m:
        phase = FAILED
    elif counts.running + counts.succeeded >= m:
        phase = RUNNING
    elif scheduled >= m:
        phase = SCHEDULED
    elif counts.total >= m:
        phase = SCHEDULING
    else:
        phase = PENDING
    return {"phase": phase, "scheduled": scheduled, "running": counts.running,
            "succeeded": counts.succeeded, "failed": counts.failed}


def status_differs(obj: dict, status: dict) -> bool:
    current = obj.get("status") or {}
    return any((current.get(k) or (0 if k != "phase" else "")) != v for k, v in status.items())


# --- preemption never breaks a placed group ----------------------------------------------

def victims_break_group(victims, index: GroupIndex, preemptor_priority: int, priority_of,
                        already: dict | None = None) -> str | None:
    """Why evicting `victims` (parsed bound pods) is not allowed for a preemptor of
    `preemptor_priority`, or None: a victim in a group whose priority (its members' highest,
    `priority_of(member key)` giving None for a member not known) is not below the
    preemptor's, or more victims from one group than it has placed beyond its minMember.
    `already` counts victims per group claimed by other decisions in flight."""
    per_group: dict[str, int] = {}
    for v in victims:
        key = index.group_of.get(v.key)
        if key is None:
            continue
        members = index.members.get(key, {})
        top = max((p for p in (priority_of(k) for k in members) if p is not None), default=v.priority)
        if top >= preemptor_priority:
            return f"{v.key} is in pod group {key}, whose priority {top} is not below the preemptor's"
        per_group[key] = per_group.get(key, 0) + 1
    for key, n in per_group.items():
        group = index.groups.get(key)
        if group is None:
            continue
        spare = index.counts(key).bound - group.min_member - (already or {}).get(key, 0)
        if n > spare:
            return (f"evicting {n} pod(s) of pod group {key} would leave fewer than its minMember "
                    f"{group.min_member} placed")
    return None


# --- the binding intent ------------------------------------------------------------------

class Intent:
    """What a binder is about to bind for one group: written on the PodGroup (annotation
    INTENT_ANNOTATION) before the first binding, removed after the last one, so that
    whichever binder holds the partition next can finish or undo a commit a crash cut short.
    `members` are (pod key, uid, node)."""

    __slots__ = ("members", "partition", "holder")

    def __init__(self, members: list, partition: int, holder: str):
        self.members = [tuple(m) for m in members]
        self.partition = partition
        self.holder = holder

    def encode(self) -> str:
        return orjson.dumps({"members": self.members, "partition": self.partition,
                             "holder": self.holder}).decode()

    @classmethod
    def parse(cls, text: str) -> "Intent":
        """The intent an annotation holds; ValueError when it is not one shardsched wrote."""
        try:
            d = orjson.loads(text)
            members = [(str(k), str(u), str(n)) for k, u, n in d["members"]]
            return cls(members, int(d["partition"]), str(d.get("holder") or ""))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise ValueError("is not a binding intent shardsched wrote") from None

    @classmethod
    def decode(cls, group: PodGroup) -> "Intent | None":
        """The group's intent, or None; ObjectError names the annotation when it is bad."""
        if not group.intent_json:
            return None
        try:
            return cls.parse(group.intent_json)
        except ValueError as e:
            raise Field(f"{group.kind} {group.key}", f"metadata.annotations[{INTENT_ANNOTATION}]").error(str(e)) from None
