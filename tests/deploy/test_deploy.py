"""deploy/ and the Dockerfile: in sync with the generators, consistent with each other, RBAC derived from use.

Applying deploy/ to the real kube-apiserver (dry run, and for real with RBAC enforced) is
``tests/kube/test_kube_deploy.py``.
"""

from __future__ import annotations

import copy
import functools
import re
from collections import defaultdict
from typing import Any

import pytest
import typer
import yaml

from pumice.api.schema import crds
from pumice.cli.main import app
from pumice.scheduler.conf import DEFAULT_CONF, parse_conf
from pumice.webhooks import Endpoint, configurations, enabled_webhooks
from tests.conftest import REPO, SHARED

from .usage import Rule, record_usage, workloads

DEPLOY = REPO / "deploy"
NAMESPACE = "pumice-system"
Obj = dict[str, Any]

#: Rights a component holds that the embedded run cannot show it using, each with the reason it needs them
#: on a real cluster. Anything else granted and not used is a failure: the roles stay the least rights.
REAL_CLUSTER_ONLY: dict[str, dict[Rule, str]] = {
    "scheduler": {
        ("", "events", "patch"): "a repeated event is folded into the first (its count goes up)",
        ("scheduling.volcano.sh", "queues", "create"): "root and default at start-up, as Volcano's scheduler",
    },
    "controllers": {
        ("", "events", "create"): "controller events (job phases, plugin and PodGroup errors)",
        ("", "events", "patch"): "a repeated event is folded into the first",
        ("", "secrets", "patch"): "the ssh plugin updates the config of a job's Secret found already there",
        ("scheduling.k8s.io", "priorityclasses", "get"): "PodGroup priority from a task's priorityClassName",
        ("scheduling.volcano.sh", "podgroups", "patch"): "a scaled job's PodGroup minMember/minResources",
        ("topology.volcano.sh", "hypernodes", "list"): "HyperNode discovery from node labels",
        ("topology.volcano.sh", "hypernodes", "watch"): "HyperNode discovery from node labels",
        ("topology.volcano.sh", "hypernodes", "create"): "HyperNode discovery from node labels",
        ("topology.volcano.sh", "hypernodes", "patch"): "HyperNode discovery from node labels",
        ("topology.volcano.sh", "hypernodes", "delete"): "HyperNode discovery from node labels",
        ("", "nodes", "list"): "HyperNode discovery reads the nodes' labels",
        ("", "nodes", "watch"): "HyperNode discovery reads the nodes' labels",
        ("topology.volcano.sh", "hypernodes/status", "patch"): "the HyperNode controller's nodeCount",
    },
    "admission": {
        ("", "pods", "list"): "a queue's first child: the pods its parent holds (tested on kube-1.20)",
        ("", "namespaces", "get"): "/podgroups/mutate: the namespace's queue annotation",
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"): "self-registration",
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "create"): "self-registration",
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"): "self-registration",
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"): "self-registration",
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "create"): "self-registration",
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"): "self-registration",
    },
}


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _read(name: str) -> tuple[Obj, ...]:
    return tuple(d for d in yaml.load_all((DEPLOY / name).read_text(), Loader=_Loader) if d)


def _documents(name: str) -> list[Obj]:
    return copy.deepcopy(list(_read(name)))


def _all() -> list[Obj]:
    return [d for path in sorted(DEPLOY.glob("*.yaml")) for d in _documents(path.name)]


def _kind(kind: str) -> list[Obj]:
    return [d for d in _all() if d["kind"] == kind]


def test_the_crds_are_what_pumice_crds_prints() -> None:
    assert _documents("01-crds.yaml") == crds(), "regenerate: pumice crds (see the file's first line)"


def test_the_webhook_configurations_are_what_the_server_registers() -> None:
    (service,) = _kind("Service")
    endpoint = Endpoint.service(service["metadata"]["namespace"], service["metadata"]["name"],
                                service["spec"]["ports"][0]["port"])
    assert _documents("07-webhooks.yaml") == configurations(enabled_webhooks(), endpoint), \
        "regenerate: pumice admission configurations (see the file's first lines)"


def test_every_namespaced_object_is_in_pumices_namespace_and_files_apply_in_order() -> None:
    names = sorted(p.name for p in DEPLOY.glob("*.yaml"))
    assert names[0] == "00-namespace.yaml" and names[1] == "01-crds.yaml"
    assert _documents("00-namespace.yaml") == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "pumice"}}}]
    for doc in _all():
        if doc["kind"] in ("ServiceAccount", "Deployment", "Service", "ConfigMap", "Role", "RoleBinding"):
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]["name"]


