"""The API commands (job, queue, pod, apply/get/delete, describe) against a real HTTP server on loopback."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pumice.cli.main import app
from tests.builders import pod as make_pod
from tests.cli.conftest import Cluster

JOBS = "jobs.batch.volcano.sh"
QUEUES = "queues.scheduling.volcano.sh"
PODGROUPS = "podgroups.scheduling.volcano.sh"
COMMANDS = "commands.bus.volcano.sh"


def table(stdout: str) -> list[dict[str, str]]:
    """Rows of a printed table as dicts, cut at the header words' columns (cells may be empty)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    headers = [lines[0][a:b].strip() for a, b in bounds]
    return [{h: line[a:b].strip() for h, (a, b) in zip(headers, bounds, strict=True)} for line in lines[1:]]


def ok(result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.stdout}{result.stderr}"
    return result.stdout


def one_line_error(result, code: int) -> str:
    assert result.exit_code == code, f"exit {result.exit_code}: {result.stdout}{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


# ---------------------------------------------------------------------------- jobs


def test_job_run_then_list(cluster: Cluster) -> None:
    ok(cluster.run("job", "run", "-N", "train", "-r", "3", "-m", "2", "-R", "cpu=500m,memory=1Gi", "-i", "img:1"))
    rows = {r["Name"]: r for r in table(ok(cluster.run("job", "list")))}
    row = rows["train"]
    assert (row["Replicas"], row["Min"], row["JobType"]) == ("3", "2", "Batch")
    assert list(row) == ["Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running",
                         "Succeeded", "Failed", "Unknown", "RetryCount"][: len(row)]

    job = cluster.client.get(JOBS, "train", "default")
    task = job["spec"]["tasks"][0]
    assert job["spec"]["minAvailable"] == 2 and job["spec"]["schedulerName"] == "volcano"
    assert task["replicas"] == 3
    container = task["template"]["spec"]["containers"][0]
    assert container["image"] == "img:1"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "1Gi"}  # the requests (vcctl: 1000m, 100Mi)

    # filters: --selector is a part of the name (vcctl), --queue the job's queue
    assert "train" not in ok(cluster.run("job", "list", "--selector", "nomatch"))
    assert "train" in ok(cluster.run("job", "list", "--selector", "rai"))
    assert "train" in ok(cluster.run("job", "list", "--queue", "default"))
    all_rows = table(ok(cluster.run("job", "list", "--all-namespaces")))
    mine = next(r for r in all_rows if r["Name"] == "train")
    assert mine["Namespace"] == "default"

    out = ok(cluster.run("job", "view", "-N", "train"))
    assert "Min Available:" in out and "cpu=500m, memory=1Gi" in out

    ok(cluster.run("job", "delete", "-N", "train"))
    assert "train" not in ok(cluster.run("job", "list"))


