"""Rules of the workload and RBAC kinds (``pkg/apis/apps``, ``batch``, ``rbac`` validation): Deployments,
ReplicaSets, StatefulSets, DaemonSets, batch Jobs and CronJobs, Roles and their bindings.

A workload's selector must be given and match its pod template's labels, counts are not negative, its
template is a valid pod template (with the restart policies the kind allows); what a workload update may not
change (selectors, a StatefulSet's identity) is refused. RBAC rules need verbs, and bind an existing kind of
role to known kinds of subjects.
"""

from __future__ import annotations

import re
from typing import Any

from pumice.api.labels import Selector, SelectorError, label_selector

from .common import NONNEGATIVE
from .common import as_dict as _dict
from .common import as_list as _list
from .errors import FieldError, forbidden, invalid, not_supported, required
from .kinds import KindRules
from .meta import validate_annotations, validate_labels
from .names import is_dns1123_subdomain, path_segment_name
from .pods import validate_label_selector, validate_pod_template

__all__ = ["WORKLOAD_RULES"]

Obj = dict[str, Any]
_PERCENT = re.compile(r"^(\d+)%$")




def _nonnegative(spec: Obj, keys: tuple[str, ...], path: str = "spec") -> list[FieldError]:
    return [invalid(f"{path}.{key}", spec[key], NONNEGATIVE) for key in keys
            if type(spec.get(key)) is int and spec[key] < 0]


def _selector(selector: Obj) -> Selector | None:
    """``LabelSelectorAsSelector`` (a null label value decodes as ""); None where it fails (bad values)."""
    match_labels = selector.get("matchLabels")
    if type(match_labels) is dict and None in match_labels.values():
        selector = {**selector, "matchLabels": {k: "" if v is None else v for k, v in match_labels.items()}}
    try:
        return label_selector(selector)
    except SelectorError:
        return None


def _matches(selector: Obj, labels: Obj) -> bool:
    """Whether a selector selects the template's labels (a malformed one is its own error)."""
    compiled = _selector(selector)
    return compiled is None or compiled.matches(labels)


def _selected_template(spec: Obj, path: str = "spec", *, restart: tuple[str, ...] = ("Always",),
                       required_selector: bool = True, pod_spec: bool = True) -> list[FieldError]:
    """A workload's selector and pod template (``ValidatePodTemplateSpecForReplicaSet`` and friends)."""
    errors: list[FieldError] = []
    selector = spec.get("selector")
    template = _dict(spec.get("template"))
    labels = _dict(_dict(template.get("metadata")).get("labels"))
    if type(selector) is not dict:
        if required_selector:
            errors.append(required(f"{path}.selector"))
    else:
        errors += validate_label_selector(selector, f"{path}.selector")
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            errors.append(invalid(f"{path}.selector", selector, "empty selector is invalid for deployment"))
        if _selector(selector) is None:
            errors.append(invalid(f"{path}.selector", selector, "invalid label selector"))
    if type(selector) is not dict or not _matches(selector, labels):
        errors.append(invalid(f"{path}.template.metadata.labels", labels,
                              "`selector` does not match template `labels`"))
    if pod_spec:
        errors += validate_pod_template(template, f"{path}.template")
    else:
        meta = _dict(template.get("metadata"))
        errors += validate_labels(meta.get("labels"), f"{path}.template.metadata.labels")
        errors += validate_annotations(meta.get("annotations"), f"{path}.template.metadata.annotations")
    policy = _dict(template.get("spec")).get("restartPolicy")
    if policy is not None and policy not in restart:
        errors.append(not_supported(f"{path}.template.spec.restartPolicy", policy, restart))
    return errors


def _int_or_percent(value: Any, path: str, errors: list[FieldError]) -> tuple[int, bool] | None:
    """An int-or-string count (``maxSurge``: 1, "25%"): its number and whether it is a percentage."""
    if type(value) is int:
        if value < 0:
            errors.append(invalid(path, value, NONNEGATIVE))
        return value, False
    match = _PERCENT.match(str(value))
    if match is None:
        errors.append(invalid(path, value, "a valid percent string must be a numeric string followed by an ending "
                                           "'%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"))
        return None
    if int(match.group(1)) > 100:
        errors.append(invalid(path, value, "must not be greater than 100%"))
    return int(match.group(1)), True


def _rolling_update(rolling: Obj, errors: list[FieldError]) -> None:
    path = "spec.strategy.rollingUpdate"
    surge = _int_or_percent(rolling.get("maxSurge", "25%"), f"{path}.maxSurge", errors)
    unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"), f"{path}.maxUnavailable", errors)
    if surge is not None and unavailable is not None and surge[0] == 0 and unavailable[0] == 0:
        errors.append(invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable", 0),
                              "may not be 0 when `maxSurge` is 0"))


