"""The ``svc`` plugin: a headless Service ``<job>``, the hosts ConfigMap ``<job>-svc``, a NetworkPolicy.

Every pod gets ``hostname=<pod>`` and ``subdomain=<job>`` (so ``<pod>.<job>`` resolves through the
headless Service), the ConfigMap mounted at ``/etc/volcano`` (``<task>.host``: one host per line, the
hostfile MPI reads) and, unless ``--inject-hosts-env=false``, ``VC_<TASK>_HOSTS`` / ``VC_<TASK>_NUM`` as
references into that ConfigMap. The NetworkPolicy ``<job>`` lets only the job's own pods in; it is left
out with ``--disable-network-policy``. Flags as ``pkg/controllers/job/plugins/svc``.
"""

from __future__ import annotations

from typing import Any

from pumice.store import NotFound, Store

from ..names import CONFIGMAPS, JOB_NAME, JOB_NAMESPACE, NETWORKPOLICIES, SERVICES, name_of, namespace_of
from .base import JobPlugin, Obj, containers, create, delete, init_containers, owner_reference, replica_hosts, tasks
from .flags import Flag

__all__ = ["HOSTS_MOUNT_PATH", "SvcPlugin", "generate_hosts"]

HOSTS_MOUNT_PATH = "/etc/volcano"


def _env_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def generate_hosts(job: Obj) -> dict[str, str]:
    """``GenerateHosts``: per task ``<task>.host`` (a host a line), ``VC_<TASK>_HOSTS`` (comma list), ``VC_<TASK>_NUM``.

    ``-`` in a task name becomes ``_`` in the keys (``mpi-worker`` -> ``mpi_worker.host``, ``VC_MPI_WORKER_HOSTS``).
    """
    data: dict[str, str] = {}
    for task in tasks(job):
        hosts = replica_hosts(task, name_of(job))
        key = _env_key(str(task.get("name") or ""))
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


def _selector(job: Obj) -> dict[str, str]:
    return {JOB_NAME: name_of(job), JOB_NAMESPACE: namespace_of(job)}


def _meta(job: Obj, name: str) -> Obj:
    return {"name": name, "namespace": namespace_of(job), "ownerReferences": [owner_reference(job)]}


class SvcPlugin(JobPlugin):
    name = "svc"
    FLAGS = (
        Flag("publish-not-ready-addresses", "bool", False),
        Flag("disable-network-policy", "bool", False),
        Flag("inject-hosts-env", "bool", True),
    )

    def configure(self, values: dict[str, Any]) -> None:
        self.publish_not_ready = bool(values["publish-not-ready-addresses"])
        self.disable_network_policy = bool(values["disable-network-policy"])
        self.inject_hosts_env = bool(values["inject-hosts-env"])

    @staticmethod
    def config_map_name(job: Obj) -> str:
        return f"{name_of(job)}-svc"

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        spec = pod.setdefault("spec", {})
        if not spec.get("hostname"):
            spec["hostname"] = name_of(pod)
        if not spec.get("subdomain"):
            spec["subdomain"] = name_of(job)
        cm = self.config_map_name(job)
        everyone = [*containers(pod), *init_containers(pod)]
        if self.inject_hosts_env:
            names = []
            for task in tasks(job):
                key = _env_key(str(task.get("name") or "")).upper()
                names += [f"VC_{key}_HOSTS", f"VC_{key}_NUM"]
            for container in everyone:
                env = container.setdefault("env", [])
                env += [{"name": n, "valueFrom": {"configMapKeyRef": {"name": cm, "key": n}}} for n in names]
        spec.setdefault("volumes", []).append({"name": cm, "configMap": {"name": cm}})
        for container in everyone:
            container.setdefault("volumeMounts", []).append({"name": cm, "mountPath": HOSTS_MOUNT_PATH})

    def on_job_add(self, store: Store, job: Obj) -> bool:
        wrote = self._write_hosts(store, job)
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(job, name_of(job)),
            "spec": {"clusterIP": "None", "selector": _selector(job),
                     "publishNotReadyAddresses": self.publish_not_ready},
        }
        wrote |= create(store, SERVICES, service)
        if not self.disable_network_policy:
            policy = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": _meta(job, name_of(job)),
                "spec": {
                    "podSelector": {"matchLabels": _selector(job)},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": _selector(job)}}]}],
                    "policyTypes": ["Ingress"],
                },
            }
            wrote |= create(store, NETWORKPOLICIES, policy)
        return wrote

    def _write_hosts(self, store: Store, job: Obj) -> bool:
        """``CreateOrUpdateConfigMap``: the hosts ConfigMap, created or brought up to date.

        Written without reading it first (a merge patch of its data: a job keeps its tasks, so the keys stay
        the same), so that the controllers need no right to read ConfigMaps.
        """
        ns, name, hosts = namespace_of(job), self.config_map_name(job), generate_hosts(job)
        if create(store, CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(job, name),
                                      "data": hosts}):
            return True
        try:
            store.patch(CONFIGMAPS, ns, name, {"data": hosts})
        except NotFound:
            return False
        return True

    def on_job_update(self, store: Store, job: Obj) -> bool:
        """Replicas changed: the host lists follow."""
        return self._write_hosts(store, job)

    def on_job_delete(self, store: Store, job: Obj) -> bool:
        ns, name = namespace_of(job), name_of(job)
        wrote = delete(store, CONFIGMAPS, ns, self.config_map_name(job))
        wrote |= delete(store, SERVICES, ns, name)
        if not self.disable_network_policy:
            wrote |= delete(store, NETWORKPOLICIES, ns, name)
        return wrote
