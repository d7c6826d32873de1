"""kube-apiserver's defaulting and validation of the workloads: apps/v1 Deployment, ReplicaSet, StatefulSet
and batch/v1 Job (``pkg/apis/apps``, ``pkg/apis/batch``: ``defaults.go``, ``validation.go``).

What the embedded controllers rely on is checked, with Kubernetes' wording: a selector that matches the
template's labels, a valid restart policy, a rolling update that can make progress, immutable selectors.
"""

from __future__ import annotations

import re
from typing import Any

from pumice.api.batch_v1 import CONTROLLER_UID_LABELS, JOB_NAME_LABELS
from pumice.store import Invalid
from pumice.store.errors import StoreError
from pumice.store.selectors import parse_label_selector

__all__ = ["default_workload", "validate_workload"]

Obj = dict[str, Any]
_PERCENT = re.compile(r"^(\d+)%$")


def _where(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f'{obj.get("kind")}.{obj.get("apiVersion", "").split("/")[0]} "{meta.get("name")}" is invalid'


def _template_spec(obj: Obj) -> Obj:
    template = (obj.get("spec") or {}).get("template") or {}
    return template.get("spec") or {}


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


def _int_or_percent(value: Any, field: str, problems: list[str]) -> tuple[int, bool] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            problems.append(f"{field}: Invalid value: {value}: must be greater than or equal to 0")
        return value, False
    m = _PERCENT.match(str(value))
    if not m:
        problems.append(f'{field}: Invalid value: "{value}": a valid percent string must be a numeric string '
                        f"followed by an ending '%'")
        return None
    if int(m.group(1)) > 100:
        problems.append(f'{field}: Invalid value: "{value}": must not be greater than 100%')
    return int(m.group(1)), True


def validate_workload(obj: Obj, old: Obj | None) -> None:
    """``Invalid`` with every problem found, in Kubernetes' words."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    problems: list[str] = []
    for field in ("replicas", "parallelism", "completions", "backoffLimit", "minReadySeconds"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            problems.append(f"spec.{field}: Invalid value: {value}: must be greater than or equal to 0")
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(template, dict):
        problems.append("spec.template: Required value")
        template = {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if kind != "Job" or spec.get("manualSelector"):
        if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            problems.append("spec.selector: Required value" if not selector else
                            "spec.selector: Invalid value: empty selector is invalid for deployment")
        else:
            try:
                matches = parse_label_selector(selector).matches(labels)
            except (StoreError, ValueError, TypeError) as err:
                problems.append(f"spec.selector: Invalid value: {err}")
            else:
                if not matches:
                    problems.append("spec.template.metadata.labels: Invalid value: "
                                    f"{labels}: `selector` does not match template `labels`")
    restart = _template_spec(obj).get("restartPolicy")
    if kind == "Job":
        if restart not in ("OnFailure", "Never"):
            problems.append('spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
                            if not restart else
                            f'spec.template.spec.restartPolicy: Unsupported value: "{restart}": supported values: '
                            '"OnFailure", "Never"')
        if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
            problems.append("spec.completions: Required value: when completion mode is Indexed")
    elif restart not in (None, "Always"):
        problems.append(f'spec.template.spec.restartPolicy: Unsupported value: "{restart}": supported values: '
                        '"Always"')
    if kind == "Deployment":
        _deployment_strategy(spec.get("strategy") or {}, problems)
    if kind == "StatefulSet":
        policy = spec.get("podManagementPolicy")
        if policy not in (None, "OrderedReady", "Parallel"):
            problems.append(f'spec.podManagementPolicy: Unsupported value: "{policy}": supported values: '
                            '"OrderedReady", "Parallel"')
        update = (spec.get("updateStrategy") or {}).get("type")
        if update not in (None, "RollingUpdate", "OnDelete"):
            problems.append(f'spec.updateStrategy.type: Unsupported value: "{update}": supported values: '
                            '"OnDelete", "RollingUpdate"')
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("selector") != spec.get("selector"):
            problems.append(f"spec.selector: Invalid value: {spec.get('selector')}: field is immutable")
        if kind == "Job" and old_spec.get("template") != spec.get("template"):
            problems.append("spec.template: Invalid value: field is immutable")
        if kind == "Job" and old_spec.get("completions") != spec.get("completions"):
            problems.append(f"spec.completions: Invalid value: {spec.get('completions')}: field is immutable")
    if problems:
        raise Invalid(f"{_where(obj)}: {'; '.join(problems)}")


def _deployment_strategy(strategy: Obj, problems: list[str]) -> None:
    kind = strategy.get("type", "RollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            problems.append("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` "
                            "is 'Recreate'")
        return
    if kind != "RollingUpdate":
        problems.append(f'spec.strategy.type: Unsupported value: "{kind}": supported values: "Recreate", '
                        '"RollingUpdate"')
        return
    rolling = rolling or {}
    surge = _int_or_percent(rolling.get("maxSurge", "25%"), "spec.strategy.rollingUpdate.maxSurge", problems)
    unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"), "spec.strategy.rollingUpdate.maxUnavailable",
                                  problems)
    if surge is not None and unavailable is not None and surge[0] == 0 and unavailable[0] == 0:
        problems.append("spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` "
                        "is 0")
