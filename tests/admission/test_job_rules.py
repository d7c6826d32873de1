"""Job and PodGroup admission: defaults, spec rules, queue rules; and ``pumice validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pumice.admission import admitted_memory_store, job_problems
from pumice.cli.main import app
from pumice.controllers import ensure_default_queues
from pumice.store import Invalid, MemoryStore
from tests.builders import queue
from tests.builders import vcjob as job

from ..controllers.harness import JOBS, PODGROUPS, QUEUES


@pytest.fixture
def store() -> MemoryStore:
    s = admitted_memory_store()
    ensure_default_queues(s)
    return s


def _problem(store: MemoryStore, obj: dict[str, Any]) -> str:
    with pytest.raises(Invalid) as err:
        store.create(JOBS, obj)
    assert "\n" not in err.value.message
    return getattr(err.value, "refusal", err.value.message)


def test_job_defaults_are_filled_in(store: MemoryStore) -> None:
    body = job("d", replicas=3)
    del body["spec"]["schedulerName"]
    body["spec"]["plugins"] = {"mpi": []}
    spec = store.create(JOBS, body)["spec"]
    assert spec["queue"] == "default" and spec["schedulerName"] == "volcano" and spec["maxRetry"] == 3
    assert spec["minAvailable"] == 3 and spec["tasks"][0]["minAvailable"] == 3
    assert set(spec["plugins"]) == {"mpi", "svc", "ssh"}


def test_min_available_above_replicas(store: MemoryStore) -> None:
    assert "job minAvailable 5 is greater than the total replicas 2 of its tasks" in _problem(
        store, job("x", replicas=2, min_available=5))


def test_task_names_unique_and_dns1123(store: MemoryStore) -> None:
    body = job("x")
    body["spec"]["tasks"].append(dict(body["spec"]["tasks"][0]))
    assert "duplicated task name 'main'" in _problem(store, body)
    body = job("x")
    body["spec"]["tasks"][0]["name"] = "Main_Task"
    # the CRD's schema refuses it first (422), as on a cluster; Volcano's webhook has the same rule
    assert 'spec.tasks.name: Invalid value: "Main_Task": spec.tasks.name in body should match' in _problem(store, body)
    assert "task name 'Main_Task' is not a valid DNS-1123 label" in "; ".join(job_problems(body))


def test_policies_rules(store: MemoryStore) -> None:
    cases = [
        ([{"event": "PodFailed", "exitCode": 1, "action": "RestartJob"}], "must not specify event and exitCode"),
        ([{"action": "RestartJob"}], "either event or exitCode must be specified"),
        ([{"exitCode": 0, "action": "RestartJob"}], "0 is not a valid error code"),
        ([{"event": "PodFailed", "action": "Explode"}], "invalid policy action 'Explode'"),
        ([{"event": "PodFailed", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
         "duplicate event 'PodFailed'"),
        ([{"event": "*", "action": "RestartJob"}, {"event": "PodEvicted", "action": "AbortJob"}],
         "event *, there must be no other"),
        ([{"event": "NoSuchEvent", "action": "RestartJob"}], 'spec.policies.event: Unsupported value: "NoSuchEvent"'),
    ]
    for policies, expected in cases:
        assert expected in _problem(store, job("x", policies=policies))


def test_depends_on_must_be_a_dag(store: MemoryStore) -> None:
    body = job("x")
    a = body["spec"]["tasks"][0]
    body["spec"]["tasks"] = [{**a, "name": "a", "dependsOn": {"name": ["b"]}},
                             {**a, "name": "b", "dependsOn": {"name": ["a"]}}]
    assert "do not form a directed acyclic graph" in _problem(store, body)
    body["spec"]["tasks"][1]["dependsOn"] = {"name": ["zzz"]}
    assert "depends on task 'zzz', which does not exist" in _problem(store, body)


def test_partition_math(store: MemoryStore) -> None:
    body = job("x", replicas=5)
    body["spec"]["tasks"][0]["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2}
    assert "replicas 5 must equal totalPartitions 2 x partitionSize 2 = 4" in _problem(store, body)
    body = job("x", replicas=4)
    body["spec"]["tasks"][0]["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}
    body["spec"]["tasks"][0]["minAvailable"] = 3
    assert "minAvailable 3 must equal minPartitions 1 x partitionSize 2 = 2" in _problem(store, body)


def test_queue_must_exist_be_open_not_root_and_a_leaf(store: MemoryStore) -> None:
    assert 'queue "nope" does not exist' in _problem(store, job("x", queue="nope"))
    assert 'can not submit job to the root queue' in _problem(store, job("x", queue="root"))
    store.create(QUEUES, queue("shut"))
    store.patch(QUEUES, None, "shut", {"status": {"state": "Closed"}}, subresource="status")
    assert 'queue with state Open, queue "shut" status is Closed' in _problem(store, job("x", queue="shut"))
    store.create(QUEUES, queue("p", deserved={"cpu": "4"}))
    store.create(QUEUES, queue("k", parent="p", deserved={"cpu": "4"}))
    assert 'leaf queue, queue "p" has 1 child queues' in _problem(store, job("x", queue="p"))
    store.create(JOBS, job("ok", queue="k"))


def test_job_update_may_only_scale(store: MemoryStore) -> None:
    store.create(JOBS, job("x", replicas=2))
    store.patch(JOBS, "default", "x", {"spec": {"minAvailable": 1}})
    with pytest.raises(Invalid, match="may only change minAvailable"):
        store.patch(JOBS, "default", "x", {"spec": {"queue": "other"}})


def test_schema_errors_are_one_line(store: MemoryStore) -> None:
    body = job("x")
    body["spec"]["tasks"][0]["replicas"] = "three"
    message = _problem(store, body)
    assert message.startswith('Job "x": spec.tasks[0].replicas:')


def test_podgroup_queue_must_be_a_leaf(store: MemoryStore) -> None:
    store.create(QUEUES, queue("p", deserved={"cpu": "4"}))
    store.create(QUEUES, queue("k", parent="p", deserved={"cpu": "4"}))
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 1, "queue": "p"}}
    with pytest.raises(Invalid) as err:
        store.create(PODGROUPS, pg)
    assert err.value.refusal == (
        'podgroup "default/g": can only submit a PodGroup to a leaf queue, queue "p" has 1 child queues')
    pg["spec"]["queue"] = "k"
    store.create(PODGROUPS, pg)
    del pg["spec"]["queue"]
    pg["metadata"]["name"] = "g2"
    assert store.create(PODGROUPS, pg)["spec"]["queue"] == "default"


def test_validate_cli_accepts_the_quickstart(shared: Path) -> None:
    files = sorted((shared / "scenarios" / "quickstart").glob("*.yaml"))
    result = CliRunner().invoke(app, ["validate", "-f", *map(str, files)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("21 accepted, 0 refused")


def test_validate_cli_reports_every_refusal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
        "spec: {deserved: {cpu: '8'}, capability: {cpu: '4'}}\n---\n"
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
        "spec: {queue: q, tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]}\n"
    )
    result = CliRunner().invoke(app, ["validate", "-f", str(bad)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines[0] == (f"refused: {bad}: object 1 (Queue q): admission webhook \"validatequeue.volcano.sh\" denied "
                        "the request: queue \"q\": deserved must not exceed capability: "
                        "deserved cpu=8 > capability cpu=4")
    assert lines[1].startswith(f"refused: {bad}: object 2 (Job default/j):") and 'queue "q" does not exist' in lines[1]
    assert lines[2] == "0 accepted, 2 refused"


def test_validate_cli_unreadable_input_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [\n")
    result = CliRunner().invoke(app, ["validate", "-f", str(broken)])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["validate", "-f", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2


def test_an_unchanged_manifest_applied_again_is_no_change(store: MemoryStore) -> None:
    """Issue 18 (Volcano's issue #2238): kubectl's merge patch of an unchanged manifest replaces the task list with
    the manifest's, without the defaults the create added (a task's ``maxRetry``, ``minAvailable``): the update
    must be no change, not a refusal. A real change to an immutable field is still refused, with Volcano's
    message."""
    manifest = job("again", replicas=2)
    created = store.create(JOBS, manifest)
    assert created["spec"]["tasks"][0] != manifest["spec"]["tasks"][0]  # the create filled in task defaults
    patched = store.patch(JOBS, "default", "again", {"spec": {"tasks": manifest["spec"]["tasks"]}})
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # no write at all
    assert patched["spec"] == created["spec"]
    changed = job("again", replicas=2)
    changed["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    with pytest.raises(Invalid) as err:
        store.patch(JOBS, "default", "again", {"spec": {"tasks": changed["spec"]["tasks"]}})
    assert err.value.code == 400
    assert "job updates may only change minAvailable and the tasks' replicas and minAvailable" in err.value.message
    scaled = job("again", replicas=3)
    assert store.patch(JOBS, "default", "again", {"spec": {"tasks": scaled["spec"]["tasks"]}})["spec"]["tasks"][0][
        "replicas"] == 3


def test_validate_cli_refuses_what_kube_apiserver_refuses(tmp_path: Path) -> None:
    """The same validation backs ``pumice validate``: Kubernetes' rules of every kind, with kube-apiserver's words."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name, labels: {'a b': x}}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '-4', nvidia.com/gpu: '1'}}}]}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '-8'}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec: {containers: [{name: c, image: x}]}\n"
    )
    result = CliRunner().invoke(app, ["validate", "-f", str(bad)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines[0].startswith(f'refused: {bad}: object 1 (Pod default/Bad_Name): Pod "Bad_Name" is invalid: [')
    for expected in ("metadata.name: Invalid value", "metadata.labels: Invalid value",
                     'requests[cpu]: Invalid value: "-4": must be greater than or equal to 0',
                     "limits: Required value: Limit must be set for non overcommitable resources"):
        assert expected in lines[0]
    assert 'status.capacity.cpu: Invalid value: "-8"' in lines[1]
    assert lines[2] == "1 accepted, 2 refused"
