"""Binding a pod group all or nothing, and finishing a group commit a crash cut short.

A store binds one pod per call (the API server: one `pods/binding` request each), so the
bindings of a group cannot land in one atomic write, and a binder killed between two of them
would leave the group partly bound. So a commit of several members goes in three steps:

1. the *intent* (common.model.podgroup.Intent: every member's pod, uid and node, the partition, the
   binder) is written on the PodGroup as an annotation, guarded by the group's
   resourceVersion, before the first binding; a group that already carries one is refused;
2. the members are bound;
3. the intent is removed. If a member could not be bound (deleted, recreated or bound
   elsewhere since it was checked), the members this commit did bind are deleted first (a
   binding cannot be undone any other way; their controller creates them again), so that
   the group is never left below its quorum by a failed commit.

A crash anywhere in between leaves the intent on the group. Whichever binder holds the
partition next calls `resolve` before it takes any new decision for that partition: members
still pending are bound to the recorded nodes (roll forward), unless one of them can no longer
be (then the members the intent bound are deleted: roll back); then the intent goes. Every
step is idempotent, so a resolve that is itself cut short is simply resolved again.

A single member needs none of this: one binding is atomic.

Failpoints (for the fault tests only): the environment variable SHARDSCHED_FAILPOINTS lists
`name=kill` pairs (comma-separated); at a named point the process kills itself with SIGKILL.
Points: `group-intent-written`, `group-bound-part` (after binding the first half of the
members), `group-bound-all` (before the intent is removed).
"""
from __future__ import annotations

import logging
import os
import signal

from ..errors import Conflict, ObjectError
from ..model.podgroup import INTENT_ANNOTATION, Intent, parse_any_pod_group, store_ref

log = logging.getLogger(__name__)

FAILPOINTS_ENV = "SHARDSCHED_FAILPOINTS"
#: Retries of an intent write that lost a race with another writer of the group (its status).
WRITE_ATTEMPTS = 8


def env_failpoint():
    """The failpoint hook armed by SHARDSCHED_FAILPOINTS, or None when nothing is armed."""
    spec = os.environ.get(FAILPOINTS_ENV, "")
    armed = {name.strip() for name, _, action in (p.partition("=") for p in spec.split(",") if p.strip())
             if action.strip() == "kill"}
    if not armed:
        return None

    def hit(name: str) -> None:
        if name in armed:
            log.warning("failpoint %s: killing this process", name)
            logging.shutdown()
            os.kill(os.getpid(), signal.SIGKILL)

    hit.armed = armed
    return hit


