"""resourcequota: a PodGroup whose minResources would exceed a ResourceQuota of its namespace stays Pending."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import load_conf, run_session
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text, session

CONF = load_conf(conf_text("resourcequota", actions="enqueue"))


def quota(name: str, namespace: str, hard: dict[str, str], used: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"hard": hard}
    if used is not None:
        status["used"] = used
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": hard}, "status": status}


def group(name: str, cpu: str, namespace: str = "team") -> list[dict[str, Any]]:
    return [podgroup(name, namespace=namespace, queue="default", min_resources={"cpu": cpu, "memory": "1Gi"}),
            pod(f"{name}-0", namespace=namespace, group=name, cpu=cpu, memory="1Gi")]


def phases(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {k: v["phase"] for k, v in run_session(objects, CONF).podgroups.items()}


BASE = [node("n", cpu="64", memory="64Gi"), queue("default")]


def test_a_group_within_the_quota_is_admitted_and_one_beyond_it_is_not() -> None:
    assert phases([*BASE, quota("q", "team", {"cpu": "4"}), *group("a", "4")]) == {"team/a": "Inqueue"}
    assert phases([*BASE, quota("q", "team", {"cpu": "4"}), *group("a", "5")]) == {"team/a": "Pending"}


def test_used_and_already_admitted_groups_count() -> None:
    objects = [*BASE, quota("q", "team", {"cpu": "4"}, used={"cpu": "1"}), *group("a", "2"), *group("b", "2")]
    got = phases(objects)
    assert sorted(got.values()) == ["Inqueue", "Pending"]  # 1 used + 2 admitted + 2 > 4


def test_only_the_quotas_resource_names_and_namespace_apply() -> None:
    # requests.cpu is not cpu (Volcano masks by exact names); another namespace's quota is not ours
    objects = [*BASE, quota("q", "team", {"requests.cpu": "1"}), quota("o", "other", {"cpu": "1"}), *group("a", "8")]
    assert phases(objects) == {"team/a": "Inqueue"}


def test_the_reason_names_the_quota() -> None:
    ssn = session([*BASE, quota("q", "team", {"cpu": "4", "memory": "8Gi"}), *group("a", "5")], "resourcequota",
                  actions="enqueue")
    job = ssn.jobs["team/a"]
    assert not ssn.job_enqueueable(job)
    assert "resource quota insufficient (team/q)" in job.pending_reason and "cpu" in job.pending_reason


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 16), st.integers(0, 8), st.lists(st.integers(1, 6), min_size=1, max_size=6))
def test_admitted_groups_never_exceed_the_quota(hard: int, used: int, sizes: list[int]) -> None:
    objects = [*BASE, quota("q", "team", {"cpu": str(hard)}, used={"cpu": str(used)})]
    for i, cpu in enumerate(sizes):
        objects += group(f"g{i}", str(cpu))
    admitted = [sizes[int(k.split("/g")[1])] for k, p in phases(objects).items() if p == "Inqueue"]
    assert not admitted or used + sum(admitted) <= hard