def test_the_scheduler_configuration_is_volcanos_default() -> None:
    (config,) = _kind("ConfigMap")
    text = config["data"]["volcano-scheduler.conf"]
    assert parse_conf(text) == parse_conf(DEFAULT_CONF)
    mounts = {d["metadata"]["name"]: d for d in _kind("Deployment")}["pumice-scheduler"]["spec"]["template"]["spec"]
    (volume,) = [v for v in mounts["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == config["metadata"]["name"]
    (mount,) = [m for m in mounts["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
    (flag,) = [a for a in mounts["containers"][0]["args"] if a.startswith("--config=")]
    assert flag == f"--config={mount['mountPath']}/volcano-scheduler.conf"


def test_deployments_service_and_webhooks_fit_together() -> None:
    accounts = {d["metadata"]["name"] for d in _kind("ServiceAccount")}
    deployments = {d["metadata"]["name"]: d for d in _kind("Deployment")}
    assert set(deployments) == {"pumice-scheduler", "pumice-controllers", "pumice-admission"}
    for deployment in deployments.values():
        pod = deployment["spec"]["template"]
        assert pod["spec"]["serviceAccountName"] in accounts
        assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        assert pod["spec"]["containers"][0]["image"] == "pumice:0.1.0"
    (service,) = _kind("Service")
    admission = deployments["pumice-admission"]["spec"]["template"]
    assert service["spec"]["selector"].items() <= admission["metadata"]["labels"].items()
    port = admission["spec"]["containers"][0]["ports"][0]
    assert service["spec"]["ports"][0]["targetPort"] == port["containerPort"]
    args = admission["spec"]["containers"][0]["args"]
    assert f"--port={port['containerPort']}" in args
    assert f"--webhook-service-name={service['metadata']['name']}" in args
    assert f"--webhook-namespace={service['metadata']['namespace']}" in args


def _command(words: list[str]) -> Any:
    """The (click) command ``pumice WORDS...``, or None."""
    command: Any = typer.main.get_command(app)
    for word in words:
        if not hasattr(command, "get_command"):
            return None
        command = command.get_command(command.context_class(command), word)  # commands load on demand
        if command is None:
            return None
    return command


@pytest.mark.parametrize("name", ["pumice-scheduler", "pumice-controllers", "pumice-admission"])
def test_the_containers_run_pumice_commands_with_flags_it_has(name: str) -> None:
    deployment = {d["metadata"]["name"]: d for d in _kind("Deployment")}[name]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    words = [a for a in args if not a.startswith("-")]
    command = _command(words)
    assert command is not None, words
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for arg in args:
        if arg.startswith("-"):
            assert arg.split("=", 1)[0] in known, f"{name}: {arg} is not a flag of pumice {' '.join(words)}"


def test_the_dockerfile_installs_the_package_and_runs_pumice() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]-slim", text, re.M)
    for source in re.findall(r"^COPY (.+) \S+$", text, re.M):
        for path in source.split():
            assert (REPO / path).exists(), path
    assert "pip install --no-cache-dir /src" in text
    assert re.search(r'^ENTRYPOINT \["pumice"\]', text, re.M)
    assert 'pumice = "pumice.cli.main:app"' in (REPO / "pyproject.toml").read_text()


# -- RBAC: the rules each component uses


def _granted(role: Obj) -> set[Rule]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


@pytest.fixture(scope="module")
def used() -> dict[str, set[Rule]]:
    return record_usage(workloads(SHARED))


@pytest.mark.parametrize("component", ["scheduler", "controllers", "admission"])
def test_each_component_holds_exactly_the_rights_it_uses(used: dict[str, set[Rule]], component: str) -> None:
    roles = {r["metadata"]["name"]: r for r in _kind("ClusterRole")}
    granted = _granted(roles[f"pumice-{component}"])
    assert used.get(component), f"the workload did not exercise the {component}"
    missing = used[component] - granted
    assert not missing, f"pumice-{component} lacks {sorted(missing)}"
    unexplained = granted - used[component] - set(REAL_CLUSTER_ONLY[component])
    assert not unexplained, f"pumice-{component} holds rights nothing uses: {sorted(unexplained)}"
    assert set(REAL_CLUSTER_ONLY[component]) <= granted


def test_the_components_never_hold_cluster_wide_power() -> None:
    for role in _kind("ClusterRole") + _kind("Role"):
        for group, resource, verb in _granted(role):
            assert "*" not in (group, resource, verb), role["metadata"]["name"]
            assert resource not in ("secrets", "configmaps") or verb not in ("get", "list", "watch"), (
                f"{role['metadata']['name']} may read {resource}")
            assert (group, resource) != ("rbac.authorization.k8s.io", "clusterroles")
    leases = {r["metadata"]["name"]: r for r in _kind("Role")}["pumice-leader-election"]
    assert _granted(leases) == {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    by_role: dict[str, set[str]] = defaultdict(set)
    for binding in _kind("ClusterRoleBinding") + _kind("RoleBinding"):
        for subject in binding["subjects"]:
            by_role[binding["roleRef"]["name"]].add(subject["name"])
    assert by_role["pumice-admission"] == {"pumice-admission"}
    assert by_role["pumice-leader-election"] == {"pumice-scheduler", "pumice-controllers"}
