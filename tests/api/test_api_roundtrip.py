"""Every shared manifest reads into typed models and writes back to the same document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pumice.api import (
    BatchJob,
    Command,
    GenericObject,
    HyperNode,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    dump_json,
    dump_yaml,
    load_file,
    load_text,
)

SHARED = Path("/work/shared")
MANIFESTS = sorted(SHARED.glob("cases/*/cluster.yaml")) + sorted(SHARED.glob("scenarios/**/*.yaml"))


def raw_documents(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def ordered(value: object) -> str:
    """Canonical text that keeps key order, so equality also checks field order."""
    return json.dumps(value)


def test_shared_manifests_exist() -> None:
    assert len(MANIFESTS) > 10


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(SHARED)))
def test_round_trip(path: Path) -> None:
    raw = raw_documents(path.read_text())
    objects = load_file(path)
    assert len(objects) == len(raw)
    # The first read already reproduces the file, field order included.
    assert ordered([obj.to_dict() for obj in objects]) == ordered(raw)
    assert not any(isinstance(obj, GenericObject) for obj in objects)
    # YAML: load -> dump -> load gives the same documents.
    again = load_text(dump_yaml(objects), "again.yaml")
    assert ordered([obj.to_dict() for obj in again]) == ordered(raw)
    assert ordered(raw_documents(dump_yaml(objects))) == ordered(raw)
    # JSON too.
    from_json = load_text(dump_json(objects), "again.json")
    assert ordered([obj.to_dict() for obj in from_json]) == ordered(raw)


def test_typed_fields_of_a_case() -> None:
    path = next(p for p in MANIFESTS if "PartitionPolicyNetworkTopology-03" in str(p))
    objects = load_file(path)
    nodes = [o for o in objects if isinstance(o, Node)]
    pods = [o for o in objects if isinstance(o, Pod)]
    (group,) = [o for o in objects if isinstance(o, PodGroup)]
    assert nodes[0].status is not None and nodes[0].status.allocatable == {
        "cpu": "2",
        "memory": "4Gi",
        "pods": "10",
    }
    assert pods[0].key == "c1/p1" and pods[0].spec is not None
    assert pods[0].spec.node_name == "s0-n1"
    assert pods[0].spec.containers is not None
    resources = pods[0].spec.containers[0].resources
    assert resources is not None and resources.requests == {"cpu": "2", "memory": "4G"}
    assert group.spec is not None and group.spec.min_member == 2
    assert group.spec.network_topology is not None and group.spec.network_topology.highest_tier_allowed == 2
    assert group.spec.sub_group_policy is not None
    assert group.spec.sub_group_policy[0].match_label_keys == ["volcano.sh/task-spec"]


UNKNOWN_FIELDS = """\
apiVersion: v1
kind: Pod
extraTop: {a: 1}
metadata:
  name: p1
  namespace: c1
  creationTimestamp: 2024-01-02T03:04:05Z
  managedFields: [{manager: kubectl}]
spec:
  nodeSelector: {disk: ssd}
  initContainers:
  - name: init
    resources: {requests: {cpu: 100m}}
  containers:
  - name: c
    image: busybox
    imagePullPolicy: IfNotPresent
    resources:
      requests: {cpu: 2, memory: 0.5, nvidia.com/gpu: "1"}
      limits: {cpu: "4"}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: zone, operator: In, values: [a, b]}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        preference:
          matchExpressions: [{key: rack, operator: Exists}]
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: x}}
        topologyKey: kubernetes.io/hostname
        futureField: true
  tolerations:
  - {key: k, operator: Equal, value: v, effect: NoSchedule, tolerationSeconds: 30}
  schedulingGates: [{name: gate}]
  topologySpreadConstraints: [{maxSkew: 1}]
status:
  phase: Pending
  qosClass: Burstable
