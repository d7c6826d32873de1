"""``pumice schedule`` as a new user runs it: files without queues, hard topology with the default
configuration, node scores and predicate results (issues 11 and 19)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from pumice.cli.main import app
from tests.builders import Obj, hypernode, node, pod, podgroup, queue, vcjob

RACK = "example.com/rack"


def write(path: Path, objs: list[Obj]) -> Path:
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return path


def schedule(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["schedule", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def label_rack(name: str) -> Obj:
    return hypernode(name, 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {RACK: name}}}}])


# --- issue 11 item 6: root and default exist in every Volcano cluster ---------------------------------
def test_a_file_without_queues_schedules_into_default(tmp_path: Path) -> None:
    f = write(tmp_path / "c.yaml", [node("n1", cpu="4"), vcjob("hello", replicas=2)])
    out = schedule("-f", str(f))
    assert sorted(out["binds"]) == ["default/hello-main-0", "default/hello-main-1"]
    assert set(out["binds"].values()) == {"n1"}


def test_a_file_that_declares_default_keeps_its_own(tmp_path: Path) -> None:
    # the file's default queue is closed: its job waits, as Volcano would decide with that queue
    closed = queue("default", weight=1, state="Closed")
    f = write(tmp_path / "c.yaml", [node("n1", cpu="4"), closed, vcjob("hello", replicas=2)])
    assert schedule("-f", str(f))["binds"] == {}
    # a file with queues of its own and none named default: exactly its queues (the cases' convention)
    f = write(tmp_path / "d.yaml", [node("n1", cpu="4"), queue("q1", weight=1), vcjob("hello", replicas=2)])
    assert schedule("-f", str(f))["binds"] == {}
    f = write(tmp_path / "e.yaml", [node("n1", cpu="4"), queue("q1", weight=1), vcjob("hello", replicas=2, queue="q1")])
    assert len(schedule("-f", str(f))["binds"]) == 2


# --- issue 19 defect 3 in the dry run: a resource given only in limits is requested at its limit ----------
def test_limits_only_gpus_are_counted_in_a_dry_run(tmp_path: Path) -> None:
    eight = {"limits": {"nvidia.com/gpu": "8"}}
    pods = [pod(f"p{i}", group=f"g{i}", containers=[{"name": "main", "image": "cuda", "resources": eight}])
            for i in range(2)]
    f = write(tmp_path / "c.yaml", [node("n1", cpu="64", gpus=8), podgroup("g0"), podgroup("g1"), *pods])
    assert len(schedule("-f", str(f))["binds"]) == 1  # two 8-GPU pods never share one 8-GPU node


# --- issue 11 item 1: hard topology with part of a HyperNode unusable -------------------------------
def tainted_racks() -> list[Obj]:
    """Two tier-1 racks (label members) of 6 and 5 nodes with 8 GPUs; 3 of rack-a tainted."""
    objs: list[Obj] = []
    taint = [{"key": "maintenance", "value": "x", "effect": "NoSchedule"}]
    for rack, count in (("rack-a", 6), ("rack-b", 5)):
        for i in range(count):
            objs.append(node(f"{rack}-n{i}", cpu="64", memory="512Gi", gpus=8, labels={RACK: rack},
                             taints=taint if rack == "rack-a" and i < 3 else None))
        objs.append(label_rack(rack))
    return objs


def gpu_job(name: str, replicas: int, topology: Obj) -> Obj:
    job = vcjob(name, replicas=replicas, min_available=replicas, networkTopology=topology)
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}
    return job


def test_hard_gang_never_spans_racks_with_the_default_configuration(tmp_path: Path) -> None:
    f = write(tmp_path / "c.yaml", [*tainted_racks(), gpu_job("train", 4, {"mode": "hard", "highestTierAllowed": 1})])
    out = schedule("-f", str(f))
    racks = {n.rsplit("-", 1)[0] for n in out["binds"].values()}
    assert len(out["binds"]) == 4 and racks == {"rack-b"}, out["binds"]
    assert out["hypernodes"]["default/train-default-train"] == "rack-b"


def test_hard_gang_that_fits_no_rack_waits_with_the_topology_reason(tmp_path: Path) -> None:
    f = write(tmp_path / "c.yaml", [*tainted_racks(), gpu_job("train", 6, {"mode": "hard", "highestTierAllowed": 1})])
    assert schedule("-f", str(f))["binds"] == {}
    table = CliRunner().invoke(app, ["schedule", "-f", str(f)], env={"COLUMNS": "250"})
    assert "no tier-1 HyperNode" in table.stdout, table.stdout


# --- issue 19 defect 1: minAvailable below the replica count -----------------------------------------
def test_hard_job_with_min_available_below_replicas_runs_min_available_in_one_hypernode(tmp_path: Path) -> None:
    """The network-topology guide, 3.3.1: 8 x 4 CPU, minAvailable 4, two tier-1 HyperNodes of four 4-CPU nodes."""
    objs: list[Obj] = []
    for rack in ("s0", "s1"):
        objs += [node(f"{rack}-n{i}", cpu="4", labels={RACK: rack}) for i in range(4)]
        objs.append(label_rack(rack))
    job = vcjob("network-topology-job", replicas=8, cpu="4", min_available=4,
                networkTopology={"mode": "hard", "highestTierAllowed": 1})
    f = write(tmp_path / "c.yaml", [*objs, job])
    out = schedule("-f", str(f))
    assert len(out["binds"]) == 4, out
    assert len({n.split("-")[0] for n in out["binds"].values()}) == 1, out["binds"]


# --- issue 11 item 5: --node-scores for bound tasks too ---------------------------------------------
def test_node_scores_cover_bound_tasks_as_the_node_order_scores_them(tmp_path: Path) -> None:
    """A running pod is scored on every node like a pending twin of the same shape (node order does
    not look at a task's status): the node it runs on counts it in its usage for both."""
    objs: list[Obj] = [node("n1", cpu="8", memory="16Gi"), node("n2", cpu="8", memory="16Gi"),
                       queue("default", weight=1),
                       podgroup("running", queue="default", phase="Running"),
                       pod("busy", group="running", cpu="2", memory="4Gi", node="n1", phase="Running"),
                       podgroup("waiting", queue="default", phase="Inqueue"),
                       pod("twin", group="waiting", cpu="2", memory="4Gi", phase="Pending")]
    f = write(tmp_path / "c.yaml", objs)
    conf = tmp_path / "s.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n")
    result = CliRunner().invoke(app, ["schedule", "-f", str(f), "--config", str(conf), "-o", "json", "--node-scores"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)["node_scores"]
    assert set(scores) == {"default/busy", "default/twin"}
    assert scores["default/busy"] == scores["default/twin"]
    assert scores["default/busy"]["n2"] > scores["default/busy"]["n1"]  # leastallocated: the empty node


# --- issue 19, what to build 2: --predicates ----------------------------------------------------------
def test_predicates_give_volcano_status_codes_per_pending_task_and_node(tmp_path: Path) -> None:
    taint = [{"key": "maintenance", "value": "x", "effect": "NoSchedule"}]
    cordoned = node("cordoned")
    cordoned["spec"] = {"unschedulable": True}
    objs: list[Obj] = [
        node("ok"), node("small", cpu="1"), node("tainted", taints=taint), cordoned,
        node("other-disk", labels={"disk": "hdd"}), node("full", pods="1"),
        node("full-tainted", pods="1", taints=taint),
        queue("default", weight=1),
        podgroup("fillers", queue="default", phase="Running"),
        pod("filler-1", group="fillers", node="full", phase="Running"),
        pod("filler-2", group="fillers", node="full-tainted", phase="Running"),
        podgroup("waiting", queue="default", phase="Inqueue"),
        pod("w", group="waiting", cpu="2", phase="Pending", labels={"app": "w"}),
    ]
    for o in objs:
        if o["kind"] == "Node" and o["metadata"]["name"] != "other-disk":
            o["metadata"]["labels"] = {"disk": "ssd"}
    objs[-1]["spec"]["nodeSelector"] = {"disk": "ssd"}
    f = write(tmp_path / "c.yaml", objs)
    result = CliRunner().invoke(app, ["schedule", "-f", str(f), "-o", "json", "--predicates"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["binds"] == {"default/w": "ok"}  # the session itself still runs
    assert data["predicates"] == {"default/w": {
        "ok": "Success",
        "small": "Success",  # resources are allocate's check, not a predicate's
        "tainted": "UnschedulableAndUnresolvable",
        "cordoned": "UnschedulableAndUnresolvable",
        "other-disk": "UnschedulableAndUnresolvable",
        "full": "Unschedulable",
        "full-tainted": "Unschedulable",  # Volcano checks the pod count first
    }}
    assert set(data["predicates"]) == {"default/w"}, "pending tasks only"
    table = CliRunner().invoke(app, ["schedule", "-f", str(f), "--predicates"], env={"COLUMNS": "250"})
    assert table.exit_code == 0 and "UnschedulableAndUnresolvable" in table.stdout, table.output


# --- the tables for a person: the same decisions as -o json, one per line ------------------------------
def test_tables_list_every_bind_and_job_as_json_does(tmp_path: Path) -> None:
    objs = [node("n1", cpu="4"), node("n2", cpu="4"), vcjob("small", replicas=3), vcjob("huge", replicas=2, cpu="8")]
    f = write(tmp_path / "c.yaml", objs)
    decided = schedule("-f", str(f))
    result = CliRunner().invoke(app, ["schedule", "-f", str(f)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index(f"Binds ({len(decided['binds'])})")
    assert lines[start + 1].split() == ["POD", "NODE"]
    shown = dict(line.split() for line in lines[start + 2 : start + 2 + len(decided["binds"])])
    assert shown == decided["binds"]
    jobs = lines.index("Jobs (PodGroups)")
    assert lines[jobs + 1].split()[:4] == ["JOB", "QUEUE", "PHASE", "READY/MIN"]
    rows = {line.split()[0]: line for line in lines[jobs + 2 :]}
    assert set(rows) == set(decided["podgroups"]) and len(rows) == 2
    huge = next(row for key, row in rows.items() if key.startswith("default/huge"))
    assert huge.split()[2:4] == ["Pending", "0/2"] and "resource in cluster is overused" in huge


def test_a_kind_the_scheduler_reads_in_an_unknown_version_is_refused(tmp_path: Path) -> None:
    """kubectl answers "no matches for kind" for a Pod in version xxxx; read as a Pod, its fields were never
    checked (the API fuzz test's ``containers: [null]`` stopped the dry run with AttributeError). One line
    naming the file, the object and the field, exit 2."""
    bad = pod("a", cpu="1")
    bad["apiVersion"] = "xxxx"
    bad["spec"]["containers"] = [None]
    path = write(tmp_path / "cluster.yaml", [node("n1"), bad])
    result = CliRunner().invoke(app, ["schedule", "-f", str(path), "-o", "json"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (f"error: {path}: Pod a: apiVersion: 'xxxx' is not a version of Pod "
                                     "pumice reads (use v1)")
    queue_v2 = queue("q", weight=1)
    queue_v2["apiVersion"] = "scheduling.volcano.sh/v2"
    path = write(tmp_path / "queues.yaml", [queue_v2])
    result = CliRunner().invoke(app, ["schedule", "-f", str(path), "-o", "json"])
    assert result.exit_code == 2 and "Queue q: apiVersion: 'scheduling.volcano.sh/v2'" in result.output
    assert "(use scheduling.volcano.sh/v1beta1)" in result.output
