"""Scenario files and directories: the format, and one clear line for every mistake."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pumice.sim import ScenarioError, load_path

Write = Callable[[str, str], Path]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: busybox, command: [sleep, "10"]}]}
"""


def test_full_format(write: Write) -> None:
    write("pod.yaml", POD)
    write("nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: big}\nstatus: {allocatable: {cpu: '96'}}\n")
    write("sched.conf", 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    path = write("s.yaml", """
name: demo
cluster:
  nodes:
    - {count: 2, cpu: 4, memory: 8Gi}
    - {count: 1, name: gpu, cpu: 32, memory: 128Gi, gpu: 8, labels: {pool: a}}
    - file: nodes.yaml
scheduler: sched.conf
period: 2s
timeline:
  - {at: 0, apply: pod.yaml}
  - at: 1h30m
    name: inline
    apply:
      - {apiVersion: v1, kind: Pod, metadata: {name: q}, spec: {containers: [{name: c, image: x}]}}
  - {at: 10m, delete: {kind: Pod, name: p}}
  - {at: 20m, drain: node-0}
  - {at: 25m, fail: node-1}
  - {at: 30m, recover: node-1}
until: 2h
""")
    sc = load_path(path)
    assert sc.name == "demo"
    assert [n["metadata"]["name"] for n in sc.nodes] == ["node-0", "node-1", "gpu-0", "big"]
    gpu = sc.nodes[2]
    assert gpu["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert gpu["status"]["allocatable"]["pumice.io/gpu-milli"] == "8000"
    assert gpu["metadata"]["labels"]["pool"] == "a"
    assert sc.conf_text is not None and "enqueue" in sc.conf_text
    assert sc.period == 2.0 and sc.until == 7200.0
    assert [(a.at, a.kind) for a in sc.sorted_timeline()] == [
        (0.0, "apply"), (600.0, "delete"), (1200.0, "drain"), (1500.0, "fail"), (1800.0, "recover"),
        (5400.0, "apply")]
    assert sc.timeline[1].objects[0]["metadata"]["name"] == "q"
    assert sc.timeline[2].objects == [{"kind": "Pod", "metadata": {"name": "p"}}]


def test_inline_scheduler_text_and_mapping(write: Write) -> None:
    text = load_path(write("a.yaml", 'scheduler: |\n  actions: "allocate"\n  tiers: []\n'))
    assert text.conf_text is not None and "allocate" in text.conf_text
    mapping = load_path(write("b.yaml", "scheduler:\n  actions: allocate\n  tiers: []\n"))
    assert mapping.conf_text is not None and "allocate" in mapping.conf_text


def test_directory_of_manifests(quickstart: Path) -> None:
    sc = load_path(quickstart)
    assert [n["metadata"]["name"] for n in sc.nodes] == ["k3d-server-0", "k3d-agent-0", "k3d-agent-1"]
    assert all(a.at == 0 for a in sc.timeline)
    assert [a.label for a in sc.timeline][:2] == ["01-hello-job.yaml", "02-queues.yaml"]


@pytest.mark.parametrize(("text", "field", "words"), [
    ("timeline: [{at: 10 minutes, apply: x.yaml}]", "timeline[0].at", "not a duration"),
    ("timeline: [{apply: x.yaml}]", "timeline[0].at", "missing"),
    ("timeline: [{at: 0, apply: missing.yaml}]", "timeline[0].apply", "no such file"),
    ("timeline: [{at: 0, apply: x.yaml, drain: n}]", "timeline[0]", "exactly one"),
    ("timeline: [{at: 0, launch: x}]", "timeline[0].launch", "unknown key"),
    ("cluster: {nodes: [{count: two}]}", "cluster.nodes[0].count", "non-negative integer"),
    ("cluster: {nodes: [{count: 1, cpu: lots}]}", "cluster.nodes[0].cpu", "not a quantity"),
    ("cluster: {nodes: [{count: 1, colour: red}]}", "cluster.nodes[0].colour", "unknown key"),
    ("cluster: {nodez: []}", "cluster.nodez", "unknown key"),
    ("untill: 1h", "untill", "unknown key"),
    ("until: soon", "until", "not a duration"),
    ("scheduler: nope.conf", "scheduler", "no such file"),
    ("timeline: [{at: 0, apply: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: 3}}}]",
     "timeline[0].apply", "containers"),
    ("timeline: [{at: 0, apply: {apiVersion: v1, kind: Pod, metadata: {name: p, annotations: "
     "{pumice.io/duration: 5 minutes}}, spec: {containers: [{name: c, image: x}]}}}]",
     "timeline[0].apply (Pod p) metadata.annotations.pumice.io/duration", "not a duration"),
])
def test_mistakes_name_file_and_field(write: Write, text: str, field: str, words: str) -> None:
    path = write("bad.yaml", text + "\n")
    with pytest.raises(ScenarioError) as err:
        load_path(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {field}: "), message
    assert words in message
    assert "\n" not in message


def test_not_yaml_and_not_a_scenario(write: Write, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_path(write("x.yaml", "timeline: [\n"))
    with pytest.raises(ScenarioError, match="a manifest, not a scenario"):
        load_path(write("y.yaml", POD))
    with pytest.raises(ScenarioError, match="no such file"):
        load_path(tmp_path / "absent.yaml")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScenarioError, match="no manifests"):
        load_path(empty)
