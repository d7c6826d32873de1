"""StatefulSets in the embedded cluster: ordinal names, one at a time (OrderedReady) or all at once (Parallel)."""

from __future__ import annotations

from pumice.controllers.statefulset import REVISION_LABEL
from pumice.runtime import Cluster
from tests.builders import node

from .workloads import PodTimeline, phase, pods_of, run, statefulset

STS = "statefulsets.apps"


def test_ordered_ready_creates_pods_one_at_a_time_in_ordinal_order() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi")])
    timeline = PodTimeline(c)
    c.apply([statefulset(replicas=3)])
    run(c, 30)
    for pods in timeline.states():
        # a pod exists only once every lower ordinal runs and is ready
        for name in pods:
            ordinal = int(name.rsplit("-", 1)[1])
            assert all(phase(pods[f"db-{i}"]) == "Running" for i in range(ordinal)), name
    assert timeline.created == ["db-0", "db-1", "db-2"]
    pods = {p["metadata"]["name"]: p for p in pods_of(c.store, "db-")}
    assert set(pods) == {"db-0", "db-1", "db-2"} and all(phase(p) == "Running" for p in pods.values())
    assert pods["db-1"]["spec"]["hostname"] == "db-1" and pods["db-1"]["spec"]["subdomain"] == "db"
    assert pods["db-1"]["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    status = c.store.get(STS, "default", "db")["status"]
    assert status["readyReplicas"] == 3 and status["currentRevision"] == status["updateRevision"]
    # one PodGroup for the set, podgroup-<StatefulSet uid>, as Volcano names it
    sts_uid = c.store.get(STS, "default", "db")["metadata"]["uid"]
    assert [pg["metadata"]["name"] for pg in c.store.list("podgroups.scheduling.volcano.sh")[0]] == [
        f"podgroup-{sts_uid}"]


def test_ordered_scale_down_removes_the_highest_ordinal_first() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), statefulset(replicas=3)])
    run(c, 30)
    timeline = PodTimeline(c)
    c.store.patch(STS, "default", "db", {"spec": {"replicas": 1}})
    run(c, 30)
    gone = []
    for pods in timeline.states():
        present = {n for n in ("db-1", "db-2") if n in pods}
        if "db-2" not in present and "db-2" not in gone:
            gone.append("db-2")
        if "db-1" not in present and "db-1" not in gone:
            gone.append("db-1")
    assert gone == ["db-2", "db-1"]
    assert [p["metadata"]["name"] for p in pods_of(c.store, "db-")] == ["db-0"]


def test_parallel_creates_all_pods_at_once() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi")])
    timeline = PodTimeline(c)
    c.apply([statefulset(replicas=3, policy="Parallel")])
    c.controllers.sync()  # one pass of the controllers, before any pod was scheduled
    list(timeline.states())
    assert sorted(timeline.created) == ["db-0", "db-1", "db-2"]
    assert not any(p["spec"].get("nodeName") for p in pods_of(c.store, "db-"))


def test_rolling_update_replaces_pods_from_the_highest_ordinal_down() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), statefulset(replicas=3)])
    run(c, 30)
    old_revision = c.store.get(STS, "default", "db")["status"]["updateRevision"]
    timeline = PodTimeline(c)
    c.apply([statefulset(replicas=3, image="db:2")])
    run(c, 60)
    list(timeline.states())
    assert timeline.created == ["db-2", "db-1", "db-0"]
    pods = pods_of(c.store, "db-")
    status = c.store.get(STS, "default", "db")["status"]
    assert status["updateRevision"] != old_revision and status["currentRevision"] == status["updateRevision"]
    assert {p["metadata"]["labels"][REVISION_LABEL] for p in pods} == {status["updateRevision"]}
    assert all(p["spec"]["containers"][0]["image"] == "db:2" for p in pods)


def test_a_failed_pod_is_made_anew_under_the_same_name() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi")])
    timeline = PodTimeline(c)
    c.apply([statefulset(replicas=2, duration="30", fail=True)])
    run(c, 45)
    list(timeline.states())
    assert timeline.created.count("db-0") >= 2  # failed at 30 s, deleted and made again