def _deployment(obj: Obj) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    errors = _nonnegative(spec, ("replicas", "minReadySeconds", "revisionHistoryLimit"))
    errors += _selected_template(spec)
    strategy = spec.get("strategy")
    kind = _dict(strategy).get("type")
    if kind is not None and kind not in ("Recreate", "RollingUpdate"):
        errors.append(not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate")))
    if kind == "Recreate" and _dict(strategy).get("rollingUpdate") is not None:
        errors.append(forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is "
                                                               "'Recreate'"))
    if kind in (None, "RollingUpdate"):
        _rolling_update(_dict(_dict(strategy).get("rollingUpdate")), errors)
    deadline = spec.get("progressDeadlineSeconds")
    if type(deadline) is int and type(spec.get("minReadySeconds")) is int and deadline <= spec["minReadySeconds"]:
        errors.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errors


def _replica_set(obj: Obj) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    return _nonnegative(spec, ("replicas", "minReadySeconds")) + _selected_template(spec)


def _stateful_set(obj: Obj) -> list[FieldError]:
    """kube-apiserver 1.20 checks a StatefulSet's template for its labels and restart policy only (its pod spec is
    checked when the pods are created: ``ValidatePodTemplateSpecForStatefulSet``)."""
    spec = _dict(obj.get("spec"))
    errors = _nonnegative(spec, ("replicas", "revisionHistoryLimit"))
    policy = spec.get("podManagementPolicy")
    if policy is not None and policy not in ("OrderedReady", "Parallel"):
        errors.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy")
    kind = _dict(strategy).get("type")
    if kind is not None and kind not in ("RollingUpdate", "OnDelete"):
        errors.append(invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
    return errors + _selected_template(spec, pod_spec=False)


def _daemon_set(obj: Obj) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    return _nonnegative(spec, ("minReadySeconds", "revisionHistoryLimit")) + _selected_template(spec)


def _job_spec(spec: Obj, path: str) -> list[FieldError]:
    errors = _nonnegative(spec, ("parallelism", "completions", "backoffLimit"), path)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        errors.append(required(f"{path}.completions", "when completion mode is Indexed"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errors.append(not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
    deadline = spec.get("activeDeadlineSeconds")
    if type(deadline) is int and deadline <= 0:
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline, "must be greater than 0"))
    template = _dict(spec.get("template"))
    if spec.get("selector") is not None:
        errors += validate_label_selector(spec["selector"], f"{path}.selector")
    errors += validate_pod_template(template, f"{path}.template")
    policy = _dict(template.get("spec")).get("restartPolicy")
    if policy is None:
        errors.append(required(f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        errors.append(not_supported(f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never")))
    return errors


def _batch_job(obj: Obj) -> list[FieldError]:
    """``ValidateJobSpec``: a Job's selector (generated at create unless ``manualSelector``) must be there and
    select its template's labels (no selector selects nothing)."""
    spec = _dict(obj.get("spec"))
    errors = _job_spec(spec, "spec")
    selector = spec.get("selector")
    labels = _dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))
    if type(selector) is not dict:
        errors.append(required("spec.selector"))
    if type(selector) is not dict or not _matches(selector, labels):
        errors.append(invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`"))
    return errors


def _cron_job(obj: Obj) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    errors: list[FieldError] = []
    if not spec.get("schedule"):
        errors.append(required("spec.schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in ("Allow", "Forbid", "Replace"):
        errors.append(not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    errors += _nonnegative(spec, ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"))
    job = _dict(spec.get("jobTemplate"))
    return errors + _job_spec(_dict(job.get("spec")), "spec.jobTemplate.spec")


def _selector_unchanged(new: Obj, old: Obj) -> list[FieldError]:
    selector, before = _dict(new.get("spec")).get("selector"), _dict(old.get("spec")).get("selector")
    if selector != before:
        return [invalid("spec.selector", selector, "field is immutable")]
    return []


def _stateful_set_update(new: Obj, old: Obj) -> list[FieldError]:
    mutable = ("replicas", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
    new_spec = {k: v for k, v in _dict(new.get("spec")).items() if k not in mutable}
    old_spec = {k: v for k, v in _dict(old.get("spec")).items() if k not in mutable}
    if new_spec != old_spec:
        return [forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'template', "
                                  "'updateStrategy' and 'minReadySeconds' are forbidden")]
    return []


def _batch_job_update(new: Obj, old: Obj) -> list[FieldError]:
    errors = _selector_unchanged(new, old)
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    if new_spec.get("completions") != old_spec.get("completions"):
        errors.append(invalid("spec.completions", new_spec.get("completions"), "field is immutable"))
    if new_spec.get("template") != old_spec.get("template"):
        errors.append(invalid("spec.template", new_spec.get("template"), "field is immutable"))
    return errors


# ---------------------------------------------------------------------------- RBAC


def _policy_rules(rules: list[Any], path: str, *, namespaced: bool) -> list[FieldError]:
    """``ValidatePolicyRule``: verbs; then either non-resource URLs (cluster roles only) or groups and resources."""
    errors: list[FieldError] = []
    for index, rule in enumerate(rules):
        where = f"{path}[{index}]"
        rule = _dict(rule)
        if not _list(rule.get("verbs")):
            errors.append(required(f"{where}.verbs", "verbs must contain at least one value"))
        urls = _list(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errors.append(invalid(f"{where}.nonResourceURLs", urls,
                                      "namespaced rules cannot apply to non-resource URLs"))
            if _list(rule.get("apiGroups")) or _list(rule.get("resources")) or _list(rule.get("resourceNames")):
                errors.append(invalid(f"{where}.nonResourceURLs", urls,
                                      "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not _list(rule.get("apiGroups")):
            errors.append(required(f"{where}.apiGroups", "resource rules must supply at least one api group"))
        if not _list(rule.get("resources")):
            errors.append(required(f"{where}.resources", "resource rules must supply at least one resource"))
    return errors


def _role(obj: Obj) -> list[FieldError]:
    return _policy_rules(_list(obj.get("rules")), "rules", namespaced=True)


def _cluster_role(obj: Obj) -> list[FieldError]:
    return _policy_rules(_list(obj.get("rules")), "rules", namespaced=False)


def _binding(obj: Obj, *, cluster: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    ref = _dict(obj.get("roleRef"))
    kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
    if ref.get("apiGroup") not in (None, "", "rbac.authorization.k8s.io"):
        errors.append(not_supported("roleRef.apiGroup", ref.get("apiGroup"), ("rbac.authorization.k8s.io",)))
    if ref.get("kind") not in kinds:
        errors.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    if not ref.get("name"):
        errors.append(required("roleRef.name"))
    for index, subject in enumerate(_list(obj.get("subjects"))):
        where = f"subjects[{index}]"
        subject = _dict(subject)
        name = subject.get("name") or ""
        if not name:
            errors.append(required(f"{where}.name"))
        kind = subject.get("kind")
        if kind not in ("ServiceAccount", "User", "Group"):
            errors.append(not_supported(f"{where}.kind", kind or "", ("ServiceAccount", "User", "Group")))
        elif kind == "ServiceAccount":
            if name:
                errors.extend(invalid(f"{where}.name", name, msg) for msg in is_dns1123_subdomain(name))
            if subject.get("apiGroup"):
                errors.append(not_supported(f"{where}.apiGroup", subject["apiGroup"], ("",)))
            if cluster and not subject.get("namespace"):
                errors.append(required(f"{where}.namespace"))
        elif subject.get("apiGroup") not in (None, "", "rbac.authorization.k8s.io"):  # "": defaulted
            errors.append(not_supported(f"{where}.apiGroup", subject.get("apiGroup"), ("rbac.authorization.k8s.io",)))
    return errors


def _role_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, cluster=False)


def _cluster_role_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, cluster=True)


def _role_ref_unchanged(new: Obj, old: Obj) -> list[FieldError]:
    if new.get("roleRef") != old.get("roleRef"):
        return [invalid("roleRef", new.get("roleRef"), "cannot change roleRef")]
    return []


WORKLOAD_RULES: dict[tuple[str, str], KindRules] = {
    ("apps", "Deployment"): KindRules(create=_deployment, update=_selector_unchanged, reads="spec"),
    ("apps", "ReplicaSet"): KindRules(create=_replica_set, update=_selector_unchanged, reads="spec"),
    ("apps", "StatefulSet"): KindRules(create=_stateful_set, update=_stateful_set_update, reads="spec"),
    ("apps", "DaemonSet"): KindRules(create=_daemon_set, update=_selector_unchanged, reads="spec"),
    ("batch", "Job"): KindRules(create=_batch_job, update=_batch_job_update, reads="spec"),
    ("batch", "CronJob"): KindRules(create=_cron_job, reads="spec"),
    ("rbac.authorization.k8s.io", "Role"): KindRules(name=path_segment_name, create=_role, reads="body"),
    ("rbac.authorization.k8s.io", "ClusterRole"): KindRules(name=path_segment_name, create=_cluster_role,
                                                            reads="body"),
    ("rbac.authorization.k8s.io", "RoleBinding"): KindRules(name=path_segment_name, create=_role_binding,
                                                            update=_role_ref_unchanged, reads="body"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): KindRules(
        name=path_segment_name, create=_cluster_role_binding, update=_role_ref_unchanged, reads="body"),
}

