"""``pumice jobflow`` / ``pumice jobtemplate``: vcctl's verbs, flags and output, against a real HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .conftest import Cluster
from .test_cli import ok, one_line_error

TEMPLATES = """\
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step-a}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step-b, namespace: default}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template: {spec: {containers: [{name: c, image: busybox}]}}
"""

FLOW = """\
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: two-steps}
spec:
  jobRetainPolicy: delete
  flows:
  - name: step-a
  - name: step-b
    dependsOn: {targets: [step-a]}
"""


def test_jobtemplate_and_jobflow_verbs(cluster: Cluster, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TEMPLATES)
    (tmp_path / "f.yaml").write_text(FLOW)
    out = ok(cluster.run("jobtemplate", "create", "-f", str(tmp_path / "t.yaml")))
    assert out.splitlines() == ["Created JobTemplate: default/step-a", "Created JobTemplate: default/step-b"]
    listed = ok(cluster.run("jobtemplate", "list")).splitlines()
    assert listed[0].split() == ["Name", "Namespace"] and listed[0].startswith("Name      Namespace")
    assert [line.split() for line in listed[1:]] == [["step-a", "default"], ["step-b", "default"]]
    assert ok(cluster.run("jobtemplate", "get", "-N", "step-b")).splitlines()[1].split() == ["step-b", "default"]
    described = json.loads(ok(cluster.run("jobtemplate", "describe", "-N", "step-a", "-o", "json")))
    assert described["kind"] == "JobTemplate" and described["spec"]["minAvailable"] == 1

    created = ok(cluster.run("jobflow", "create", "-f", str(tmp_path / "f.yaml")))
    assert created == "Created JobFlow: default/two-steps\n"
    rows = ok(cluster.run("jobflow", "list", "--all-namespaces")).splitlines()
    assert rows[0].split() == ["Name", "Namespace", "Phase", "Age"] and rows[1].split()[:2] == ["two-steps", "default"]
    flow = yaml.safe_load(ok(cluster.run("jobflow", "describe", "-N", "two-steps")))
    assert flow["kind"] == "JobFlow" and [f["name"] for f in flow["spec"]["flows"]] == ["step-a", "step-b"]
    assert ok(cluster.run("jobflow", "get", "-N", "two-steps")).splitlines()[1].split()[0] == "two-steps"

    assert "name is mandatory to get the particular jobflow details" in one_line_error(
        cluster.run("jobflow", "get"), 2)
    assert "jobflow name must be specified" in one_line_error(cluster.run("jobflow", "delete"), 2)
    (tmp_path / "job.yaml").write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n")
    wrong = cluster.run("jobflow", "create", "-f", str(tmp_path / "job.yaml"))
    assert "is a Job, not a JobFlow" in one_line_error(wrong, 2)

    assert ok(cluster.run("jobflow", "delete", "-N", "two-steps")) == "Deleted JobFlow: default/two-steps\n"
    out = ok(cluster.run("jobtemplate", "delete", "-f", str(tmp_path / "t.yaml")))
    assert out.splitlines() == ["Deleted JobTemplate: default/step-a", "Deleted JobTemplate: default/step-b"]
    assert ok(cluster.run("jobtemplate", "list")) == "No resources found\n"
    missing = cluster.run("jobflow", "delete", "-N", "two-steps")
    assert missing.exit_code != 0 and "not found" in missing.stderr.lower()
