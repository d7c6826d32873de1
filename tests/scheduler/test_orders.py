"""Job and task order by keys: the allocate action's job queues and its worksheets sort by keys the
plugins offer (tuples compared in C) instead of the chain of order callbacks. Over random jobs — priorities,
gangs part-running, DRF shares, creation times that tie — the keys must give exactly the callbacks' order."""

from __future__ import annotations

import random
from functools import cmp_to_key
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, open_session
from pumice.scheduler.conf import DEFAULT_CONF
from pumice.scheduler.framework.pqueue import PriorityQueue
from pumice.scheduler.framework.session import Session
from pumice.scheduler.snapshot import build_cluster_state
from pumice.scheduler.topology.worksheet import sort_tasks
from tests.builders import node, pod, podgroup, queue

STAMPS = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]


def _cluster(seed: int) -> list[dict[str, Any]]:
    """Jobs with a random priority class, gang size, pods already running (DRF shares, ready gangs),
    task priorities and creation times drawn from a few values, so that every order key ties somewhere."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu="64", memory="256Gi") for i in range(3)]
    objs.append(queue("default", weight=1, state="Open"))
    for name, value in (("low", 10), ("high", 100)):
        objs.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                     "value": value})
    for j in range(rng.randint(1, 12)):
        size = rng.randint(1, 5)
        group = podgroup(f"j{j}", namespace="ns", min_member=rng.randint(1, size), queue="default",
                         phase="Inqueue", priority_class=rng.choice([None, "low", "high"]))
        group["metadata"]["creationTimestamp"] = rng.choice(STAMPS)
        objs.append(group)
        running = rng.randint(0, size)
        for k in range(size):
            p = pod(f"j{j}-w-{k}", namespace="ns", group=f"j{j}", cpu=rng.choice(["1", "2", "4"]), memory="1Gi",
                    node="n0" if k < running else None, phase="Running" if k < running else "Pending",
                    priority=rng.choice([None, 1, 5]), uid=True)
            p["metadata"]["creationTimestamp"] = rng.choice(STAMPS)
            objs.append(p)
    return objs


def _session(seed: int) -> Session:
    return open_session(build_cluster_state(_cluster(seed)), load_conf(DEFAULT_CONF))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.lists(st.booleans(), max_size=30))
def test_a_keyed_job_queue_pops_in_the_callbacks_order(seed: int, script: list[bool]) -> None:
    """Pushes and pops in any interleaving: the same jobs come out in the same order."""
    ssn = _session(seed)
    key = ssn.job_order_key()
    assert key is not None  # priority, gang and drf all offer keys
    jobs = list(ssn.waiting)
    random.Random(seed).shuffle(jobs)
    by_less: PriorityQueue[Any] = PriorityQueue(ssn.job_order_less)
    by_key: PriorityQueue[Any] = PriorityQueue(ssn.job_order_less, key=key)
    out_less, out_key = [], []
    steps = iter(script)
    for job in jobs:
        by_less.push(job)
        by_key.push(job)
        if next(steps, False) and not by_less.empty():
            out_less.append(by_less.pop().uid)
            out_key.append(by_key.pop().uid)
    while not by_less.empty():
        out_less.append(by_less.pop().uid)
        out_key.append(by_key.pop().uid)
    assert by_key.empty()
    assert out_key == out_less


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_tasks_sorted_by_key_are_in_task_order(seed: int) -> None:
    ssn = _session(seed)
    for job in ssn.jobs.values():
        tasks = list(job.tasks.values())
        random.Random(seed).shuffle(tasks)
        assert sort_tasks(ssn, tasks) == sorted(tasks, key=cmp_to_key(ssn.task_order_cmp))


def test_a_plugin_without_an_order_key_keeps_the_callbacks() -> None:
    """sla orders jobs by their waiting time against a deadline and offers no key: no key for the session."""
    conf = load_conf(DEFAULT_CONF.replace("  - name: conformance\n", "  - name: conformance\n  - name: sla\n"))
    ssn = open_session(build_cluster_state(_cluster(1)), conf)
    assert ssn.job_order_key() is None


def test_a_value_without_a_key_turns_the_queue_back_to_the_callbacks() -> None:
    """A key function may answer None for a value (a NaN share): the queue then orders everything it holds,
    and everything pushed later, by ``less``."""
    values = [5, 3, 9, 1, 7, 2]
    less = int.__lt__
    q: PriorityQueue[int] = PriorityQueue(less, key=lambda v: None if v == 7 else (v,))
    for v in values:
        q.push(v)
    q.push(4)
    assert [q.pop() for _ in range(len(values) + 1)] == sorted([*values, 4])