def test_job_run_from_file_and_queue(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: from-file}
        spec:
          minAvailable: 1
          schedulerName: volcano
          tasks:
          - name: worker
            replicas: 2
            template:
              spec:
                containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
        """))
    ok(cluster.run("job", "run", "-f", str(path), "--queue", "batch"))
    job = cluster.client.get(JOBS, "from-file", "default")
    assert job["spec"]["queue"] == "batch" and job["spec"]["tasks"][0]["name"] == "worker"
    rows = table(ok(cluster.run("job", "list", "-q", "batch")))
    assert [r["Name"] for r in rows] == ["from-file"]


def test_suspend_and_resume_create_commands(cluster: Cluster) -> None:
    ok(cluster.run("job", "run", "-N", "pausable"))
    job = cluster.client.get(JOBS, "pausable", "default")
    ok(cluster.run("job", "suspend", "-N", "pausable"))
    ok(cluster.run("job", "resume", "-N", "pausable", "-n", "default"))
    commands = [c for c in cluster.client.list(COMMANDS, "default")
                if (c.get("target") or {}).get("name") == "pausable"]
    assert sorted(c["action"] for c in commands) == ["AbortJob", "ResumeJob"]
    for cmd in commands:
        ref = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "pausable",
               "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        assert cmd["target"] == ref
        assert cmd["metadata"]["ownerReferences"] == [ref]
        assert cmd["metadata"]["name"].startswith(f"pausable-{cmd['action'].lower()}-")

    line = one_line_error(cluster.run("job", "suspend", "-N", "no-such-job"), 1)
    assert "NotFound" in line and "no-such-job" in line


def test_job_run_bad_flags_exit_2(cluster: Cluster) -> None:
    assert "blank" in one_line_error(cluster.run("job", "run"), 2)
    assert "invalid quantity" in one_line_error(cluster.run("job", "run", "-N", "x", "-R", "cpu=lots"), 2)
    assert "expected <resource>=<value>" in one_line_error(cluster.run("job", "run", "-N", "x", "-L", "cpu"), 2)
    assert "--min" in one_line_error(cluster.run("job", "run", "-N", "x", "-r", "2", "-m", "3"), 2)


# ---------------------------------------------------------------------------- queues


def test_queue_create_operate_list_delete(cluster: Cluster) -> None:
    ok(cluster.run("queue", "create", "-n", "research", "-w", "3", "--capability", "cpu=8,memory=16Gi",
                   "--deserved", "cpu=4", "--guarantee", "cpu=2"))
    queue = cluster.client.get(QUEUES, "research")
    assert queue["spec"]["weight"] == 3
    assert queue["spec"]["capability"] == {"cpu": "8", "memory": "16Gi"}
    assert queue["spec"]["deserved"] == {"cpu": "4"}
    assert queue["spec"]["guarantee"] == {"resource": {"cpu": "2"}}

    # PodGroup counts per phase are computed client-side, like vcctl
    for name, phase in (("pg-a", "Running"), ("pg-b", "Inqueue"), ("pg-c", None)):
        cluster.client.create(PODGROUPS, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                          "metadata": {"name": name}, "spec": {"minMember": 1, "queue": "research"}},
                              "default")
        if phase:
            cluster.client.patch(PODGROUPS, name, {"status": {"phase": phase}}, "default", subresource="status")
    rows = {r["Name"]: r for r in table(ok(cluster.run("queue", "list")))}
    row = rows["research"]
    assert (row["Weight"], row["State"], row["Parent"]) == ("3", "Open", "root")
    assert (row["Inqueue"], row["Pending"], row["Running"], row["Unknown"], row["Completed"]) == (
        "1", "1", "1", "0", "0")
    got = table(ok(cluster.run("queue", "get", "-n", "research")))
    assert got == [row]

    ok(cluster.run("queue", "operate", "-n", "research", "-a", "close"))
    ok(cluster.run("queue", "operate", "-n", "research", "-a", "open"))
    commands = [c for c in cluster.client.list(COMMANDS, "default")
                if (c.get("target") or {}).get("name") == "research"]
    assert sorted(c["action"] for c in commands) == ["CloseQueue", "OpenQueue"]
    assert all(c["target"]["kind"] == "Queue" and c["target"]["uid"] == queue["metadata"]["uid"] for c in commands)

    ok(cluster.run("queue", "operate", "-n", "research", "-a", "update", "-w", "7"))
    assert cluster.client.get(QUEUES, "research")["spec"]["weight"] == 7
    assert cluster.client.get(QUEUES, "research")["spec"]["capability"] == {"cpu": "8", "memory": "16Gi"}
    assert "weight must be specified" in one_line_error(
        cluster.run("queue", "operate", "-n", "research", "-a", "update"), 2)
    assert "invalid" in one_line_error(cluster.run("queue", "operate", "-n", "research", "-a", "drain"), 2)
    assert "AlreadyExists" in one_line_error(cluster.run("queue", "create", "-n", "research"), 1)

    ok(cluster.run("queue", "delete", "-n", "research"))
    assert "research" not in ok(cluster.run("queue", "list"))
    assert "NotFound" in one_line_error(cluster.run("queue", "get", "-n", "research"), 1)


# ---------------------------------------------------------------------------- apply / get / delete

MANIFEST = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: applied}
spec: {weight: 2, capability: {cpu: "10"}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: applied-job}
spec:
  minAvailable: 2
  queue: applied
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""


def test_apply_get_delete_round_trip(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(MANIFEST)
    assert ok(cluster.run("apply", "-f", str(path))).splitlines() == [
        "queue.scheduling.volcano.sh/applied created",
        "job.batch.volcano.sh/applied-job created",
    ]
    assert ok(cluster.run("apply", "-f", str(path))).splitlines() == [
        "queue.scheduling.volcano.sh/applied unchanged",
        "job.batch.volcano.sh/applied-job unchanged",
    ]
    path.write_text(MANIFEST.replace("weight: 2", "weight: 5"))
    assert ok(cluster.run("apply", "-f", str(path))).splitlines() == [
        "queue.scheduling.volcano.sh/applied configured",
        "job.batch.volcano.sh/applied-job unchanged",
    ]
    queue = json.loads(ok(cluster.run("get", "queue", "applied", "-o", "json")))
    assert queue["spec"] == {"weight": 5, "capability": {"cpu": "10"}} | {
        k: v for k, v in queue["spec"].items() if k not in ("weight", "capability")}

    job = yaml.safe_load(ok(cluster.run("get", "vj", "applied-job", "-o", "yaml")))
    assert job["kind"] == "Job" and job["spec"]["queue"] == "applied"
    listed = yaml.safe_load(ok(cluster.run("get", "jobs", "-o", "yaml")))
    assert listed["kind"] == "List" and "applied-job" in [i["metadata"]["name"] for i in listed["items"]]
    assert "job.batch.volcano.sh/applied-job" in ok(cluster.run("get", "jobs", "-o", "name")).splitlines()
    rows = {r["Name"]: r for r in table(ok(cluster.run("get", "jobs")))}
    assert rows["applied-job"]["Replicas"] == "2"
    wide = table(ok(cluster.run("get", "jobs", "-o", "wide", "-A")))
    assert any(r["Name"] == "applied-job" and r["Queue"] == "applied" for r in wide)

    assert ok(cluster.run("delete", "-f", str(path))).splitlines() == [
        'queue.scheduling.volcano.sh "applied" deleted',
        'job.batch.volcano.sh "applied-job" deleted',
    ]
    assert "NotFound" in one_line_error(cluster.run("get", "queue", "applied"), 1)
    assert "NotFound" in one_line_error(cluster.run("delete", "queue", "applied"), 1)
    assert ok(cluster.run("delete", "queue", "applied", "--ignore-not-found")) == ""


def test_apply_status_and_delete_by_name(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Node
        metadata: {name: n-apply}
        status:
          allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
          capacity: {cpu: "8", memory: 16Gi, pods: "110"}
        """))
    assert ok(cluster.run("apply", "-f", str(path))).strip() == "node/n-apply created"
    assert cluster.client.get("nodes", "n-apply")["status"]["allocatable"]["cpu"] == "8"
    assert ok(cluster.run("apply", "-f", str(path))).strip() == "node/n-apply unchanged"
    rows = {r["Name"]: r for r in table(ok(cluster.run("get", "nodes")))}
    assert rows["n-apply"]["CPU"] == "8"
    assert ok(cluster.run("delete", "node", "n-apply")).strip() == 'node "n-apply" deleted'


