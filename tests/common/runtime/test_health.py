"""/livez, /readyz and /healthz beside /metrics (common/runtime/health.py): kube's answer format, a
main loop that stops coming round fails /livez within livenessTimeoutSeconds, readiness is
its own set of checks, and /metrics carries the default collectors without `_created`."""
from __future__ import annotations

import threading
import time
from urllib.error import HTTPError
from urllib.request import urlopen

from builders import make_config
from common.runtime.health import Health, answer, listen_hosts
from common.store.memory import MemoryStore
from dispatcher.server import Dispatcher


def get(address: str, path: str) -> tuple[int, str]:
    try:
        with urlopen(f"http://{address}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except HTTPError as e:
        return e.code, e.read().decode()


def test_answers_are_kubes():
    assert answer("livez", [("main", None), ("leases", None)], "", False) == (200, "ok")
    assert answer("livez", [("main", None)], "", True) == (200, "[+]main ok\nlivez check passed\n")
    status, body = answer("readyz", [("informer", None), ("lease", "its lease is not held")], "", False)
    assert status == 500 and body == "[+]informer ok\n[-]lease failed: its lease is not held\nreadyz check failed\n"
    assert answer("readyz", [("informer", None), ("lease", "x")], "informer", False) == (200, "ok")
    assert answer("readyz", [("informer", None)], "nope", False)[0] == 404


def test_a_check_that_raises_fails_instead_of_passing():
    h = Health(5)
    h.add_ready("broken", lambda: 1 / 0)
    ((name, reason),) = h.ready()
    assert name == "broken" and "ZeroDivisionError" in reason


def test_listening_on_a_pod_ip_adds_loopback_for_port_forward():
    assert listen_hosts("10.1.2.3") == ["10.1.2.3", "127.0.0.1"]
    assert listen_hosts("127.0.0.1") == ["127.0.0.1"]
    assert listen_hosts("0.0.0.0") == ["0.0.0.0"]
    assert listen_hosts("fd00::5") == ["fd00::5", "::1"]


def test_a_frozen_main_loop_fails_livez_within_its_timeout():
    cfg = make_config(health={"livenessTimeoutSeconds": 1})
    d = Dispatcher(cfg, MemoryStore(), port=0, metrics_port=0)
    frozen, release, steps = threading.Event(), threading.Event(), []

    def step():
        steps.append(1)
        if len(steps) > 20:
            frozen.set()
            release.wait(30)  # wedged, as a deadlock or an endless loop would leave it
        time.sleep(0.01)

    d.informer.start()
    d.serve()
    d.renew_lease()
    loop = threading.Thread(target=d.loop_forever, args=(step,), daemon=True)
    loop.start()
    try:
        address = d.metrics_address
        assert get(address, "/livez") == (200, "ok")
        assert get(address, "/healthz") == (200, "ok")
        assert get(address, "/readyz") == (200, "ok")
        status, metrics = get(address, "/metrics")
        assert status == 200 and metrics != "ok"
        for series in ("process_cpu_seconds_total", "python_info", "python_gc_objects_collected_total",
                       "shardsched_build_info{", "leader_election_master_status{"):
            assert series in metrics, series
        assert "_created" not in metrics
        assert get(address, "/anything")[0] == 404

        assert frozen.wait(10)
        frozen_at = time.monotonic()
        while (answer_ := get(address, "/livez"))[0] == 200:
            assert time.monotonic() - frozen_at < 1 + 3, "livez still passes long after the loop froze"
            time.sleep(0.1)
        status, body = answer_
        assert status == 500 and "[-]main failed: has not come round for" in body
        assert get(address, "/healthz")[0] == 500
        assert get(address, "/readyz")[0] == 200, "readiness is not liveness"
    finally:
        d.stop_event.set()
        release.set()
        loop.join(5)
        d.server.stop(0)
    assert get(address, "/readyz?verbose")[1].splitlines()[0] == "[-]shutdown failed: shutting down"
