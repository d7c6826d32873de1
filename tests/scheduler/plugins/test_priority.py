"""priority: higher priority first (tasks and jobs), lower-priority victims, starving jobs."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.scheduler.plugins.support import job, session, task

OBJECTS = [
    node("n1", cpu="4"), queue("default"), priority_class("high", 1000), priority_class("low", 10),
    podgroup("hi", queue="default", priority_class="high", phase="Running"),
    podgroup("lo", queue="default", priority_class="low", phase="Running"),
    pod("hi-0", group="hi", cpu="1", priority=1000), pod("hi-1", group="hi", cpu="1", priority=5),
    pod("lo-0", group="lo", cpu="1", node="n1", phase="Running", priority=10),
]


def test_higher_priority_jobs_and_tasks_go_first() -> None:
    ssn = session(OBJECTS, "priority")
    assert ssn.job_order_less(job(ssn, "hi"), job(ssn, "lo"))
    assert not ssn.job_order_less(job(ssn, "lo"), job(ssn, "hi"))
    assert ssn.task_order_less(task(ssn, "hi-0"), task(ssn, "hi-1"))


def test_victims_are_lower_priority_jobs_or_lower_priority_tasks_of_the_same_job() -> None:
    ssn = session(OBJECTS, "priority")
    lo, hi0, hi1 = task(ssn, "lo-0"), task(ssn, "hi-0"), task(ssn, "hi-1")
    assert ssn.preemptable(hi0, [lo, hi1]) == [lo, hi1]  # another job of lower priority; a lower task of its own
    assert ssn.preemptable(lo, [hi0, hi1]) == []  # nothing of a higher-priority job


def test_a_job_without_all_its_tasks_placed_is_starving() -> None:
    ssn = session(OBJECTS, "priority")
    assert ssn.job_starving(job(ssn, "hi"))  # none of its two tasks is placed
    assert not ssn.job_starving(job(ssn, "lo"))  # its one task runs
