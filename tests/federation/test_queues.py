"""Global queues: weights, capability and hierarchy apply to the federation's capacity as a whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pumice.federation import names
from pumice.sim.world import FederatedWorld, MemberSpec

from .builders import JOBS, cluster_of, config, host_job, nodes, phase, queue, vcjob


def _placed(w: FederatedWorld, queue_name: str) -> list[str]:
    jobs, _ = w.host.list(JOBS, "default")
    return [str(cluster_of(w, j["metadata"]["name"])) for j in jobs
            if j["spec"]["queue"] == queue_name and cluster_of(w, j["metadata"]["name"])]


def test_weights_share_the_federation(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))])  # 64 GPUs in all
    w.apply([queue("big", 3), queue("small", 1)])
    w.apply([vcjob(f"{q}-{i}", 1, queue=q, duration=None) for i in range(20) for q in ("big", "small")])
    w.run_for(20)
    big, small = _placed(w, "big"), _placed(w, "small")
    assert (len(big), len(small)) == (6, 2)  # 48 and 16 GPUs: 3 to 1 of the federation
    assert set(big) == {"a", "b"}  # one member alone could not give "big" its share
    status = w.host.get(names.QUEUES, None, "big")["status"]
    assert status["allocated"]["nvidia.com/gpu"] == "48"
    waiting = host_job(w, "small-19")["status"]["state"]
    assert waiting["reason"] == "QueueLimit" and "deserved" in waiting["message"]


def test_a_queue_alone_uses_everything(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))])
    w.apply([queue("big", 3), queue("small", 1)])
    w.apply([vcjob(f"small-{i}", 1, queue="small", duration=None) for i in range(10)])
    w.run_for(20)
    assert Counter(_placed(w, "small")) == {"a": 4, "b": 4}


def test_capability_holds_across_members(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))])
    w.apply([queue("capped", 1, capability={"nvidia.com/gpu": "24"})])
    w.apply([vcjob(f"c-{i}", 1, queue="capped", duration=None) for i in range(6)])
    w.run_for(20)
    assert len(_placed(w, "capped")) == 3
    assert host_job(w, "c-5")["status"]["state"]["reason"] == "QueueLimit"


def test_hierarchy_in_capacity_mode(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))], config("queues: capacity\n"))
    w.apply([queue("research", 1, capability={"nvidia.com/gpu": "32"}, deserved={"nvidia.com/gpu": "32"})])
    w.apply([queue("nlp", 1, parent="research", deserved={"nvidia.com/gpu": "16"}),
             queue("vision", 1, parent="research", deserved={"nvidia.com/gpu": "16"})])
    w.apply([vcjob(f"nlp-{i}", 1, queue="nlp", duration=None) for i in range(6)])
    w.run_for(10)
    assert len(_placed(w, "nlp")) == 4  # elastic up to the parent's capability (32 GPUs)
    w.apply([vcjob("vision-0", 1, queue="vision", duration=None)])
    w.run_for(10)
    assert _placed(w, "vision") == []
    message = host_job(w, "vision-0")["status"]["state"]["message"]
    assert message.startswith("queue research capability")
    copies = w.clusters["a"].store.list(names.QUEUES)[0] + w.clusters["b"].store.list(names.QUEUES)[0]
    nlp = [q for q in copies if q["metadata"]["name"] == "nlp"]
    assert nlp and all(q["spec"]["parent"] == "research" and "deserved" not in q["spec"] for q in nlp)


def _command(w: FederatedWorld, name: str, action: str, target: str) -> dict:
    uid = w.host.get(names.QUEUES, None, target)["metadata"]["uid"]
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"name": name, "namespace": "default"}, "action": action,
            "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": target, "uid": uid}}


def test_a_closed_host_queue_holds_its_jobs_until_opened(make_world: Callable[..., FederatedWorld]) -> None:
    w = make_world([MemberSpec("a", nodes("a", 4)), MemberSpec("b", nodes("b", 4))])
    w.apply([queue("team", 1), vcjob("fill-a", 4, duration=30), vcjob("fill-b", 4, duration=30)])
    w.run_for(5)
    w.apply([vcjob("held", 1, queue="team")])  # admitted while its queue is Open, waits for room
    w.run_for(2)
    w.apply([_command(w, "close-team", "CloseQueue", "team")])  # as `pumice queue operate -a close` does
    w.run_for(60)  # the fillers finish: room everywhere, but the queue is Closed
    assert w.host.get(names.QUEUES, None, "team")["status"]["state"] == "Closed"
    assert phase(w, "fill-a") == "Completed" and cluster_of(w, "held") is None
    state = host_job(w, "held")["status"]["state"]
    assert state["phase"] == "Pending" and state["reason"] == "QueueLimit" and "Closed" in state["message"]
    w.apply([_command(w, "open-team", "OpenQueue", "team")])
    w.run_for(10)
    assert cluster_of(w, "held") is not None and phase(w, "held") == "Running"


def test_what_a_member_gets_of_a_queue_and_a_priority_class(make_world: Callable[..., FederatedWorld]) -> None:
    """Weight, capability and parent go to the member; guarantee and deserved (shares of the whole federation)
    do not; a PriorityClass is never a member's globalDefault; a queue the member had already is left alone."""
    own = queue("shared", 7)
    w = make_world([MemberSpec("a", nodes("a", 4), objects=[own])])
    w.apply([queue("org", 1, capability={"nvidia.com/gpu": "32"}, deserved={"nvidia.com/gpu": "32"},
                   guarantee={"resource": {"nvidia.com/gpu": "8"}}),
             queue("team", 2, parent="org", capability={"nvidia.com/gpu": "16"},
                                    guarantee={"resource": {"nvidia.com/gpu": "8"}},
                                    deserved={"nvidia.com/gpu": "16"}),
             queue("shared", 1),
             {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 100, "globalDefault": True}])
    w.apply([vcjob("j", 1, queue="team", priority_class="high"), vcjob("k", 1, queue="shared")])
    w.run_for(10)
    member = w.clusters["a"].store
    team = member.get(names.QUEUES, None, "team")["spec"]
    assert team["weight"] == 2 and team["parent"] == "org" and team["capability"] == {"nvidia.com/gpu": "16"}
    assert "guarantee" not in team and "deserved" not in team
    assert member.get(names.QUEUES, None, "org")["metadata"]["labels"][names.MANAGED_LABEL] == "true"
    assert member.get(names.QUEUES, None, "shared")["spec"]["weight"] == 7  # the member's own
    pc = member.get("priorityclasses.scheduling.k8s.io", None, "high")
    assert pc["value"] == 100 and pc["globalDefault"] is False
    assert phase(w, "j") == "Running" and phase(w, "k") == "Running"
