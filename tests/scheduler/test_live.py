"""The live cache (kept current by events) must always equal a state built from scratch, and the
scheduler loop must decide on it what a one-shot session decides."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, run_session
from pumice.scheduler.live import LiveCache
from pumice.scheduler.loop import SchedulerLoop
from pumice.scheduler.snapshot import may_wait
from pumice.store import MemoryStore
from tests.builders import node, pod, podgroup, queue


def assert_same(live: LiveCache) -> None:
    got = live.state()
    fresh = build_cluster_state([o for objs in live.objects.values() for o in objs.values()])
    order = [fresh.nodes.names.index(n) for n in got.nodes.names]
    np.testing.assert_allclose(got.nodes.used, fresh.nodes.used[:, order])
    np.testing.assert_allclose(got.nodes.idle, fresh.nodes.idle[:, order])
    np.testing.assert_array_equal(got.nodes.task_count, fresh.nodes.task_count[order])
    assert set(got.jobs) == set(fresh.jobs)
    for uid, job in fresh.jobs.items():
        mine = got.jobs[uid]
        assert {k: v for k, v in mine.status_count.items() if v} == {k: v for k, v in job.status_count.items() if v}
        np.testing.assert_allclose(mine.allocated, job.allocated)
        assert sorted(mine.tasks) == sorted(job.tasks)
    # every job with something to place or admit is in the index sessions walk
    assert got.active_jobs is not None and got.waiting_jobs is not None
    assert {uid for uid, j in got.active_jobs.items() if may_wait(j)} <= got.waiting_jobs


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_live_cache_equals_a_fresh_build_after_any_event_sequence(seed: int) -> None:
    rng = random.Random(seed)
    live = LiveCache()
    for obj in (node("n1", pods="20"), node("n2", pods="20"), queue("q1", weight=1, state="Open"),
                podgroup("g1", namespace="ns", min_member=2, queue="q1", phase="Inqueue"),
                podgroup("g2", namespace="ns", min_member=1, queue="q1", phase="Inqueue")):
        live.apply("ADDED", obj)
    live.state()
    pods: dict[str, dict[str, Any]] = {}
    for step in range(40):
        op = rng.choice(["add", "replicas", "bind", "run", "finish", "delete", "group", "queue", "confirm", "gpus"])
        if op in ("add", "replicas") or not pods:  # replicas: new pods of one spec (parsed once)
            group, cpu = rng.choice(["g1", "g2", "g3"]), rng.choice(["1", "2"])
            for replica in range(3 if op == "replicas" else 1):
                name = f"p{step}-{replica}"
                pods[name] = pod(name, namespace="ns", group=group, cpu=cpu, memory="1Gi", phase="Pending", uid=True)
                live.apply("ADDED", pods[name])
        elif op == "gpus":  # a node with a resource no node had: the resource columns change
            live.apply("ADDED", node(f"gpu-{step}", gpus=8))
        elif op in ("bind", "run", "finish"):
            name = rng.choice(sorted(pods))
            p = pods[name]
            if op == "bind":
                p = pod(name, namespace="ns", group=p["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
                        cpu=p["spec"]["containers"][0]["resources"]["requests"]["cpu"], memory="1Gi",
                        node=rng.choice(["n1", "n2"]), phase="Pending", uid=True)
            else:
                p = {**p, "status": {"phase": "Running" if op == "run" else "Succeeded"}}
            pods[name] = p
            live.apply("MODIFIED", p)
        elif op == "confirm":  # the server's version of what the cache has: a new resourceVersion and condition
            name = rng.choice(sorted(pods))
            p = pods[name]
            status = {**(p.get("status") or {}), "conditions": [{"type": "PodScheduled", "status": "True"}]}
            p = {**p, "metadata": {**p["metadata"], "resourceVersion": str(step)}, "status": status}
            pods[name] = p
            live.apply("MODIFIED", p)
        elif op == "delete":
            name = rng.choice(sorted(pods))
            live.apply("DELETED", pods.pop(name))
        elif op == "group":
            g3 = podgroup("g3", namespace="ns", min_member=rng.choice([1, 3]), queue="q1", phase="Inqueue")
            live.apply("ADDED", g3)
        else:
            live.apply(rng.choice(["ADDED", "DELETED"]), queue("q1", weight=1, state="Open"))
        assert_same(live)
    # a session on the kept state decides and explains what one on a fresh build does
    fresh = run_session(build_cluster_state([o for objs in live.objects.values() for o in objs.values()]))
    kept = run_session(live.state(), revert=True)
    assert kept.binds == fresh.binds
    assert kept.pending_pods == fresh.pending_pods
    waiting = {j.key: j for j in fresh.jobs if j.reason}
    assert {j.key: j for j in kept.jobs if j.reason} == waiting


def test_the_loop_decides_what_one_session_decides_and_keeps_no_ghosts() -> None:
    objs = [node("n1", cpu="4", pods="20"), node("n2", cpu="4", pods="20"), queue("q1", weight=1, state="Open"),
            podgroup("a", namespace="ns", min_member=3, queue="q1", phase="Inqueue"),
            podgroup("b", namespace="ns", min_member=2, queue="q1", phase="Inqueue")]
    objs += [pod(f"a-{i}", namespace="ns", group="a", cpu="2", memory="1Gi", phase="Pending", uid=True)
             for i in range(3)]
    objs += [pod(f"b-{i}", namespace="ns", group="b", cpu="3", memory="1Gi", phase="Pending", uid=True)
             for i in range(2)]
    expected = run_session(objs).binds
    store = MemoryStore()
    kinds = {"Node": "nodes", "Queue": "queues.scheduling.volcano.sh",
             "PodGroup": "podgroups.scheduling.volcano.sh", "Pod": "pods"}
    for o in objs:
        store.create(kinds[o["kind"]], o)
    loop = SchedulerLoop(store)
    assert loop.run_once().binds == expected
    # the gang that did not fit left nothing behind: a second cycle sees exactly the bound pods
    state = loop.cache.state()
    bound = {k for k, _ in expected.items()}
    on_nodes = {t.key for tasks in state.nodes.tasks for t in tasks.values()}
    assert on_nodes == bound
    assert loop.run_once().binds == {}
