"""ResourceQuota status kept by the quota controller, as Volcano's resourcequota plugin will read it."""

from __future__ import annotations

from pumice.runtime import Cluster
from tests.builders import node

from .workloads import deployment, run

QUOTAS = "resourcequotas"


def quota(**hard: str) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team"}, "spec": {"hard": hard}}


def test_used_follows_the_pods_of_the_namespace() -> None:
    c = Cluster()
    limited = deployment(replicas=3, cpu="500m")
    limited["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1", "memory": "1Gi"}
    c.apply([node("n1", cpu="32", memory="64Gi"), quota(**{"requests.cpu": "4", "limits.memory": "8Gi", "pods": "10",
                              "count/deployments.apps": "2", "requests.nvidia.com/gpu": "4"}), limited])
    run(c, 10)
    status = c.store.get(QUOTAS, "default", "team")["status"]
    assert status["hard"]["requests.cpu"] == "4"
    assert status["used"] == {"requests.cpu": "1500m", "limits.memory": "3Gi", "pods": "3",
                              "count/deployments.apps": "1", "requests.nvidia.com/gpu": "0"}
    c.store.patch("deployments.apps", "default", "web", {"spec": {"replicas": 1}})
    run(c, 10)
    assert c.store.get(QUOTAS, "default", "team")["status"]["used"]["requests.cpu"] == "500m"


def test_finished_pods_do_not_count_and_changing_hard_replaces_the_status() -> None:
    c = Cluster()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"pumice.io/duration": "5"}},
           "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x",
                                                            "resources": {"requests": {"cpu": "2"}}}]}}
    c.apply([node("n1", cpu="32", memory="64Gi"), quota(cpu="8", memory="1Gi"), pod])
    run(c, 2)
    assert c.store.get(QUOTAS, "default", "team")["status"]["used"] == {"cpu": "2", "memory": "0"}
    run(c, 10)
    assert c.store.get(QUOTAS, "default", "team")["status"]["used"] == {"cpu": "0", "memory": "0"}
    c.store.patch(QUOTAS, "default", "team", {"spec": {"hard": {"cpu": None, "memory": None, "pods": "5"}}})
    run(c, 1)
    assert c.store.get(QUOTAS, "default", "team")["status"] == {"hard": {"pods": "5"}, "used": {"pods": "0"}}
