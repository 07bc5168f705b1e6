"""The CPU of one watch poll on kube://, against the poll before it, on a real API server.

    python -m benchmarks.kube_read [--reads 2000] [--repeats 3] [--json FILE]

Every process's loop polls its store after each wake (a shard about 130 times a second in a
200 pods/s stream, each poll over the nineteen kinds it follows), and most polls find one or
two events, or none. One control plane of benchmarks/kube_cluster.py (`make kube-bins` builds
it) with a small kwok fleet; two readers follow every kind from the same start, each with its
own watches, as an informer does (`read` with its positions per kind):

- `optimised`: KubeStore's read as it is (the kinds checked once; one pass over them that
  looks only at what it must);
- `baseline`: the read before it, reproduced here (`PreviousReadStore`: each poll sorted and
  checked the kinds, built its positions, the writes to wait for and every kind's watch and
  bisect in separate passes, and merged even a single kind's events).

Two cases, alternating which reader goes first in each repeat: `empty` (`--reads` polls with
nothing new) and `one_event` (a pod's label changed, then each reader polls once its watch
has the event: `--reads` / 10 times). Measured: the reading thread's CPU per poll. Both
readers must return the same events (asserted). Prints medians over the repeats and their
ratios (optimised / baseline); `--json` writes them.
"""
from __future__ import annotations

import argparse
import bisect
import heapq
import json
import os
import statistics
import time

from common.store.base import KINDS, check_kind
from common.store import kube_store
from common.store.kube_store import KubeStore, _rv_int

from . import harness, kube_start

NAMESPACE = "reads"


class PreviousReadStore(KubeStore):
    """KubeStore with its read as it was before (see the module's docstring)."""

    def _read(self, since_rv, timeout, max_events, kinds, positions=None):
        wanted = sorted(kinds) if kinds is not None else list(KINDS)
        for k in wanted:
            check_kind(k)
        since = str(since_rv)
        deadline = time.monotonic() + timeout
        catch_up = time.monotonic() + self.timeout
        with self._cond:
            known = ({k: _rv_int(v) for k, v in positions.items()} if positions
                     else self._cursors.get(since))
            base = _rv_int(since)
            pos = {k: (known or {}).get(k, base) for k in wanted}
            with kube_store._WRITTEN_LOCK:
                written = {k: kube_store._WRITTEN.get(k, 0) for k in wanted}
            answered = self._answers
            while True:
                watches = {k: self._watch(k, pos[k]) for k in wanted}
                behind = (any(w.progress < written[k] for k, w in watches.items())
                          or self._awaited(wanted, answered))
                ready = [(k, w, bisect.bisect_right(w.rvs, pos[k])) for k, w in watches.items()]
                if any(i < len(w.rvs) for _, w, i in ready) and not behind:
                    break
                now = time.monotonic()
                limit = catch_up if behind else deadline
                if now >= limit:
                    if any(i < len(w.rvs) for _, w, i in ready):
                        break
                    return [], None
                self._cond.wait(min(limit - now, 0.5))
            streams = [w.events[i:i + max_events] for _, w, i in ready]
            events = list(heapq.merge(*streams, key=lambda e: int(e.rv)))[:max_events]
        if not events:
            return [], None
        for ev in events:
            pos[ev.kind] = int(ev.rv)
        last = events[-1].rv
        with self._cond:
            self._cursors[last] = pos
            self._cursors.move_to_end(last)
            while len(self._cursors) > kube_store._CURSORS:
                self._cursors.popitem(last=False)
        return events, last


