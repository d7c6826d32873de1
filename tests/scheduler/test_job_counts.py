"""A job's running counts (per status, per role, ready, waiting, pending best-effort, pending and allocated
requests) are kept as its tasks move between statuses, never recounted: after any sequence of moves they must
equal a count made from the tasks themselves — gang decisions (``is_ready``, ``is_pipelined``) read them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler.model import ALLOCATED_STATUS, READY_STATUS, TaskStatus
from pumice.scheduler.snapshot import build_cluster_state
from tests.builders import node, pod, podgroup, queue

STATUSES = [TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
            TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED, TaskStatus.FAILED]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "1", "2"]), st.sampled_from(["ps", "worker"])), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from(STATUSES)), max_size=40))
def test_a_jobs_counts_equal_a_recount_after_any_moves(shapes: list[tuple[str, str]],
                                                      moves: list[tuple[int, int]]) -> None:
    pods = [pod(f"p{i}", namespace="ns", group="g", cpu=cpu or None, memory="1Gi" if cpu else None,
                annotations={"volcano.sh/task-spec": role}, phase="Pending", uid=True)
            for i, (cpu, role) in enumerate(shapes)]
    state = build_cluster_state([node("n1"), queue("default", weight=1, state="Open"),
                                 podgroup("g", namespace="ns", min_member=1, queue="default", phase="Inqueue"), *pods])
    job = next(iter(state.jobs.values()))
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    for index, status in moves:
        job.update_task_status(tasks[index % len(tasks)], status)
        assert job.count(READY_STATUS) == sum(1 for t in tasks if t.status & READY_STATUS)  # memo kept right
        for status_ in STATUSES:
            assert job.status_count.get(status_, 0) == sum(1 for t in tasks if t.status == status_)
            for role in ("ps", "worker"):
                assert job.role_count.get(status_, {}).get(role, 0) == sum(
                    1 for t in tasks if t.status == status_ and t.role == role)
        assert job.ready == sum(1 for t in tasks if t.status & READY_STATUS)
        assert job.waiting == sum(1 for t in tasks if t.status == TaskStatus.PIPELINED)
        assert job.pending_best_effort == sum(1 for t in tasks if t.status == TaskStatus.PENDING and t.best_effort)
        zero = np.zeros_like(job.allocated)
        np.testing.assert_array_equal(job.pending_request, sum(
            (t.resreq for t in tasks if t.status == TaskStatus.PENDING), zero))
        np.testing.assert_array_equal(job.allocated, sum(
            (t.resreq for t in tasks if t.status & ALLOCATED_STATUS), zero))
        np.testing.assert_array_equal(job.total_request, sum((t.resreq for t in tasks), zero))
    # a pod deleted, then another one created: the requests follow the tasks the job holds
    gone = tasks.pop(0)
    job.remove_task(gone)
    zero = np.zeros_like(job.allocated)
    np.testing.assert_array_equal(job.total_request, sum((t.resreq for t in tasks), zero))
    np.testing.assert_array_equal(job.pending_request, sum(
        (t.resreq for t in tasks if t.status == TaskStatus.PENDING), zero))
    gone.status = TaskStatus.PENDING
    job.add_task(gone)
    tasks.append(gone)
    np.testing.assert_array_equal(job.total_request, sum((t.resreq for t in tasks), zero))
    np.testing.assert_array_equal(job.pending_request, sum(
        (t.resreq for t in tasks if t.status == TaskStatus.PENDING), zero))
