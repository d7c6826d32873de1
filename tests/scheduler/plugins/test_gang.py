"""gang: all or nothing — a job is valid, ready and placed only with minMember tasks."""

from __future__ import annotations

from pumice.scheduler import build_cluster_state, load_conf, run_session
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, job, session, task


def gang(size: int, min_member: int, running: int = 0) -> list[dict[str, object]]:
    objs = [podgroup("g", queue="default", min_member=min_member, phase="Inqueue")]
    objs += [pod(f"g-{i}", group="g", cpu="1", **({"node": "n1", "phase": "Running"} if i < running else {}))
             for i in range(size)]
    return objs


def test_a_gang_is_placed_whole_or_not_at_all() -> None:
    conf = load_conf(conf_text("gang", "predicates", actions="allocate"))
    for cpus, placed in (("2", 0), ("3", 3)):
        out = run_session(build_cluster_state([node("n1", cpu=cpus), queue("default"), *gang(3, 3)]), conf)
        assert len(out.binds) == placed, cpus


def test_too_few_pods_make_the_job_invalid() -> None:
    ssn = session([node("n1"), queue("default"), *gang(2, 3)], "gang")
    assert ssn.job_valid(job(ssn, "g")) == ("NotEnoughTasks: not enough valid tasks for gang-scheduling, "
                                            "valid: 2, min: 3")


def test_ready_pipelined_and_starving_follow_min_member() -> None:
    ssn = session([node("n1"), queue("default"), *gang(3, 2, running=1)], "gang")
    g = job(ssn, "g")
    assert not ssn.job_ready(g) and not ssn.job_pipelined(g) and ssn.job_starving(g)
    ssn2 = session([node("n1"), queue("default"), *gang(3, 2, running=2)], "gang")
    g2 = job(ssn2, "g")
    assert ssn2.job_ready(g2) and ssn2.job_pipelined(g2) and not ssn2.job_starving(g2)


def test_only_tasks_above_min_member_are_victims() -> None:
    ssn = session([node("n1"), queue("default"), *gang(3, 2, running=3)], "gang", actions="preempt")
    running = [task(ssn, f"g-{i}") for i in range(3)]
    assert ssn.preemptable(running[0], running) == running[:1]  # 3 running, 2 needed: one may go


def test_not_ready_jobs_go_first_and_a_stuck_gang_says_why() -> None:
    objs = [node("n1", cpu="2"), queue("default"), *gang(3, 3),
            podgroup("done", queue="default", phase="Running"), pod("done-0", group="done", cpu="1", node="n1",
                                                                    phase="Running")]
    ssn = session(objs, "gang", "predicates", actions="allocate")
    assert ssn.job_order_less(job(ssn, "g"), job(ssn, "done"))
    out = run_session(build_cluster_state(objs), load_conf(conf_text("gang", "predicates", actions="allocate")))
    reason = next(j.reason for j in out.jobs if j.key == "default/g")
    assert reason.startswith("3/3 tasks in gang unschedulable")
