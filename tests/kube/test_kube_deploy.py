"""deploy/ on a real kube-apiserver 1.20 that enforces RBAC: it applies (dry run, then for real), and the
admission server runs as its ServiceAccount (impersonated) with the rights deploy/ grants it — no more."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from pumice.client import KubeClient, load_config
from pumice.webhooks import AdmissionServer
from tests.conftest import REPO

from .conftest import Kube

#: RBAC enforced (the test user is system:masters, every other identity gets what its roles grant).
KUBE_AUTHORIZATION = "RBAC"
DEPLOY = REPO / "deploy"
ADMISSION_SA = "system:serviceaccount:pumice-system:pumice-admission"


def test_deploy_applies_with_a_server_side_dry_run(kube: Kube) -> None:
    # The namespace first: a dry run does not create it, and everything else lives in it.
    kube.kubectl("apply", "-f", str(DEPLOY / "00-namespace.yaml"))
    proc = kube.kubectl("apply", "--dry-run=server", "-f", str(DEPLOY), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "deployment.apps/pumice-admission created (server dry run)" in proc.stdout


@pytest.fixture(scope="module")
def installed(kube: Kube) -> Iterator[None]:
    kube.kubectl("apply", "-f", str(DEPLOY))
    yield


def _can(kube: Kube, verb: str, resource: str, user: str = ADMISSION_SA) -> bool:
    resource, _, subresource = resource.partition("/")
    extra = [f"--subresource={subresource}"] if subresource else []
    proc = kube.kubectl("auth", "can-i", verb, resource, *extra, "--as", user, "--all-namespaces", check=False)
    return proc.stdout.strip() == "yes"


def test_the_service_accounts_have_the_least_rights(kube: Kube, installed: None) -> None:
    assert _can(kube, "list", "queues.scheduling.volcano.sh")
    assert _can(kube, "patch", "validatingwebhookconfigurations")
    for verb, resource in (("create", "pods"), ("delete", "queues.scheduling.volcano.sh"), ("get", "secrets"),
                           ("create", "jobs.batch.volcano.sh"), ("delete", "validatingwebhookconfigurations")):
        assert not _can(kube, verb, resource), (verb, resource)
    scheduler = "system:serviceaccount:pumice-system:pumice-scheduler"
    assert _can(kube, "create", "pods/binding", scheduler) and _can(kube, "patch", "podgroups/status", scheduler)
    assert not _can(kube, "create", "pods", scheduler) and not _can(kube, "create", "jobs.batch.volcano.sh", scheduler)
    controllers = "system:serviceaccount:pumice-system:pumice-controllers"
    assert _can(kube, "create", "pods", controllers) and not _can(kube, "create", "pods/binding", controllers)


def test_the_admission_server_works_with_the_rights_deploy_grants(kube: Kube, installed: None) -> None:
    """deploy/ registered the configurations pointing at the Service (unreachable here): the server, running as
    its ServiceAccount, points them at itself and admits with the rules, reading what its role lets it read."""
    config = load_config(str(kube.kubeconfig))
    config.headers["Impersonate-User"] = ADMISSION_SA
    client = KubeClient(config)
    server = AdmissionServer(client, host="127.0.0.1", port=0).start()
    try:
        registered = json.loads(kube.kubectl("get", "validatingwebhookconfiguration",
                                             "pumice-admission-queues-validate", "-o", "json").stdout)
        hook = registered["webhooks"][0]
        assert hook["clientConfig"]["url"] == server.url + "/queues/validate" and hook["clientConfig"]["caBundle"]
        kube.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
             "spec": {"weight": 1}} for name in ("root", "default")]))
        proc = kube.kubectl("apply", "-f", "-", check=False, input=yaml.safe_dump(
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "lost"},
             "spec": {"parent": "nowhere"}}))
        assert proc.returncode != 0 and 'parent queue "nowhere" does not exist' in proc.stderr
        pod = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        kube.kubectl("apply", "-f", "-", input=yaml.safe_dump(
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
             "metadata": {"name": "j", "namespace": "default"}, "spec": {"tasks": [{"replicas": 2, "template": pod}]}}))
        spec = json.loads(kube.kubectl("get", "vj", "j", "-o", "json").stdout)["spec"]
        assert spec["minAvailable"] == 2 and spec["tasks"][0]["name"] == "default0"
    finally:
        server.stop()  # the configurations stay (deleting them is not among its rights)
        client.close()