"""


def test_unknown_fields_are_kept_and_known_ones_typed() -> None:
    (pod,) = load_text(UNKNOWN_FIELDS, "pod.yaml")
    assert isinstance(pod, Pod) and pod.spec is not None
    assert pod.model_extra == {"extraTop": {"a": 1}}
    assert pod.metadata.creation_timestamp == "2024-01-02T03:04:05Z"  # a string, not a datetime
    assert pod.metadata.model_extra == {"managedFields": [{"manager": "kubectl"}]}
    assert pod.spec.node_selector == {"disk": "ssd"}
    assert pod.spec.init_containers is not None and pod.spec.init_containers[0].name == "init"
    container = pod.spec.containers[0] if pod.spec.containers else None
    assert container is not None and container.model_extra == {"imagePullPolicy": "IfNotPresent"}
    # YAML numbers in resource lists become their text.
    assert container.resources is not None
    assert container.resources.requests == {"cpu": "2", "memory": "0.5", "nvidia.com/gpu": "1"}
    affinity = pod.spec.affinity
    assert affinity is not None and affinity.node_affinity is not None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None and required.node_selector_terms is not None
    expressions = required.node_selector_terms[0].match_expressions
    assert expressions is not None and expressions[0].values == ["a", "b"]
    anti = affinity.pod_anti_affinity
    assert anti is not None and anti.required_during_scheduling_ignored_during_execution is not None
    term = anti.required_during_scheduling_ignored_during_execution[0]
    assert term.topology_key == "kubernetes.io/hostname"
    assert term.label_selector is not None and term.label_selector.match_labels == {"app": "x"}
    assert pod.spec.tolerations is not None and pod.spec.tolerations[0].toleration_seconds == 30
    assert pod.spec.model_extra == {"topologySpreadConstraints": [{"maxSkew": 1}]}

    expected = yaml.load(UNKNOWN_FIELDS, Loader=yaml.BaseLoader)  # every scalar as a string
    dumped = yaml.load(dump_yaml([pod]), Loader=yaml.BaseLoader)
    assert ordered(dumped) == ordered(expected)


def test_wire_names_of_special_fields() -> None:
    text = """\
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: abort-1, namespace: ns}
action: AbortJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: j1, uid: u1, controller: true}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
status:
  conditions: [{type: Unschedulable, status: "True", transitionID: abc, reason: NotEnoughResources}]
"""
    command, group = load_text(text)
    assert isinstance(command, Command) and command.target_object is not None
    assert command.target_object.api_version == "batch.volcano.sh/v1alpha1"
    assert command.target_object.controller is True
    assert isinstance(group, PodGroup) and group.status is not None and group.status.conditions is not None
    assert group.status.conditions[0].transition_id == "abc"
    assert ordered([o.to_dict() for o in load_text(dump_yaml([command, group]))]) == ordered(
        raw_documents(text)
    )


def test_other_kinds_typed() -> None:
    text = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
preemptionPolicy: Never
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec:
  weight: 2
  reclaimable: false
  capability: {cpu: "10"}
  guarantee: {resource: {cpu: "1"}}
  affinity: {nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [g1]}}
status: {state: Open, allocated: {cpu: "2"}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: s0}
spec:
  tier: 1
  tierName: rack
  members:
  - {type: Node, selector: {regexMatch: {pattern: "^n-[0-9]+$"}}}
  - {type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}
  - {type: HyperNode, selector: {exactMatch: {name: s1}}}
status: {nodeCount: 2}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, namespace: ns}
spec:
  plugins: {ssh: [], svc: ["--publish-not-ready-addresses"]}
  policies: [{event: PodEvicted, action: RestartJob}, {exitCode: 3, action: AbortJob}]
  tasks:
  - name: ps
    replicas: 4
    dependsOn: {name: [a], iteration: any}
    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 1}
    template: {spec: {containers: [{name: c}]}}
status:
  state: {phase: Running}
  taskStatusCount: {ps: {phase: {Running: 4}}}
"""
    pc, queue, hypernode, job = load_text(text)
    assert isinstance(pc, PriorityClass) and pc.value == 1000 and pc.global_default is False
    assert pc.key == "high"
    assert isinstance(queue, Queue) and queue.spec is not None and queue.spec.reclaimable is False
    assert queue.spec.guarantee is not None and queue.spec.guarantee.resource == {"cpu": "1"}
    assert queue.spec.affinity is not None and queue.spec.affinity.node_group_affinity is not None
    assert queue.key == "q1"
    assert isinstance(hypernode, HyperNode) and hypernode.spec is not None and hypernode.spec.members
    selector = hypernode.spec.members[0].selector
    assert selector is not None and selector.regex_match is not None
    assert selector.regex_match.pattern == "^n-[0-9]+$"
    assert isinstance(job, Job) and job.spec is not None and job.spec.tasks is not None
    assert job.spec.plugins == {"ssh": [], "svc": ["--publish-not-ready-addresses"]}
    assert job.spec.policies is not None and job.spec.policies[1].exit_code == 3
    task = job.spec.tasks[0]
    assert task.depends_on is not None and task.depends_on.name == ["a"]
    assert task.partition_policy is not None and task.partition_policy.partition_size == 2
    assert job.status is not None and job.status.task_status_count is not None
    assert job.status.task_status_count["ps"].phase == {"Running": 4}
    assert ordered([o.to_dict() for o in load_text(dump_yaml([pc, queue, hypernode, job]))]) == ordered(
        raw_documents(text)
    )


