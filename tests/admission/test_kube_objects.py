"""kube-apiserver's checks of the built-in kinds, Volcano's CronJob webhook, CRDs and custom resources, the
cron parser, and ``pumice validate`` on bundles of them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pumice.admission import admitted_memory_store
from pumice.cli.main import app
from pumice.cron import CronError, parse_schedule
from pumice.store import BadRequest, Invalid, MemoryStore, NotFound

from ..controllers.workloads import batch_job, deployment, statefulset

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
runner = CliRunner()


@pytest.fixture
def store() -> MemoryStore:
    return admitted_memory_store()


def refused(store: MemoryStore, resource: str, obj: dict[str, Any]) -> str:
    with pytest.raises(Invalid) as err:
        store.create(resource, obj)
    return err.value.message


def test_workload_validation_in_kubernetes_words(store: MemoryStore) -> None:
    d = deployment()
    d["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert "`selector` does not match template `labels`" in refused(store, "deployments.apps", d)
    zero = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})
    assert "may not be 0 when `maxSurge` is 0" in refused(store, "deployments.apps", zero)
    recreate = deployment(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    assert "may not be specified when strategy `type` is 'Recreate'" in refused(store, "deployments.apps", recreate)
    sts = statefulset(policy="Sometimes")
    assert ('spec.podManagementPolicy: Invalid value: "Sometimes": must be \'OrderedReady\' or \'Parallel\''
            in refused(store, "statefulsets.apps", sts))  # kube-apiserver 1.20's words (measured)
    job = batch_job()
    del job["spec"]["template"]["spec"]["restartPolicy"]
    assert 'restartPolicy: Required value: valid values: "OnFailure", "Never"' in refused(store, "jobs.batch", job)
    manual = batch_job()
    manual["spec"].update(manualSelector=True, selector={"matchLabels": {"app": "other"}})
    assert "spec.template.metadata.labels: Invalid value" in refused(store, "jobs.batch", manual)
    del manual["spec"]["selector"]  # nothing generates a manual Job's selector
    assert "spec.selector: Required value" in refused(store, "jobs.batch", manual)
    typed = deployment()
    typed["spec"]["replicas"] = "3"
    with pytest.raises(BadRequest, match=r"spec\.replicas") as bad:  # undecodable: 400, as kube-apiserver answers
        store.create("deployments.apps", typed)
    assert bad.value.code == 400


def test_workload_defaults_and_immutable_fields(store: MemoryStore) -> None:
    sts = store.create("statefulsets.apps", statefulset())
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    job = store.create("jobs.batch", batch_job(completions=None, parallelism=3))
    assert (job["spec"]["backoffLimit"], job["spec"]["parallelism"], "completions" in job["spec"]) == (6, 3, False)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "pi"
    with pytest.raises(Invalid, match="field is immutable"):
        store.patch("jobs.batch", "default", "pi", {"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}})
    store.create("deployments.apps", deployment())
    with pytest.raises(Invalid, match=r"spec\.selector: .*field is immutable"):
        store.patch("deployments.apps", "default", "web", {"spec": {"selector": {"matchLabels": {"app": "x"}}}})


_TASK = {"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}


def cronjob(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"tasks": [_TASK]}}, **spec}}


def test_volcano_cronjob_webhook(store: MemoryStore) -> None:
    created = store.create("cronjobs.batch.volcano.sh", cronjob())
    assert {k: created["spec"][k] for k in ("concurrencyPolicy", "suspend", "successfulJobsHistoryLimit",
                                             "failedJobsHistoryLimit")} == {
        "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}
    cases = {
        "schedule is not a valid cron expression": cronjob(schedule="0 0 3 * * *"),
        "schedule should not contain TZ": cronjob(schedule="TZ=UTC 0 3 * * *"),
        "invalid timeZone": cronjob(timeZone="Mars/Olympus"),
        "timeZone can't be Local": cronjob(timeZone="Local"),
        'Unsupported value: "Sometimes"': cronjob(concurrencyPolicy="Sometimes"),
    }
    for message, obj in cases.items():
        obj["metadata"]["name"] = "other"
        assert message in refused(store, "cronjobs.batch.volcano.sh", obj)
    long = cronjob()
    long["metadata"]["name"] = "x" * 53
    assert "no more than 52 characters" in refused(store, "cronjobs.batch.volcano.sh", long)
    for wrong in ("x", 5, ["a"]):  # a spec that is not an object is refused, not a server error
        obj = {**cronjob(), "spec": wrong}
        obj["metadata"] = {"name": "wrong-spec"}
        assert "spec" in refused(store, "cronjobs.batch.volcano.sh", obj)


def test_cron_schedules_as_robfig_cron_reads_them() -> None:
    t = datetime(2026, 1, 3, 10, 7, tzinfo=UTC)  # a Saturday
    assert parse_schedule("*/15 * * * *").next(t) == datetime(2026, 1, 3, 10, 15, tzinfo=UTC)
    assert parse_schedule("0 9 * * MON-FRI").next(t) == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    assert parse_schedule("@hourly").next(t) == datetime(2026, 1, 3, 11, 0, tzinfo=UTC)
    assert parse_schedule("@every 1h30m").next(t) == datetime(2026, 1, 3, 11, 37, tzinfo=UTC)
    # both day fields restricted: either matches (the 15th, or a Monday)
    assert parse_schedule("0 0 15 * 1").next(t) == datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
    assert parse_schedule("30 2 * * *", "Asia/Shanghai").next(t) == datetime(2026, 1, 3, 18, 30, tzinfo=UTC)
    for bad in ("* * * * * *", "60 * * * *", "L * * * *", "@reboot", "*/0 * * * *", "5-1 * * * *", ""):
        with pytest.raises(CronError):
            parse_schedule(bad)


@given(st.integers(0, 59), st.integers(1, 30), st.integers(0, 10**8))
def test_next_is_the_first_matching_minute(minute: int, step: int, offset: int) -> None:
    schedule = parse_schedule(f"{minute}/{step} * * * *")
    t = datetime.fromtimestamp(1_767_225_600 + offset, UTC)
    nxt = schedule.next(t)
    assert nxt is not None and nxt > t and nxt.second == 0
    assert nxt.minute >= minute and (nxt.minute - minute) % step == 0
    assert (nxt - t).total_seconds() <= 3600 + 60


def test_crds_are_checked_and_their_objects_validated(store: MemoryStore) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "required": ["size"],
                                                                  "properties": {"size": {"type": "integer",
                                                                                          "minimum": 1}}}}}}}]}}
    wrong = {**crd, "metadata": {"name": "gadgets.example.com"}}
    crds = "customresourcedefinitions.apiextensions.k8s.io"
    assert 'must be spec.names.plural+"."+spec.group' in refused(store, crds, wrong)
    digit = {**crd, "spec": {**crd["spec"], "versions": [{**crd["spec"]["versions"][0], "name": "1v"}]}}
    assert 'spec.versions[0].name: Invalid value: "1v": a DNS-1035 label' in refused(store, crds, digit)
    with pytest.raises(NotFound):
        store.list("widgets.example.com")
    created = store.create("customresourcedefinitions.apiextensions.k8s.io", crd)
    assert created["spec"]["names"]["listKind"] == "WidgetList" and created["status"]["storedVersions"] == ["v1"]
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 0}}
    assert "spec.size in body should be greater than or equal to 1" in refused(store, "widgets.example.com", widget)
    assert "spec.size: Required value" in refused(store, "widgets.example.com", {**widget, "spec": {}})
    stored = store.create("widgets.example.com", {**widget, "spec": {"size": 2, "colour": "red"}})
    assert stored["spec"] == {"size": 2}  # undeclared fields pruned
    store.delete("customresourcedefinitions.apiextensions.k8s.io", None, "widgets.example.com")
    with pytest.raises(NotFound):
        store.list("widgets.example.com")
    store.create("customresourcedefinitions.apiextensions.k8s.io", crd)  # its objects went with it
    assert store.list("widgets.example.com")[0] == []


def test_validate_bundles_with_crds_rbac_and_v1beta1(tmp_path: Path) -> None:
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text("apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: step-}\n"
                        "spec: {entrypoint: main}\n")
    alone = runner.invoke(app, ["validate", "-f", str(workflow)])
    assert alone.exit_code == 1
    assert 'no matches for kind "Workflow" in version "argoproj.io/v1alpha1"' in alone.stdout
    with_crds = runner.invoke(app, ["validate", "-f", str(CRDS / "argo-workflows.yaml"), str(workflow)])
    assert with_crds.exit_code == 0 and "3 accepted, 0 refused" in with_crds.stdout
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata: {name: high}\n"
                      "value: 1000\n---\napiVersion: scheduling.incubator.k8s.io/v1alpha1\nkind: PodGroup\n"
                      "metadata: {name: old}\nspec: {minMember: 2}\n")
    out = runner.invoke(app, ["validate", "-f", str(legacy)])
    assert out.exit_code == 1 and "1 accepted, 1 refused" in out.stdout  # kube-batch's group is not served
    assert 'no matches for kind "PodGroup" in version "scheduling.incubator.k8s.io/v1alpha1"' in out.stdout


def test_numatopology_and_resource_quota_objects_are_stored(store: MemoryStore, tmp_path: Path) -> None:
    numa = {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": "node-1"},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                     "numares": {"cpu": {"allocatable": "0-3", "capacity": 4}},
                     "cpuDetail": {"0": {"numa": 0, "socket": 0, "core": 0}}}}
    stored = store.create("numatopologies.nodeinfo.volcano.sh", numa)
    assert "namespace" not in stored["metadata"] and stored["spec"]["numares"]["cpu"]["capacity"] == 4
    bad = {**numa, "metadata": {"name": "node-2"}, "spec": {"numares": {"cpu": {"capacity": "four"}}}}
    (tmp_path / "numa.json").write_text(json.dumps(bad))
    out = runner.invoke(app, ["validate", "-f", str(tmp_path / "numa.json")])
    assert out.exit_code == 2 and "spec.numares.cpu.capacity" in out.stderr
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"cpu": "x"}}}
    (tmp_path / "quota.json").write_text(json.dumps(quota))
    out = runner.invoke(app, ["validate", "-f", str(tmp_path / "quota.json")])
    assert out.exit_code == 2 and "spec.hard.cpu" in out.stderr


def _crd(schema: dict[str, Any], **names: Any) -> dict[str, Any]:
    names = {"plural": "things", "kind": "Thing", **names}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{names['plural']}.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": names,
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


_OBJECT = {"type": "object"}


@pytest.mark.parametrize(("crd", "message"), [  # kube-apiserver 1.20's answers (measured)
    (_crd({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
     "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object "
     "fields"),
    (_crd({"properties": {"spec": _OBJECT}}),
     "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root"),
    (_crd({"type": "string"}), 'spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the '
                               "root"),
    (_crd({"type": "object", "properties": {"spec": {"type": "x"}}}),
     'properties[spec].type: Unsupported value: "x": supported values: "array", "boolean", "integer", "number", '
     '"object", "string"'),
    (_crd({"type": "object", "properties": {"spec": {"type": "null"}}}),
     "type: Forbidden: type cannot be set to null, use nullable as an alternative"),
    (_crd({"type": "object", "properties": {"spec": {"type": "array", "items": {}}}}),
     "properties[spec].items.type: Required value: must not be empty for specified array items"),
    (_crd({"type": "object", "properties": {"spec": {"type": "array"}}}),
     "properties[spec].items: Required value: must be specified"),
    (_crd({"type": "object", "properties": {"spec": None}}), "properties[spec].type: Required value"),
    (_crd(_OBJECT, plural="1things"), 'spec.names.plural: Invalid value: "1things": a DNS-1035 label'),
    (_crd(_OBJECT, singular="Bad Name"), 'spec.names.singular: Invalid value: "Bad Name": a DNS-1035 label'),
    (_crd(_OBJECT, shortNames=["Bad Name"]), 'spec.names.shortNames[0]: Invalid value: "Bad Name"'),
    (_crd(_OBJECT, kind="Th_ing"), 'spec.names.kind: Invalid value: "Th_ing": may have mixed case, but should '
                                   "otherwise match: a DNS-1035 label"),
    (_crd(_OBJECT, kind="Same", listKind="Same"),
     'spec.names.listKind: Invalid value: "Same": kind and listKind may not be the same'),
])
def test_crd_names_and_structural_schemas(store: MemoryStore, crd: dict[str, Any], message: str) -> None:
    assert message in refused(store, "customresourcedefinitions.apiextensions.k8s.io", crd)


@pytest.mark.parametrize("crd", [
    _crd({"type": "object", "properties": {"spec": {"x-kubernetes-preserve-unknown-fields": True}}}),
    _crd({"type": "object", "properties": {"spec": {"x-kubernetes-int-or-string": True}}}),
    _crd(_OBJECT, kind="thing"), _crd(_OBJECT, kind="Th-ing"), _crd(_OBJECT, listKind=""),
])
def test_crds_kube_apiserver_accepts(store: MemoryStore, crd: dict[str, Any]) -> None:
    created = store.create("customresourcedefinitions.apiextensions.k8s.io", crd)
    assert created["spec"]["names"]["listKind"] == f"{crd['spec']['names']['kind']}List"  # defaulted
