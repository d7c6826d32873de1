"""The resource quota controller of kube-controller-manager (embedded clusters only): ``status.hard`` and
``status.used`` of every ResourceQuota, kept current as pods and objects come and go.

Usage is counted as Kubernetes' quota evaluators count it, over the namespace's pods that are not terminated
and match the quota's scopes (``Terminating``/``NotTerminating``, ``BestEffort``/``NotBestEffort``,
``PriorityClass`` scope selectors): ``cpu``/``requests.cpu``, ``memory``/``requests.memory``, ``limits.*``,
``requests.<extended resource>`` (a pod's requests: the larger of its containers' sum and any init container,
plus overhead), ``pods``, and ``count/<resource>`` or the legacy names (``services``, ``configmaps``,
``secrets``, ``resourcequotas``) for objects. Volcano's ``resourcequota`` scheduler plugin reads the status.
Quotas are not enforced when pods are created (kube-apiserver's quota admission is not imitated).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pumice.api.quantity import format_quantity, milli_value
from pumice.api.resources import RESOURCEQUOTAS
from pumice.clock import Clock
from pumice.store import NotFound, Store, StoreError

from .job_build import pod_requests
from .mirror import Mirror
from .owned import OwnedPods, is_active

__all__ = ["QuotaController", "pod_usage"]

Obj = dict[str, Any]
Key = tuple[str, str]
_LEGACY_COUNTS = {"services": "services", "configmaps": "configmaps", "secrets": "secrets",
                  "resourcequotas": "resourcequotas", "persistentvolumeclaims": None,
                  "replicationcontrollers": None}
_STANDARD = ("cpu", "memory", "ephemeral-storage")


def _limits(spec: Obj) -> dict[str, int]:
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("limits") or {}).items():
            total[name] = total.get(name, 0) + milli_value(value)
    for container in spec.get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get("limits") or {}).items():
            total[name] = max(total.get(name, 0), milli_value(value))
    return total


def pod_usage(pod: Obj) -> dict[str, int]:
    """A pod's quota usage in thousandths, under every quota resource name that can track it."""
    spec = pod.get("spec") or {}
    requests = pod_requests(spec)
    usage = {"pods": 1000}
    for name, value in requests.items():
        usage[f"requests.{name}"] = value
        if name in _STANDARD:
            usage[name] = value
    for name, value in _limits(spec).items():
        usage[f"limits.{name}"] = value
    return usage


def _best_effort(pod: Obj) -> bool:
    return not any((c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
                   for c in ((pod.get("spec") or {}).get("containers") or []))


def _in_scope(pod: Obj, quota: Obj) -> bool:
    spec = quota.get("spec") or {}
    pod_spec = pod.get("spec") or {}
    for scope in spec.get("scopes") or []:
        terminating = pod_spec.get("activeDeadlineSeconds") is not None
        if (scope == "Terminating" and not terminating) or (scope == "NotTerminating" and terminating):
            return False
        if (scope == "BestEffort" and not _best_effort(pod)) or (scope == "NotBestEffort" and _best_effort(pod)):
            return False
    for expr in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        if expr.get("scopeName") != "PriorityClass":
            continue
        value, values, op = pod_spec.get("priorityClassName"), expr.get("values") or [], expr.get("operator")
        matched = {"In": value in values, "NotIn": value not in values, "Exists": bool(value),
                   "DoesNotExist": not value}.get(str(op), True)
        if not matched:
            return False
    return True


class QuotaController:
    """Keeps ResourceQuota status; ``pods`` may be shared with the workload controllers."""

    def __init__(self, store: Store, clock: Clock, pods: OwnedPods | None = None) -> None:
        self.store = store
        self.clock = clock
        self.pods = pods or OwnedPods(store, clock)
        self.quotas = Mirror(store, RESOURCEQUOTAS)
        self._dirty: set[Key] = set(self.quotas.objects)
        self.quotas.drain()

    def next_wakeup(self) -> float | None:
        return None

    def pending(self) -> bool:
        if self._dirty or self.quotas.pending():
            return True
        return bool(self.quotas.objects) and (self.pods.pending() or bool(self.pods.changed_namespaces))

    def sync(self) -> bool:
        for d in self.quotas.drain():
            if d.new is not None:
                self._dirty.add(d.key)
        self.pods.refresh()
        changed, self.pods.changed_namespaces = self.pods.changed_namespaces, set()
        if changed:
            self._dirty |= {key for key in self.quotas.objects if key[0] in changed}
        wrote = False
        for key in sorted(self._dirty):
            quota = self.quotas.get(*key)
            if quota is not None:
                wrote |= self._reconcile(key, quota)
        self._dirty.clear()
        return wrote

    def _count(self, namespace: str, resource: str) -> int:
        try:
            items, _ = self.store.list(resource, namespace, copy=False)
        except StoreError:
            return 0
        return len(items)

    def _reconcile(self, key: Key, quota: Obj) -> bool:
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        pods = [p for p in self.pods.by_namespace.get(key[0], {}).values() if is_active(p) and _in_scope(p, quota)]
        totals: dict[str, int] = {}
        for pod in pods:
            for name, value in pod_usage(pod).items():
                totals[name] = totals.get(name, 0) + value
        used: dict[str, str] = {}
        for name in hard:
            if name.startswith("count/") or name in _LEGACY_COUNTS:
                resource = name[len("count/"):] if name.startswith("count/") else _LEGACY_COUNTS[name]
                used[name] = str(len(pods) if resource == "pods" else self._count(key[0], resource) if resource else 0)
            elif name in totals or name == "pods" or name.startswith(("requests.", "limits.")) or name in _STANDARD:
                used[name] = format_quantity(totals.get(name, 0), milli=True)
        status = {"hard": hard, "used": used}
        if (quota.get("status") or {}) == status:
            return False
        with contextlib.suppress(NotFound):
            # a merge patch would keep resources no longer in ``hard``: replace the status whole
            current = {k: v for k, v in (quota.get("metadata") or {}).items() if k != "resourceVersion"}
            self.quotas.put(self.store.update(RESOURCEQUOTAS, {**quota, "metadata": current, "status": status},
                                              subresource="status", copy=False))
            return True
        return False

    def close(self) -> None:
        self.quotas.close()