def test_unknown_resource_word_exit_2(cluster: Cluster) -> None:
    assert "frobnicators" in one_line_error(cluster.run("get", "frobnicators"), 2)


# ---------------------------------------------------------------------------- pods


def test_pod_list_by_job_and_queue(cluster: Cluster) -> None:
    kc = cluster.client
    job, in_qp = "volcano.sh/job-name", {"scheduling.volcano.sh/queue-name": "qp"}
    # schedulerName unset: nothing places them, the test says where they are
    for pod in (make_pod("pl-0", labels={job: "pl"}, annotations=in_qp, node="node-1", phase="Running", scheduler=None),
                make_pod("pl-1", labels={job: "pl"}, annotations=in_qp, phase="Pending", scheduler=None),
                make_pod("other-0", labels={job: "other"}, node="node-2", phase="Running", scheduler=None)):
        created = kc.create("pods", pod, "default")
        kc.patch("pods", created["metadata"]["name"], {"status": pod["status"]}, "default", subresource="status")
    rows = table(ok(cluster.run("pod", "list", "--job", "pl")))
    assert [(r["Name"], r["Status"], r["Node"]) for r in rows] == [("pl-0", "Running", "node-1"),
                                                                   ("pl-1", "Pending", "<none>")]
    assert list(rows[0]) == ["Name", "Ready", "Status", "Restart", "Age", "Node"]
    assert [r["Name"] for r in table(ok(cluster.run("pod", "list", "-q", "qp")))] == ["pl-0", "pl-1"]
    everything = table(ok(cluster.run("pod", "list", "-A")))
    assert {"pl-0", "pl-1", "other-0"} <= {r["Name"] for r in everything}
    assert all(r["Namespace"] == "default" for r in everything)


