"""proportion: queues share the cluster by weight (deserved), and stop at their share."""

from __future__ import annotations

from pumice.scheduler.plugins.proportion import ProportionPlugin
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import job, session, task
from tests.scheduler.plugins.support import queue as queue_of

OBJECTS = [
    node("n1", cpu="6", memory="6Gi"), queue("qa", weight=1), queue("qb", weight=2),
    podgroup("a", queue="qa", phase="Running"), podgroup("b", queue="qb", phase="Inqueue"),
    *(pod(f"a-{i}", group="a", cpu="1", node="n1", phase="Running") for i in range(2)),
    *(pod(f"a-{i}", group="a", cpu="1") for i in range(2, 6)),
    *(pod(f"b-{i}", group="b", cpu="1") for i in range(6)),
]


def test_deserved_is_shared_by_weight() -> None:
    ssn = session(OBJECTS, "proportion")
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    assert plugin.attrs["qa"].deserved[0] == 2000  # 6 CPUs, weights 1:2, both ask for all 6
    assert plugin.attrs["qb"].deserved[0] == 4000


def test_a_queue_at_its_share_is_overused_and_allocates_nothing_more() -> None:
    ssn = session(OBJECTS, "proportion")
    qa, qb = queue_of(ssn, "qa"), queue_of(ssn, "qb")
    assert ssn.overused(qa) and not ssn.overused(qb)
    assert not ssn.allocatable(qa, task(ssn, "a-2"))
    assert job(ssn, "a").quota_reason.startswith("queue qa quota: allocated cpu 2")
    assert ssn.allocatable(qb, task(ssn, "b-0"))


def test_the_lower_share_goes_first() -> None:
    ssn = session(OBJECTS, "proportion")
    assert ssn.queue_order_less(queue_of(ssn, "qb"), queue_of(ssn, "qa"))  # 0/4 before 2/2