class Reader:
    """A store read as an informer reads it: its positions per kind, moved by what it reads."""

    def __init__(self, store: KubeStore, positions: dict[str, str]):
        self.store, self.positions = store, dict(positions)
        self.rv = max(positions.values(), key=int)

    def poll(self) -> tuple[list, float]:
        """The events after the reader's position, and the thread's CPU the read took."""
        cpu = time.thread_time()
        events, last = self.store.read(self.rv, timeout=0.0, kinds=KINDS, positions=self.positions)
        cpu = time.thread_time() - cpu
        for ev in events:
            self.positions[ev.kind] = ev.rv
        if last is not None:
            self.rv = last
        return events, cpu

    def poll_until(self, want: int) -> tuple[list, float]:
        """Polls (each its CPU) until an event of resourceVersion `want` is read: the watch
        brings it a little after the write's answer."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            events, cpu = self.poll()
            if events:
                if int(events[-1].rv) < want:
                    continue  # an earlier event (kwok's): not the one timed
                return events, cpu
            time.sleep(0.002)
        raise RuntimeError(f"the watch did not bring resourceVersion {want} within 10 s")


def _positions(store: KubeStore) -> dict[str, str]:
    return {k: store.list(k)[1] for k in KINDS}


def _empty(reader: Reader, reads: int) -> float:
    reader.poll()  # whatever came meanwhile
    total = 0.0
    for _ in range(reads):
        events, cpu = reader.poll()
        total += cpu
    return 1e6 * total / reads


def _one_event(readers: dict[str, Reader], writer: KubeStore, key: str, reads: int, order: list[str]) -> dict:
    totals = {w: 0.0 for w in readers}
    for i in range(reads):
        for w in order:
            readers[w].poll()  # catch up with anything else first
        pod = writer.get("Pod", key)
        pod["metadata"].setdefault("labels", {})["bench-read"] = str(i)
        rv = int(writer.update(pod)["metadata"]["resourceVersion"])
        got = {}
        for w in order:
            events, cpu = readers[w].poll_until(rv)
            totals[w] += cpu
            got[w] = [(e.kind, e.rv) for e in events]
        if got["optimised"] != got["baseline"]:
            raise AssertionError(f"the readers disagree: {got}")
    return {w: 1e6 * t / reads for w, t in totals.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kube_read", description=__doc__.split("\n\n")[0])
    p.add_argument("--reads", type=int, default=2000, help="empty polls per reader in each repeat (default 2000)")
    p.add_argument("--nodes", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    cases = ("empty", "one_event")
    trials: dict[str, dict[str, list[float]]] = {c: {"optimised": [], "baseline": []} for c in cases}
    with kube_start.control_plane(args.nodes, (NAMESPACE,), "reads-") as (cluster, writer, _):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "read-me", "namespace": NAMESPACE},
               "spec": {"schedulerName": "no-one", "containers": [{"name": "c", "image": "pause"}]}}
        writer.create(pod)
        key = f"{NAMESPACE}/read-me"
        stores = {"optimised": KubeStore(str(cluster.kubeconfig)), "baseline": PreviousReadStore(str(cluster.kubeconfig))}
        readers = {w: Reader(s, _positions(s)) for w, s in stores.items()}
        for r in range(args.repeats):
            order = list(readers) if r % 2 == 0 else list(reversed(readers))
            for w in order:
                trials["empty"][w].append(_empty(readers[w], args.reads))
            for w, us in _one_event(readers, writer, key, max(1, args.reads // 10), order).items():
                trials["one_event"][w].append(us)
            print(json.dumps({"repeat": r + 1, "load": round(os.getloadavg()[0], 2),
                              **{c: {w: round(v[-1], 1) for w, v in t.items()} for c, t in trials.items()}}), flush=True)
    medians = {c: {f"{w}_us_per_poll": round(statistics.median(v), 1) for w, v in t.items()}
               for c, t in trials.items()}
    for m in medians.values():
        m["ratio"] = round(m["optimised_us_per_poll"] / m["baseline_us_per_poll"], 3)
    doc = {"kinds": len(KINDS), "reads": args.reads, "repeats": args.repeats, "medians": medians,
           "trials": trials, "load": os.getloadavg()}
    harness.print_table(f"kube:// watch poll over {len(KINDS)} kinds, the reader's CPU (medians)", medians)
    harness.write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