def test_unknown_kinds_are_kept() -> None:
    text = """\
apiVersion: batch/v1
kind: Job
metadata: {name: k8s-job, namespace: ns}
spec: {completions: 3}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {size: 3}
"""
    k8s_job, widget = load_text(text)
    assert type(k8s_job) is BatchJob and not isinstance(k8s_job, Job)  # batch/v1 Job is not a Volcano Job
    assert type(widget) is GenericObject
    assert k8s_job.key == "ns/k8s-job" and widget.key == "w"
    assert ordered([o.to_dict() for o in (k8s_job, widget)]) == ordered(raw_documents(text))


def test_lists_and_json_forms() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    as_list = {"apiVersion": "v1", "kind": "List", "items": [pod, node]}
    for text in (
        json.dumps(pod),
        json.dumps([pod, node]),
        json.dumps(as_list),
        yaml.safe_dump(as_list),
        yaml.safe_dump({**as_list, "kind": "PodList", "items": [pod]}),
        "---\n# only a comment\n---\n" + yaml.safe_dump(pod) + "---\n",
    ):
        objects = load_text(text)
        assert objects and isinstance(objects[0], Pod) and objects[0].key == "n/p"
    assert [type(o) for o in load_text(json.dumps([pod, node]))] == [Pod, Node]
    assert load_text("") == [] and load_text("# nothing\n") == []


def test_dump_forms() -> None:
    pod = Pod.model_validate({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    node = Node.model_validate({"metadata": {"name": "n"}})
    text = dump_yaml([pod, node])
    assert text.count("---\n") == 1 and text.startswith("apiVersion: v1\nkind: Pod\n")
    assert json.loads(dump_json(pod))["kind"] == "Pod"
    both = json.loads(dump_json([pod, node]))
    assert both["kind"] == "List" and [i["kind"] for i in both["items"]] == ["Pod", "Node"]
    assert dump_yaml([]) == ""


def test_multiline_strings_are_literal_blocks() -> None:
    pod = Pod.model_validate(
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "args": ["a\nb\n"]}]}}
    )
    text = dump_yaml(pod)
    assert "- |\n" in text
    (again,) = load_text(text)
    assert again.to_dict() == pod.to_dict()


def test_load_file_reads_utf8_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes("\ufeffapiVersion: v1\nkind: Node\nmetadata: {name: n\u00e9}\n".encode())
    (node,) = load_file(path)
    assert node.key == "n\u00e9"