class GroupCommit:
    def __init__(self, store, holder: str = "", failpoint=None):
        """`holder` names the committing binder in its intents; `failpoint(name)`, when given,
        is called at each failpoint (tests pass one that raises; see env_failpoint)."""
        self.store = store
        self.holder = holder
        self.failpoint = failpoint

    def _hit(self, name: str) -> None:
        if self.failpoint is not None:
            self.failpoint(name)

    # --- committing -----------------------------------------------------------------------

    def commit(self, group: str, members: list[tuple[str, str, str]], partition: int = 0) -> list[str | None]:
        """Bind every member (pod key, uid, node) of `group` or none; one result per member:
        None when bound, else why not ("Reason: detail")."""
        if len(members) == 1:
            key, uid, node = members[0]
            return self.store.bind_many([(key, node, uid or None)])
        intent = Intent(members, partition, self.holder)
        refused = self._write_intent(group, intent)
        if refused is not None:
            return [refused] * len(members)
        self._hit("group-intent-written")
        results = self._landed(members, self._bind(members))
        self._hit("group-bound-all")
        if any(r is not None for r in results):
            self._roll_back(members, results)
            results = self._aborted(members, results)
        self._clear_intent(group, intent.encode())
        return results

    def _bind(self, members: list) -> list[str | None]:
        """One bind_many for all, or two when failpoint `group-bound-part` is armed (a test
        hook counts as armed), so that a store binding a batch atomically can still be
        caught half way."""
        armed = getattr(self.failpoint, "armed", None)
        split = self.failpoint is not None and (armed is None or "group-bound-part" in armed)
        cut = len(members) // 2 if split else len(members)
        rows = [(k, n, u or None) for k, u, n in members]
        results = self.store.bind_many(rows[:cut]) if cut else []
        self._hit("group-bound-part")
        if cut < len(rows):
            results += self.store.bind_many(rows[cut:])
        return results

    def _landed(self, members: list, results: list) -> list[str | None]:
        """A member the store says is already bound counts as bound when it is bound where
        this intent puts it: the next holder of the partition, resolving the intent while
        this commit was still under way, bound it first."""
        out = list(results)
        for i, ((key, uid, node), r) in enumerate(zip(members, results)):
            if r == "AlreadyBound":
                obj = self.store.get("Pod", key) or {}
                if (obj.get("spec") or {}).get("nodeName") == node and \
                        (not uid or (obj.get("metadata") or {}).get("uid") == uid):
                    out[i] = None
        return out

    @staticmethod
    def _aborted(members: list, results: list) -> list[str]:
        """Every member refused: the failed ones with their reason, the others naming the
        first member that failed."""
        first = next((k, r) for (k, _, _), r in zip(members, results) if r is not None)
        return [r if r is not None else f"GroupAborted: {first[0]} could not be bound: {first[1]}"
                for r in results]

    def _roll_back(self, members: list, results: list) -> None:
        """Delete the members this commit bound (uid-guarded: a pod recreated meanwhile stays)."""
        bound = [(k, u or None) for (k, u, _), r in zip(members, results) if r is None]
        if bound:
            log.warning("rolling back %d bound member(s) of a failed group commit", len(bound))
            self.store.evict_many(bound, respect_budgets=False)

    # --- the intent on the PodGroup -------------------------------------------------------

    def _write_intent(self, group: str, intent: Intent) -> str | None:
        """None once written, else why the group cannot be committed now."""
        for _ in range(WRITE_ATTEMPTS):
            obj = self.store.get(*store_ref(group))
            if obj is None:
                return f"PodGroupNotFound: PodGroup {group} does not exist"
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if annotations.get(INTENT_ANNOTATION):
                return f"InFlight: PodGroup {group} has a group commit in progress"
            obj["metadata"]["annotations"] = {**annotations, INTENT_ANNOTATION: intent.encode()}
            try:
                self.store.update(obj)
                return None
            except Conflict as e:
                if e.reason == "NotFound":
                    return f"PodGroupNotFound: PodGroup {group} does not exist"
                if e.reason != "ResourceVersionMismatch":
                    raise
        return f"StoreError: PodGroup {group} kept changing while its intent was written"

    def _clear_intent(self, group: str, expected: str | None = None) -> None:
        """Remove the intent (only `expected`, the encoded intent, when given)."""
        for _ in range(WRITE_ATTEMPTS):
            obj = self.store.get(*store_ref(group))
            if obj is None:
                return
            annotations = dict((obj.get("metadata") or {}).get("annotations") or {})
            current = annotations.pop(INTENT_ANNOTATION, None)
            if current is None or (expected is not None and current != expected):
                return
            obj["metadata"]["annotations"] = annotations
            try:
                self.store.update(obj)
                return
            except Conflict as e:
                if e.reason == "NotFound":
                    return
                if e.reason != "ResourceVersionMismatch":
                    raise
        raise Conflict(f"ResourceVersionMismatch: PodGroup {group} kept changing while its intent was removed")

    # --- resolving what a crash left -------------------------------------------------------

    def resolve(self, group: str, admit=None) -> str:
        """Finish the commit recorded on `group`: "none" (no intent), "forward" (every member
        bound) or "back" (the intent's bound members deleted). `admit(pending)`, when given,
        may refuse the roll forward of the still-pending members [(key, uid, node)] (the
        binder re-checks them against its view); it returns None to go ahead, else a reason."""
        obj = self.store.get(*store_ref(group))
        if obj is None:
            return "none"
        try:
            pg = parse_any_pod_group(obj)
            intent = Intent.decode(pg)
        except ObjectError as e:
            log.error("dropping an unreadable binding intent: %s", e)
            self._clear_intent(group)
            return "none"
        if intent is None:
            return "none"
        pending, lost = self._member_states(intent)
        why = lost
        if why is None and pending and admit is not None:
            why = admit(pending)
        if why is None and pending:
            results = self.store.bind_many([(k, n, u or None) for k, u, n in pending])
            why = next((f"{k}: {r}" for (k, _, _), r in zip(pending, results) if r is not None), None)
        outcome = "forward"
        if why is not None:
            log.warning("rolling back the group commit of %s: %s", group, why)
            self._delete_bound(intent)
            outcome = "back"
        self._clear_intent(group, pg.intent_json)
        log.info("resolved the binding intent of %s left by %s: rolled %s", group, intent.holder or "?", outcome)
        return outcome

    def _member_states(self, intent: Intent) -> tuple[list, str | None]:
        """(members still pending, why the intent can no longer be carried out or None)."""
        pending = []
        for key, uid, node in intent.members:
            obj = self.store.get("Pod", key)
            if obj is None or (uid and (obj.get("metadata") or {}).get("uid") != uid):
                return pending, f"{key} is gone"
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                return pending, f"{key} is being deleted"
            bound_to = (obj.get("spec") or {}).get("nodeName")
            if bound_to and bound_to != node:
                return pending, f"{key} is bound to {bound_to}, not {node}"
            if not bound_to:
                pending.append((key, uid, node))
        return pending, None

    def _delete_bound(self, intent: Intent) -> None:
        """Delete the intent's members bound where it put them (uid-guarded)."""
        doomed = []
        for key, uid, node in intent.members:
            obj = self.store.get("Pod", key)
            if obj is not None and (obj.get("spec") or {}).get("nodeName") == node and \
                    (not uid or (obj.get("metadata") or {}).get("uid") == uid):
                doomed.append((key, uid or None))
        if doomed:
            self.store.evict_many(doomed, respect_budgets=False)
