"""drf: jobs ordered by dominant resource share; victims only while the preemptor stays the poorer."""

from __future__ import annotations

from pumice.scheduler.framework.statement import Statement
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import job, session, task

OBJECTS = [
    node("n1", cpu="10", memory="10Gi"), queue("default"),
    podgroup("a", queue="default", phase="Running"), podgroup("b", queue="default", phase="Running"),
    pod("a-0", group="a", cpu="2", node="n1", phase="Running"),
    pod("a-1", group="a", cpu="2", node="n1", phase="Running"),
    pod("b-0", group="b", cpu="1", node="n1", phase="Running"), pod("b-1", group="b", cpu="1"),
]


def test_the_job_with_the_lower_dominant_share_goes_first() -> None:
    ssn = session(OBJECTS, "drf")
    assert ssn.job_order_less(job(ssn, "b"), job(ssn, "a"))  # 1/10 of the CPUs before 4/10


def test_shares_follow_placements_and_their_undoing() -> None:
    more = [pod(f"b-{i}", group="b", cpu="2") for i in (2, 3)]
    ssn = session([*OBJECTS, *more], "drf")
    a, b = job(ssn, "a"), job(ssn, "b")
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "b-2"), 0)
    assert ssn.job_order_less(b, a)  # 3/10 is still below 4/10
    stmt.allocate(task(ssn, "b-3"), 0)
    assert ssn.job_order_less(a, b)  # 5/10 is above
    stmt.discard()
    assert ssn.job_order_less(b, a)  # back to 1/10


def test_a_victim_must_leave_its_job_no_poorer_than_the_preemptor() -> None:
    ssn = session(OBJECTS, "drf", actions="preempt")
    a0, a1, b1 = task(ssn, "a-0"), task(ssn, "a-1"), task(ssn, "b-1")
    # b with b-1 holds 2/10; a without a-0 holds 2/10 (equal: a victim), without both 0 (not)
    assert ssn.preemptable(b1, [a0, a1]) == [a0]
