"""Deployments and ReplicaSets in the embedded cluster, their pods grouped by Volcano's PodGroup controller."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.controllers.deployment import HASH_LABEL, resolve_fenceposts
from pumice.runtime import Cluster
from tests.builders import node, queue

from .workloads import PodTimeline, deployment, phase, pods_of, run

RS = "replicasets.apps"
PG = "podgroups.scheduling.volcano.sh"


def test_a_deployment_runs_its_replicas_through_a_replicaset_and_one_podgroup_in_the_template_queue() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), queue("test", weight=1), deployment(replicas=3, queue_name="test")])
    run(c, 30)
    (rs,) = c.store.list(RS)[0]
    pods = pods_of(c.store, "web-")
    assert len(pods) == 3 and all(phase(p) == "Running" for p in pods)
    assert rs["metadata"]["name"] == f"web-{rs['spec']['template']['metadata']['labels'][HASH_LABEL]}"
    assert all(p["metadata"]["labels"][HASH_LABEL] == rs["metadata"]["labels"][HASH_LABEL] for p in pods)
    (pg,) = c.store.list(PG)[0]
    # Volcano names and sizes it: podgroup-<ReplicaSet uid>, minMember 1, the template's queue annotation
    assert pg["metadata"]["name"] == f"podgroup-{rs['metadata']['uid']}"
    assert pg["spec"]["queue"] == "test" and pg["spec"]["minMember"] == 1
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {pg["metadata"]["name"]}
    status = c.store.get("deployments.apps", "default", "web")["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (3, 3, 3)


def test_scaling_up_and_down() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), deployment(replicas=2)])
    run(c, 10)
    c.store.patch("deployments.apps", "default", "web", {"spec": {"replicas": 5}})
    run(c, 10)
    assert sum(phase(p) == "Running" for p in pods_of(c.store, "web-")) == 5
    c.store.patch("deployments.apps", "default", "web", {"spec": {"replicas": 1}})
    run(c, 10)
    assert len(pods_of(c.store, "web-")) == 1


def test_the_owner_annotations_size_the_gang() -> None:
    """``scheduling.volcano.sh/group-min-member`` on the Deployment reaches its ReplicaSet, whose PodGroup takes
    it: Volcano reads the owner's annotation, not the pod's."""
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"),
             deployment(replicas=4, annotations={"scheduling.volcano.sh/group-min-member": "4",
                                                 "volcano.sh/preemptable": "false"})])
    run(c, 20)
    (rs,) = c.store.list(RS)[0]
    assert rs["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] == "4"
    (pg,) = c.store.list(PG)[0]
    assert pg["spec"]["minMember"] == 4 and pg["spec"]["minResources"] == {"cpu": "4"}
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "false"}


def rollout(replicas: int, strategy: dict | None, cpu_nodes: int = 64) -> tuple[Cluster, PodTimeline]:
    c = Cluster()
    c.apply([node("n1", cpu=str(cpu_nodes), memory="64Gi"), deployment(replicas=replicas, strategy=strategy)])
    run(c, 20)
    timeline = PodTimeline(c)
    c.apply([deployment(replicas=replicas, strategy=strategy, image="nginx:2")])
    return c, timeline


def _check_rolling(c: Cluster, timeline: PodTimeline, replicas: int, surge: int, unavailable: int) -> None:
    seen_new = False
    for _ in range(40):
        run(c, 2)
        for pods in timeline.states():
            live = [p for p in pods.values() if phase(p) not in ("Succeeded", "Failed")]
            running = [p for p in live if phase(p) == "Running"]
            assert len(live) <= replicas + surge, "more pods than replicas + maxSurge"
            assert len(running) >= replicas - unavailable, "fewer available than replicas - maxUnavailable"
            seen_new |= any(p["spec"]["containers"][0]["image"] == "nginx:2" for p in live)
    pods = pods_of(c.store, "web-")
    assert seen_new and len(pods) == replicas
    assert all(p["spec"]["containers"][0]["image"] == "nginx:2" and phase(p) == "Running" for p in pods)
    sets = c.store.list(RS)[0]
    assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, replicas]  # the old one kept, scaled to zero
    revisions = {rs["spec"]["replicas"]: rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                 for rs in sets}
    assert revisions == {0: "1", replicas: "2"}


def test_a_template_change_rolls_pods_over_within_max_surge_and_max_unavailable() -> None:
    c, timeline = rollout(4, None)  # the defaults: 25% / 25% of 4 -> surge 1, unavailable 1
    _check_rolling(c, timeline, 4, 1, 1)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 6), st.sampled_from([0, 1, 2, "50%", "25%"]), st.sampled_from([0, 1, "30%", "100%"]))
def test_rolling_updates_never_break_their_bounds(replicas: int, surge: int | str, unavailable: int | str) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    if str(surge).rstrip("%") == "0" and str(unavailable).rstrip("%") == "0":
        return  # refused by validation (see tests/admission/test_kube_objects.py)
    max_surge, max_unavailable = resolve_fenceposts(deployment(replicas=replicas, strategy=strategy))
    c, timeline = rollout(replicas, strategy)
    _check_rolling(c, timeline, replicas, max_surge, max_unavailable)


def test_recreate_stops_every_old_pod_before_a_new_one_starts() -> None:
    c, timeline = rollout(3, {"type": "Recreate"})
    for _ in range(20):
        run(c, 2)
        for pods in timeline.states():
            images = {p["spec"]["containers"][0]["image"] for p in pods.values()}
            assert images != {"nginx", "nginx:2"}, "old and new pods at once"
    assert {p["spec"]["containers"][0]["image"] for p in pods_of(c.store, "web-")} == {"nginx:2"}


def test_going_back_to_an_old_template_reuses_its_replicaset() -> None:
    c, _ = rollout(2, None)
    run(c, 60)
    c.apply([deployment(replicas=2)])  # the first template again: a rollback
    run(c, 60)
    sets = {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in c.store.list(RS)[0]}
    assert len(sets) == 2 and sets["nginx"]["spec"]["replicas"] == 2 and sets["nginx:2"]["spec"]["replicas"] == 0
    assert sets["nginx"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


def test_deleting_a_deployment_deletes_its_replicasets_pods_and_podgroups() -> None:
    c = Cluster()
    c.apply([node("n1", cpu="32", memory="64Gi"), deployment(replicas=2)])
    run(c, 10)
    assert c.store.list(PG)[0]
    c.delete([deployment()])
    run(c, 10)
    assert not c.store.list(RS)[0] and not pods_of(c.store, "web-") and not c.store.list(PG)[0]


def test_a_replicaset_replaces_a_deleted_pod_and_scaling_to_zero_drops_its_podgroup() -> None:
    c = Cluster()
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "nginx"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                   "template": deployment(name="nginx")["spec"]["template"]}}
    c.apply([node("n1", cpu="32", memory="64Gi"), rs])
    run(c, 10)
    victim = pods_of(c.store, "nginx-")[0]["metadata"]["name"]
    c.store.delete("pods", "default", victim)
    run(c, 10)
    names = [p["metadata"]["name"] for p in pods_of(c.store, "nginx-")]
    assert len(names) == 2 and victim not in names
    assert len(c.store.list(PG)[0]) == 1
    c.store.patch(RS, "default", "nginx", {"spec": {"replicas": 0}})
    run(c, 10)
    assert not pods_of(c.store, "nginx-") and not c.store.list(PG)[0]
