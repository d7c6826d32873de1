"""``pumice.client``: kubeconfig search, discovery, CRUD, selectors, merge-patch and watch over real HTTP."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from pumice.client import ApiError, ConfigError, KubeClient, UnknownResource, find_kubeconfig, load_config
from tests.cli.conftest import Cluster
from tests.imports import imported_after

QUEUES = "queues.scheduling.volcano.sh"


def _kubeconfig(path: Path, server: str, namespace: str | None = None, token: str = "x") -> Path:
    context: dict = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, **(
            {"insecure-skip-tls-verify": True} if server.startswith("https://127.") else {})}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": context}],
    }))
    return path


# ---------------------------------------------------------------------------- kubeconfig search (no server)


def test_kubeconfig_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("PUMICE_HOME", raising=False)
    kube = _kubeconfig(home / ".kube" / "config", "https://kube:6443")
    assert find_kubeconfig() == str(kube)
    user_pumice = _kubeconfig(home / ".pumice" / "kubeconfig", "https://127.0.0.1:6443")
    assert find_kubeconfig() == str(user_pumice)
    local = _kubeconfig(work / ".pumice" / "kubeconfig", "https://127.0.0.1:7443", namespace="team")
    assert find_kubeconfig() == str(local)
    pumice_home = _kubeconfig(tmp_path / "ph" / "kubeconfig", "https://127.0.0.1:8443")
    monkeypatch.setenv("PUMICE_HOME", str(tmp_path / "ph"))
    assert find_kubeconfig() == str(pumice_home)
    env = _kubeconfig(tmp_path / "env-config", "https://env:6443")
    monkeypatch.setenv("KUBECONFIG", str(env))
    assert find_kubeconfig() == str(env)
    assert find_kubeconfig(str(kube)) == str(kube)

    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.delenv("PUMICE_HOME")
    config = load_config()
    assert (config.server, config.namespace, config.source) == ("https://127.0.0.1:7443", "team", str(local))
    assert config.auth is not None and config.auth() == {"authorization": "Bearer x"}
    assert load_config(server="http://127.0.0.1:9").server == "http://127.0.0.1:9"


def test_kubeconfig_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="no such file"):
        load_config()
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nope\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(broken))
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


def test_fallback_table_names_every_modelled_kind_as_its_model_does() -> None:
    from pumice.api import MODELS
    from pumice.client.discovery import FALLBACK

    modelled = [(m.API_VERSION, m.KIND, m.PLURAL, m.NAMESPACED, tuple(m.SHORT_NAMES)) for m in MODELS]
    assert [(r.api_version, r.kind, r.plural, r.namespaced, r.short_names) for r in FALLBACK[: len(MODELS)]] == modelled
    assert {r.kind for r in FALLBACK[len(MODELS) :]} == {"Event", "Service", "ConfigMap", "Secret"}


def test_client_commands_build_no_models_to_resolve_a_word() -> None:
    """``pumice get pods`` must not build every kind's pydantic classes (a fifth of a second) to know the word."""
    code = ("from pumice.client.discovery import Discovery\n"
            "assert Discovery(lambda path: None).resolve('pods').plural == 'pods'")
    assert imported_after(code, ("pumice.api.core", "pumice.api.batch", "pumice.api.rbac")) == []


# ---------------------------------------------------------------------------- against the server


def test_discovery_resolves_words(cluster: Cluster) -> None:
    kc = cluster.client
    for word, plural, namespaced in (("vj", "jobs", True), ("jobs", "jobs", True), ("q", "queues", False),
                                     ("podgroups.scheduling.volcano.sh", "podgroups", True), ("po", "pods", True),
                                     ("hn", "hypernodes", False), ("Command", "commands", True)):
        res = kc.resource(word)
        assert (res.plural, res.namespaced) == (plural, namespaced), word
    assert kc.resource("jobs").group == "batch.volcano.sh"  # Volcano's Job, not batch/v1
    with pytest.raises(UnknownResource):
        kc.resource("nonsense")
    assert kc.resource_for("scheduling.volcano.sh/v1beta1", "Queue").qualified == QUEUES


def test_crud_selectors_and_merge_patch(cluster: Cluster) -> None:
    kc = cluster.client
    for name, team in (("cq-a", "x"), ("cq-b", "y")):
        kc.create(QUEUES, {"metadata": {"name": name, "labels": {"team": team}},
                           "spec": {"weight": 1, "capability": {"cpu": "4"}, "type": "kept"}})
    assert [q["metadata"]["name"] for q in kc.list(QUEUES, label_selector="team=x")] == ["cq-a"]
    assert all(q["kind"] == "Queue" and q["apiVersion"] == "scheduling.volcano.sh/v1beta1"
               for q in kc.list(QUEUES))
    patched = kc.patch(QUEUES, "cq-a", {"spec": {"weight": 9, "capability": {"memory": "1Gi"}}})
    assert patched["spec"]["weight"] == 9
    assert patched["spec"]["capability"] == {"cpu": "4", "memory": "1Gi"}  # merged, not replaced
    assert patched["spec"]["type"] == "kept"  # fields the patch does not name survive
    with pytest.raises(ApiError) as info:
        kc.create(QUEUES, {"metadata": {"name": "cq-a"}, "spec": {"weight": 1}})
    assert info.value.code == 409 and info.value.reason == "AlreadyExists"
    kc.delete(QUEUES, "cq-a")
    with pytest.raises(ApiError) as info:
        kc.get(QUEUES, "cq-a")
    assert info.value.not_found and "cq-a" in str(info.value)
    kc.delete(QUEUES, "cq-b")


def test_wrong_token_is_unauthorized(cluster: Cluster, tmp_path: Path) -> None:
    kc = KubeClient(load_config(str(_kubeconfig(tmp_path / "kc", cluster.url, token="wrong"))))
    with pytest.raises(ApiError) as info:
        kc.list(QUEUES)
    assert info.value.code == 401 and info.value.exit_code == 1
    assert str(info.value).startswith("Unauthorized")


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # from the watch thread
def test_watch_sees_changes(cluster: Cluster) -> None:
    kc = cluster.client
    _, version = kc.list_with_version(QUEUES)
    events: list[tuple[str, str]] = []

    def watch() -> None:
        for event in kc.watch(QUEUES, resource_version=version, timeout_seconds=5):
            if event["type"] == "BOOKMARK":
                continue
            events.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    kc.create(QUEUES, {"metadata": {"name": "watched"}, "spec": {"weight": 1}})
    kc.patch(QUEUES, "watched", {"spec": {"weight": 2}})
    kc.delete(QUEUES, "watched")
    thread.join(10)
    assert events == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


def test_kubeconfig_without_the_kubernetes_package(cluster: Cluster) -> None:
    from pumice.client.config import load_plain

    config = load_plain(str(cluster.kubeconfig))
    assert config.kube is None and config.server == cluster.url
    with KubeClient(config) as kc:  # TLS (CA data or insecure-skip) and the token, from the file alone
        assert isinstance(kc.list(QUEUES), list)
