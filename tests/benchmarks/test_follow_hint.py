"""benchmarks/follow_hint.py: on the real API server, the binder's view follows every pod to
Running in every variant (the benchmark checks every pod counted Running), and the report
has each figure."""
from __future__ import annotations

from benchmarks.follow_hint import measure_kube
from kube_cluster import with_namespace


def test_every_variant_follows_every_pod_to_running_on_the_api_server(kube_cluster):
    with_namespace(kube_cluster, "bench")
    for hint, direct in ((False, True), (True, True), (True, False)):  # decode, hint, http.client
        got = measure_kube(str(kube_cluster.kubeconfig), 30, hint, direct)
        assert set(got) == {"us_per_event", "events_per_s", "watch_us_per_event", "process_us_per_event"}
        # (a thread's CPU is read in clock ticks of 10 ms: 90 events may take less than one)
        assert got["events_per_s"] > 0 and all(v >= 0 for v in got.values())


def test_a_threads_cpu_is_its_own_not_its_process():
    """The watch thread's figure once read /proc/<tid>/stat, which sums every thread of the
    process: it came out above the process's own."""
    import threading
    import time

    from benchmarks.processes import thread_cpu_seconds

    done = threading.Event()

    def idle():
        done.wait(10)
    waiter = threading.Thread(target=idle)
    waiter.start()
    try:
        before = thread_cpu_seconds(waiter.native_id)
        t = time.process_time()
        while time.process_time() - t < 0.3:  # the calling thread burns, the waiter sleeps
            pass
        assert thread_cpu_seconds(waiter.native_id) - before < 0.1
        assert thread_cpu_seconds(threading.get_native_id()) >= 0.2
    finally:
        done.set()
        waiter.join()
