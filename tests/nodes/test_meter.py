"""The simulated kubelet measures what its pods use (``pumice.io/usage``) and reports it as node metrics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.clock import VirtualClock, to_datetime
from pumice.node_metrics import MetricsSource
from pumice.nodes import SimulatedKubelet
from pumice.nodes.meter import UsageMeter
from pumice.nodes.usage import USAGE_ANNOTATION
from pumice.store import MemoryStore
from tests.builders import node, pod

GI = 1024**3


def test_kubelet_reports_node_usage_from_its_pods_profiles() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=lambda: to_datetime(clock.now()))
    store.create("nodes", node("n1", cpu="8", memory="8Gi", capacity=True))
    store.create("nodes", node("n2", cpu="8", memory="8Gi", capacity=True))
    kubelet = SimulatedKubelet(store, clock)
    assert isinstance(kubelet, MetricsSource)
    store.create("pods", pod("a", namespace="ns", cpu="2", memory="2Gi",
                             annotations={USAGE_ANNOTATION: "0.5,60s:1.5", "pumice.io/duration": "300"}))
    store.create("pods", pod("b", namespace="ns", cpu="4", memory="1Gi"))  # no profile: its requests
    kubelet.sync()
    t0 = clock.now()
    store.bind("ns", "a", "n1")
    store.bind("ns", "b", "n1")
    kubelet.sync()
    clock.advance_to(t0 + 30)
    m = kubelet.node_metrics(clock.now())
    assert m["n1"].cpu == pytest.approx(1000 + 4000)  # 30 s at the first level, averaged over 30 s
    assert m["n1"].memory == pytest.approx(1 * GI + 1 * GI)
    assert m["n1"].timestamp == clock.now() and m["n2"].cpu == 0.0  # an idle node reports 0, fresh
    clock.advance_to(t0 + 75)
    m = kubelet.node_metrics(clock.now())
    assert m["n1"].cpu == pytest.approx((15 * 1000 + 15 * 3000) / 30 + 4000)  # the step at 60 s, mid-window
    clock.advance_to(t0 + 300)
    kubelet.sync()  # ``a`` ends
    clock.advance_to(t0 + 400)
    assert kubelet.node_metrics(clock.now())["n1"].cpu == pytest.approx(4000)
    store.delete("pods", "ns", "b")
    kubelet.sync()
    clock.advance_to(t0 + 500)
    assert kubelet.node_metrics(clock.now())["n1"].cpu == pytest.approx(0)


def test_a_malformed_profile_is_measured_as_requests() -> None:
    meter = UsageMeter(window=0)
    meter.start("ns/p", "n", pod("p", cpu="1", memory="1Gi", annotations={USAGE_ANNOTATION: "lots"}), 0.0, 0.0)
    assert meter.usage("n", 10.0) == (1000.0, float(GI))


def test_an_offline_pod_is_measured_on_its_batch_requests() -> None:
    # Volcano's co-location: an offline pod asks for kubernetes.io/batch-cpu (milli-cores) and batch-memory,
    # and really uses CPU and memory, its profile relative to those
    meter = UsageMeter(window=0)
    offline = pod("o", annotations={USAGE_ANNOTATION: "0.5"})
    offline["spec"]["containers"][0]["resources"] = {"requests": {"kubernetes.io/batch-cpu": "2000",
                                                                  "kubernetes.io/batch-memory": str(2 * GI)}}
    meter.start("ns/o", "n", offline, 0.0, 0.0)
    assert meter.usage("n", 10.0) == (1000.0, float(GI))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 400), st.sampled_from(["0.5", "1", "0.2,30s:2",
                                                                                      "cpu=0.1,5s:0.9,50s:0.3"])),
                min_size=1, max_size=8),
       st.integers(1, 900))
def test_window_average_matches_a_direct_integral(pods: list[tuple[int, int, str]], at: int) -> None:
    """The meter's average over its window equals the integral of every pod's profile, summed by hand."""
    from pumice.nodes.usage import pod_usage

    window = 30.0
    meter = UsageMeter(window)
    events = []
    objs = {}
    for i, (start, length, profile) in enumerate(pods):
        p = pod(f"p{i}", cpu="1", memory="1Gi", annotations={USAGE_ANNOTATION: profile})
        p["status"] = {"phase": "Running", "startTime": to_datetime(float(start)).isoformat().replace("+00:00", "Z")}
        objs[f"p{i}"] = (p, start, start + length)
        events += [(float(start), 1, f"p{i}"), (float(start + length), 0, f"p{i}")]
    for t, kind, key in sorted(events):
        if t > at:
            break
        if kind == 1:
            meter.start(key, "n", objs[key][0], t, t)
        else:
            meter.stop(key, t)
    got = meter.node_metrics(float(at), ["n"])["n"].cpu
    # by hand: sample each second's middle (levels change on whole seconds)
    total = 0.0
    for s in range(int(at - window), int(at)):
        mid = s + 0.5
        for p, start, end in objs.values():
            if start <= mid < end:
                total += pod_usage(p, mid).cpu
    assert got == pytest.approx(total / window, abs=1e-6)
