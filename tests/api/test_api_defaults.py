"""Volcano's API-side defaults (webhooks and CRD markers)."""

from __future__ import annotations

from pathlib import Path

from pumice.api import (
    Job,
    Namespace,
    Node,
    PodGroup,
    PriorityClass,
    Queue,
    apply_defaults,
    load_file,
    load_text,
)


def one(text: str):  # the concrete model type varies
    (obj,) = load_text(text)
    return obj


def test_queue_defaults() -> None:
    queue = apply_defaults(
        one("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n")
    )
    assert isinstance(queue, Queue)
    assert queue.to_dict() == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 1, "reclaimable": True},
        "status": {"state": "Open"},
    }


def test_queue_keeps_what_is_set_but_zero_weight_is_unset() -> None:
    queue = apply_defaults(
        one(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {weight: 0, reclaimable: false}\nstatus: {state: Closed}\n"
        )
    )
    assert isinstance(queue, Queue) and queue.spec is not None and queue.status is not None
    assert queue.spec.weight == 1  # the webhook tests `Weight == 0`
    assert queue.spec.reclaimable is False
    assert queue.status.state == "Closed"


def test_queue_hierarchy_annotations_get_root_prefix() -> None:
    queue = apply_defaults(
        one(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: q\n  annotations:\n"
            "    volcano.sh/hierarchy: sci/dev\n    volcano.sh/hierarchy-weights: 2/3\n"
        )
    )
    assert queue.metadata.annotations == {
        "volcano.sh/hierarchy": "root/sci/dev",
        "volcano.sh/hierarchy-weights": "1/2/3",
    }


def test_reading_a_file_applies_no_defaults(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 0}\n"
    )
    (queue,) = load_file(path)
    assert isinstance(queue, Queue) and queue.spec is not None
    assert queue.spec.weight == 0 and queue.spec.reclaimable is None and queue.status is None


PODGROUP = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: team}
spec:
  minMember: 2
  networkTopology: {highestTierAllowed: 2}
  subGroupPolicy:
  - name: workers
    networkTopology: {mode: soft}
  - name: ps
    subGroupSize: 4
    minSubGroups: 1
"""


def test_podgroup_defaults() -> None:
    group = apply_defaults(one(PODGROUP))
    assert isinstance(group, PodGroup) and group.spec is not None
    assert group.spec.queue == "default"
    assert group.spec.min_member == 2
    assert group.spec.network_topology is not None and group.spec.network_topology.mode == "hard"
    first, second = group.spec.sub_group_policy or []
    assert (first.sub_group_size, first.min_sub_groups) == (1, 0)
    assert first.network_topology is not None and first.network_topology.mode == "soft"
    assert (second.sub_group_size, second.min_sub_groups) == (4, 1)
    assert group.to_dict()["spec"]["queue"] == "default"


def test_podgroup_queue_from_namespace_annotation() -> None:
    namespace = Namespace.model_validate(
        {"metadata": {"name": "team", "annotations": {"scheduling.volcano.sh/queue-name": "research"}}}
    )
    group = apply_defaults(one(PODGROUP), namespace=namespace)
    assert isinstance(group, PodGroup) and group.spec is not None
    assert group.spec.queue == "research"
    no_min_member = apply_defaults(PodGroup.model_validate({"metadata": {"name": "x"}}))
    assert isinstance(no_min_member, PodGroup) and no_min_member.spec is not None
    assert no_min_member.spec.min_member is None  # no default in the CRD


JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  plugins: {mpi: ["--master=m"]}
  networkTopology: {highestTierAllowed: 1}
  tasks:
  - replicas: 2
    template: {spec: {hostNetwork: true, containers: [{name: c}]}}
  - name: worker
    replicas: 4
    minAvailable: 3
    maxRetry: 5
  - name: part
    replicas: 6
    partitionPolicy: {totalPartitions: 3, partitionSize: 2, minPartitions: 2}
"""


def test_job_defaults() -> None:
    job = apply_defaults(one(JOB))
    assert isinstance(job, Job) and job.spec is not None and job.spec.tasks is not None
    spec = job.spec
    assert (spec.queue, spec.scheduler_name, spec.max_retry) == ("default", "volcano", 3)
    first, worker, part = spec.tasks
    assert (first.name, first.min_available, first.max_retry) == ("default0", 2, 3)
    assert first.template is not None and first.template.spec is not None
    assert first.template.spec.dns_policy == "ClusterFirstWithHostNet"
    assert (worker.name, worker.min_available, worker.max_retry) == ("worker", 3, 5)
    assert part.min_available == 4  # minPartitions x partitionSize
    assert spec.min_available == 2 + 3 + 4
    assert spec.plugins == {"mpi": ["--master=m"], "svc": [], "ssh": []}
    assert spec.network_topology is not None and spec.network_topology.mode == "hard"
    written = job.to_dict()["spec"]
    assert written["minAvailable"] == 9 and written["tasks"][0]["name"] == "default0"


def test_job_keeps_explicit_values_and_adds_only_needed_plugins() -> None:
    job = apply_defaults(
        one(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
            "spec:\n  queue: q1\n  schedulerName: other\n  maxRetry: 7\n  minAvailable: 1\n"
            "  plugins: {pytorch: [], env: []}\n  tasks: [{name: t, replicas: 3}]\n"
        )
    )
    assert isinstance(job, Job) and job.spec is not None
    assert (job.spec.queue, job.spec.scheduler_name, job.spec.max_retry) == ("q1", "other", 7)
    assert job.spec.min_available == 1
    assert job.spec.plugins == {"pytorch": [], "env": [], "svc": []}
    plain = apply_defaults(Job.model_validate({"metadata": {"name": "x"}, "spec": {"tasks": []}}))
    assert isinstance(plain, Job) and plain.spec is not None
    assert plain.spec.plugins is None and plain.spec.min_available == 0


def test_kinds_without_volcano_defaults() -> None:
    node = Node.model_validate({"metadata": {"name": "n"}})
    assert apply_defaults(node).to_dict() == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    pc = apply_defaults(PriorityClass.model_validate({"metadata": {"name": "p"}, "value": 5}))
    assert isinstance(pc, PriorityClass) and pc.preemption_policy == "PreemptLowerPriority"