# ---------------------------------------------------------------------------- describe


def _job_with_podgroup(cluster: Cluster, name: str, queue: str, pg_phase: str, message: str | None,
                       min_resources: dict | None = None) -> None:
    kc = cluster.client
    ok(cluster.run("job", "run", "-N", name, "-r", "4", "-m", "4", "-q", queue, "-R", "cpu=2"))
    job = kc.get(JOBS, name, "default")
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": f"{name}-{job['metadata']['uid']}",
                       "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name,
                                            "uid": job["metadata"]["uid"], "controller": True}]},
          "spec": {"minMember": 4, "queue": queue, **({"minResources": min_resources} if min_resources else {})}}
    created = kc.create(PODGROUPS, pg, "default")
    status: dict = {"phase": pg_phase}
    if message:
        status["conditions"] = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                 "message": message, "transitionID": "t1",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    kc.patch(PODGROUPS, created["metadata"]["name"], {"status": status}, "default", subresource="status")


def _queue(cluster: Cluster, name: str, capability: str | None, allocated: dict | None) -> None:
    args = ["queue", "create", "-n", name]
    if capability:
        args += ["--capability", capability]
    ok(cluster.run(*args))
    if allocated is not None:
        cluster.client.patch(QUEUES, name, {"status": {"allocated": allocated, "state": "Open"}},
                             subresource="status")


def _why(out: str) -> list[str]:
    lines = out.splitlines()
    start = lines.index("Why it waits:")
    section = []
    for line in lines[start + 1:]:
        if not line.startswith("  - "):
            break
        section.append(line[4:])
    return section


def test_describe_job_says_why_the_gang_is_unschedulable(cluster: Cluster) -> None:
    _queue(cluster, "qd1", "cpu=16", {"cpu": "6"})
    message = ("3/4 tasks in gang unschedulable: 0/5 nodes are unavailable: "
               "2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu.")
    _job_with_podgroup(cluster, "waits", "qd1", "Inqueue", message)
    out = ok(cluster.run("describe", "job", "waits"))
    why = _why(out)
    assert why[0] == "3 of 4 pods of the gang cannot be placed together (minAvailable not met)."
    assert why[1] == ("No node fits a pod (0 of 5 nodes): 2 node(s) had untolerated taint {gpu: true}, "
                      "3 Insufficient cpu.")
    assert len(why) == 2  # the queue has room: nothing said about it
    # the section is at the top, the details follow
    assert out.index("Why it waits:") < out.index("Tasks:") < out.index("PodGroup:") < out.index("Queue:\n")
    assert message in out  # the raw condition, under PodGroup
    queue_block = out[out.index("Queue:\n"):]
    assert "Capability:" in queue_block and "cpu=16" in queue_block and "cpu=6" in queue_block


