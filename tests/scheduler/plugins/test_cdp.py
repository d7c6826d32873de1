"""cdp: a pod within its cooldown time after being scheduled is neither preempted nor reclaimed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, run_session
from tests.builders import node, pod, podgroup, priority_class, queue
from tests.scheduler.plugins.support import conf_text, session, task

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
COOLDOWN = "volcano.sh/cooldown-time"


def running(name: str, group: str, scheduled_ago: timedelta | None, *, label: str | None = None,
            annotation: str | None = None) -> dict[str, Any]:
    obj = pod(name, group=group, cpu="1", node="n", phase="Running",
              labels={COOLDOWN: label} if label else None, annotations={COOLDOWN: annotation} if annotation else None)
    if scheduled_ago is not None:
        stamp = (NOW - scheduled_ago).strftime("%Y-%m-%dT%H:%M:%SZ")
        obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
    return obj


def cluster() -> list[dict[str, Any]]:
    low = podgroup("low", queue="default", phase="Running", priority_class="low")
    high = podgroup("high", queue="default", priority_class="high", phase="Inqueue")
    return [node("n", cpu="4", memory="8Gi"), queue("default"), priority_class("low", 1), priority_class("high", 100),
            low, high,
            running("fresh", "low", timedelta(minutes=1), annotation="10m"),
            running("old", "low", timedelta(minutes=30), annotation="10m"),
            running("labelled", "low", timedelta(minutes=1), label="1h"),
            running("plain", "low", timedelta(minutes=1)),
            pod("h-0", group="high", cpu="2")]


def test_pods_cooling_down_are_kept_out_of_the_victims() -> None:
    ssn = session(cluster(), "cdp", now=NOW.timestamp())
    candidates = [task(ssn, n) for n in ("fresh", "old", "labelled", "plain")]
    assert [t.name for t in ssn.preemptable(task(ssn, "h-0"), candidates)] == ["old", "plain"]
    assert [t.name for t in ssn.reclaimable(task(ssn, "h-0"), candidates)] == ["old", "plain"]
    later = session(cluster(), "cdp", now=(NOW + timedelta(hours=2)).timestamp())
    assert len(later.preemptable(task(later, "h-0"), [task(later, n) for n in ("fresh", "labelled")])) == 2


def test_an_invalid_duration_protects_nothing() -> None:
    objects = [*cluster()[:6], running("bad", "low", timedelta(minutes=1), annotation="ten minutes"),
               pod("h-0", group="high", cpu="2")]
    ssn = session(objects, "cdp", now=NOW.timestamp())
    assert [t.name for t in ssn.preemptable(task(ssn, "h-0"), [task(ssn, "bad")])] == ["bad"]


def test_preempt_evicts_only_pods_past_their_cooldown() -> None:
    with_cdp = load_conf(conf_text("priority", "gang", "conformance", "cdp", "predicates", actions="preempt"))
    without = load_conf(conf_text("priority", "gang", "conformance", "predicates", actions="preempt"))
    # a full node of 3 CPUs runs three pods of 1 CPU; the high-priority pod needs 2 CPUs, and
    # under cdp only "old" may go
    objects = [o for o in cluster() if o["metadata"]["name"] != "plain"]
    objects[0] = node("n", cpu="3", memory="8Gi")
    assert len(run_session(objects, without, now=NOW.timestamp()).evictions) == 2
    assert run_session(objects, with_cdp, now=NOW.timestamp()).evictions == []
    one = [*objects[:-1], pod("h-0", group="high", cpu="1")]
    assert run_session(one, with_cdp, now=NOW.timestamp()).evictions == ["default/old"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from([None, "5m", "30m", "1h"])), min_size=1, max_size=6),
       st.integers(1, 6))
def test_a_pod_cooling_down_is_never_evicted(pods: list[tuple[int, str | None]], need: int) -> None:
    objects: list[dict[str, Any]] = [node("n", cpu=str(len(pods)), memory="16Gi"), queue("default"),
                                     priority_class("low", 1), priority_class("high", 100),
                                     podgroup("low", queue="default", phase="Running", priority_class="low"),
                                     podgroup("high", queue="default", priority_class="high", phase="Inqueue"),
                                     pod("h-0", group="high", cpu=str(need))]
    for i, (ago, cool) in enumerate(pods):
        objects.append(running(f"r{i}", "low", timedelta(minutes=ago), annotation=cool))
    conf = load_conf(conf_text("priority", "gang", "conformance", "cdp", "predicates", actions="preempt"))
    for key in run_session(objects, conf, now=NOW.timestamp()).evictions:
        ago, cool = pods[int(key.split("/r")[1])]
        assert cool is None or timedelta(minutes=ago) >= {"5m": timedelta(minutes=5), "30m": timedelta(minutes=30),
                                                           "1h": timedelta(hours=1)}[cool], (key, pods)
