"""kube-apiserver's defaulting of the workloads: apps/v1 Deployment, ReplicaSet, StatefulSet and batch/v1 Job
(``pkg/apis/apps``, ``pkg/apis/batch``: ``defaults.go``). Their validation is ``pumice.api.validation``'s.
"""

from __future__ import annotations

from typing import Any

from pumice.api.batch_v1 import CONTROLLER_UID_LABELS, JOB_NAME_LABELS

__all__ = ["default_workload"]

Obj = dict[str, Any]


def default_workload(obj: Obj, *, create: bool) -> None:
    """Kubernetes' defaults, in place on the object handed to admission (its nested parts are replaced, never
    changed, as they may be shared with the caller)."""
    kind = obj.get("kind")
    spec = dict(obj.get("spec") or {})
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec.setdefault("replicas", 1)
    if kind == "Deployment":
        strategy = dict(spec.get("strategy") or {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = dict(strategy.get("rollingUpdate") or {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
            strategy["rollingUpdate"] = rolling
        spec["strategy"] = strategy
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        strategy = dict(spec.get("updateStrategy") or {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            strategy["rollingUpdate"] = {"partition": 0, **(strategy.get("rollingUpdate") or {})}
        spec["updateStrategy"] = strategy
        spec.setdefault("revisionHistoryLimit", 10)
    elif kind == "Job":
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if create and not spec.get("manualSelector"):
            _job_selector(obj, spec)
    if kind in ("Deployment", "ReplicaSet", "StatefulSet") and isinstance(spec.get("template"), dict):
        pod_spec = spec["template"].get("spec")
        if isinstance(pod_spec, dict) and "restartPolicy" not in pod_spec:
            spec["template"] = {**spec["template"], "spec": {**pod_spec, "restartPolicy": "Always"}}
    obj["spec"] = spec


def _job_selector(job: Obj, spec: Obj) -> None:
    """``generateSelector``: the Job's pods are selected by its uid, and labelled with it and its name."""
    meta = job.get("metadata") or {}
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    own = {label: uid for label in CONTROLLER_UID_LABELS} | {label: name for label in JOB_NAME_LABELS}
    template = dict(spec.get("template") or {})
    template_meta = dict(template.get("metadata") or {})
    template_meta["labels"] = {**(template_meta.get("labels") or {}), **own}
    template["metadata"] = template_meta
    spec["template"] = template
    spec["selector"] = {"matchLabels": {CONTROLLER_UID_LABELS[0]: uid}}