def test_describe_job_not_admitted_by_queue_quota(cluster: Cluster) -> None:
    _queue(cluster, "qd2", "cpu=8", {"cpu": "6"})
    message = "queue qd2 resource quota insufficient: needs cpu 14, capability cpu 8"
    _job_with_podgroup(cluster, "quota", "qd2", "Pending", message, {"cpu": "8"})
    why = _why(ok(cluster.run("describe", "job", "quota")))
    assert why[0].startswith("Not admitted yet (PodGroup Pending)")
    assert why[1] == f"Queue quota: {message}."
    assert why[2] == "Queue qd2 has no room: cpu: capability 8, allocated 6, this job needs 8 more."


def test_describe_job_topology_and_closed_queue(cluster: Cluster) -> None:
    _queue(cluster, "qd3", None, None)
    cluster.client.patch(QUEUES, "qd3", {"status": {"state": "Closed"}}, subresource="status")
    message = ("4/4 tasks in gang unschedulable: no tier-1 HyperNode has 16 free GPUs; best has 12 (leaf-3)")
    _job_with_podgroup(cluster, "topo", "qd3", "Inqueue", message)
    why = _why(ok(cluster.run("describe", "job", "topo")))
    assert "Queue qd3 is Closed: only Open queues admit and place jobs." in why
    assert "Network topology: no tier-1 HyperNode has 16 free GPUs; best has 12 (leaf-3)." in why


def test_describe_job_without_podgroup_and_missing(cluster: Cluster) -> None:
    ok(cluster.run("job", "run", "-N", "fresh", "-q", "nowhere"))
    why = _why(ok(cluster.run("describe", "job", "fresh")))
    assert any("No PodGroup" in w for w in why)
    assert "Queue nowhere does not exist: create it or submit to an existing queue." in why
    assert "NotFound" in one_line_error(cluster.run("describe", "job", "ghost"), 1)


# ---------------------------------------------------------------------------- errors (no server needed)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_one_line_exit_1(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    for args in (["job", "list"], ["queue", "list"], ["get", "pods"], ["describe", "job", "x"]):
        result = CliRunner().invoke(app, [*args, "--kubeconfig", str(config)])
        line = one_line_error(result, 1)
        assert line == f"error: cannot reach http://127.0.0.1:{port}: connection refused"
    result = CliRunner().invoke(app, ["job", "list", "--server", f"http://127.0.0.1:{port}",
                                      "--kubeconfig", str(config)])
    assert one_line_error(result, 1).endswith("connection refused")


def test_malformed_manifest_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [\n")
    for args in (["apply", "-f", str(bad)], ["delete", "-f", str(bad)]):
        line = one_line_error(CliRunner().invoke(app, args), 2)
        assert str(bad) in line and "invalid YAML" in line
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                       "  containers: [{name: c, resources: {requests: {cpu: 1x}}}]\n")
    line = one_line_error(CliRunner().invoke(app, ["apply", "-f", str(invalid)]), 2)
    assert "cpu" in line and "1x" in line
    line = one_line_error(CliRunner().invoke(app, ["apply", "-f", str(tmp_path / "missing.yaml")]), 2)
    assert "no such file" in line


def test_no_kubeconfig_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    line = one_line_error(CliRunner().invoke(app, ["job", "list"]), 2)
    assert "no kubeconfig found" in line
    line = one_line_error(CliRunner().invoke(app, ["job", "list", "--kubeconfig", str(tmp_path / "nope")]), 2)
    assert "no such file" in line


def test_describe_queue(cluster: Cluster) -> None:
    _queue(cluster, "qdesc", "cpu=8", {"cpu": "3"})
    ok(cluster.run("job", "run", "-N", "in-qdesc", "-q", "qdesc"))
    out = ok(cluster.run("describe", "queue", "qdesc"))
    assert "Capability:" in out and "cpu=8" in out and "cpu=3" in out
    assert "in-qdesc" in out.split("Jobs:")[1]


def test_apply_from_stdin_and_namespace_checks(cluster: Cluster) -> None:
    manifest = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                "metadata: {name: from-stdin}\nspec: {weight: 4}\n")
    assert ok(cluster.run("apply", "-f", "-", input=manifest)).strip() == (
        "queue.scheduling.volcano.sh/from-stdin created")
    assert cluster.client.get(QUEUES, "from-stdin")["spec"]["weight"] == 4
    job = MANIFEST.split("---\n")[1].replace("metadata: {name: applied-job}",
                                             "metadata: {name: ns-job, namespace: other}")
    line = one_line_error(cluster.run("apply", "-f", "-", "-n", "default", input=job), 2)
    assert 'namespace from the provided object "other" does not match the namespace "default"' in line


def test_get_watch_prints_a_row_per_change(cluster: Cluster) -> None:
    _queue(cluster, "watch-a", None, None)
    argv = [sys.executable, "-m", "pumice.cli.main", "get", "queues", "-w", "--timeout", "5",
            "--kubeconfig", str(cluster.kubeconfig)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        lines = []
        while not any(line.startswith("watch-a") for line in lines):  # the first table is out: the watch runs
            lines.append(proc.stdout.readline())
        cluster.client.create(QUEUES, {"metadata": {"name": "watch-b"}, "spec": {"weight": 3}})
        cluster.client.patch(QUEUES, "watch-b", {"spec": {"weight": 4}})
        cluster.client.delete(QUEUES, "watch-b")
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith("watch-b")]
    assert [r[1] for r in rows] == ["3", "4", "4"] and rows[-1][-1] == "(deleted)"


def test_describe_pod_says_why_it_is_not_placed(cluster: Cluster) -> None:
    kc = cluster.client
    pod = make_pod("dp-0", labels={"volcano.sh/job-name": "dp"}, annotations={"scheduling.volcano.sh/queue-name": "qp"},
                   phase="Pending", scheduler=None)
    kc.create("pods", pod, "default")
    message = "0/3 nodes are unavailable: 3 Insufficient cpu."
    kc.patch("pods", "dp-0", {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}},
        "default", subresource="status")
    out = ok(cluster.run("describe", "pod", "dp-0"))
    assert out.splitlines()[2:4] == ["Why it waits:", f"  - Unschedulable: {message}"]
    assert "Job:" in out and " dp\n" in out


def test_apply_a_crd_then_its_objects_and_legacy_priority_classes(cluster: Cluster, tmp_path: Path) -> None:
    """What a real API server does (kube-apiserver 1.20) pumice does: a CRD serves its kind once applied (after
    a moment there, at once here); PriorityClass is accepted under scheduling.k8s.io/v1beta1 and stored as v1."""
    import time

    crds = Path(__file__).resolve().parents[1] / "fixtures" / "crds" / "argo-workflows.yaml"
    out = ok(cluster.run("apply", "-f", str(crds))).splitlines()
    assert out == ["customresourcedefinition.apiextensions.k8s.io/workflows.argoproj.io created",
                   "customresourcedefinition.apiextensions.k8s.io/workflowtemplates.argoproj.io created"]
    workflow = tmp_path / "wf.yaml"
    workflow.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: hello}\n"
                        "spec: {entrypoint: main, templates: [{name: main, container: {image: alpine}}]}\n")
    deadline = time.monotonic() + 30
    while True:
        result = CliRunner().invoke(app, ["apply", "-f", str(workflow), "--kubeconfig", str(cluster.kubeconfig)])
        if result.exit_code == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert ok(result).strip() == "workflow.argoproj.io/hello created"
    stored = cluster.client.get(cluster.client.resource_for("argoproj.io/v1alpha1", "Workflow"), "hello")
    assert stored["spec"]["templates"][0]["container"]["image"] == "alpine"
    pc = tmp_path / "pc.yaml"
    pc.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata: {name: legacy-high}\n"
                  "value: 1000\n")
    assert ok(cluster.run("apply", "-f", str(pc))).strip() == "priorityclass.scheduling.k8s.io/legacy-high created"
    assert cluster.client.get("priorityclasses", "legacy-high")["value"] == 1000
