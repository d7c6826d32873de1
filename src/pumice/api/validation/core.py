"""The rules of Kubernetes' own kinds served by pumice (``pkg/apis/*/validation``), kind by kind.

Each kind has a :class:`KindRules`: how its names are checked, what a new object must satisfy beyond its
metadata, and what an update may not change. :data:`BUILT_IN` maps ``(group, kind)`` to them; kinds without
an entry get the metadata rules only.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .common import PROTOCOLS, TAINT_EFFECTS, port_number
from .common import as_dict as _dict
from .common import as_list as _list
from .errors import (
    DUPLICATE,
    INVALID,
    OMIT,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from .kinds import KindRules
from .meta import STANDARD_FINALIZERS, validate_labels
from .names import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_port_name,
    is_qualified_name,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    path_segment_name,
)
from .networking import NETWORKING_RULES
from .pods import validate_pod_spec, validate_pod_spec_update
from .resources import validate_quantity, validate_quota_resources
from .workloads import WORKLOAD_RULES

__all__ = ["BUILT_IN", "KindRules"]

Obj = dict[str, Any]

MAX_DATA_SIZE = 1024 * 1024  # a ConfigMap's or Secret's data, at most (bytes)
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_SESSION_AFFINITY = ("ClientIP", "None")
_SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_HIGHEST_USER_PRIORITY = 1000000000




# ---------------------------------------------------------------------------- Pod


def _pod(pod: Obj) -> list[FieldError]:
    return validate_pod_spec(pod.get("spec"))


def _pod_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_pod_spec_update(new, old)


# ---------------------------------------------------------------------------- Node


def _taints(taints: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for index, taint in enumerate(taints):
        where = f"{path}[{index}]"
        taint = _dict(taint)
        key = taint.get("key") or ""
        if not key:
            errors.append(required(f"{where}.key"))
        else:
            errors.extend(invalid(f"{where}.key", key, msg) for msg in is_qualified_name(key))
        value = taint.get("value") or ""
        errors.extend(invalid(f"{where}.value", value, msg) for msg in is_label_value(value))
        effect = taint.get("effect") or ""
        if not effect:
            errors.append(required(f"{where}.effect"))
        elif effect not in TAINT_EFFECTS:
            errors.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
        pair = (key, effect)
        if pair in seen:
            errors.append(FieldError(DUPLICATE, where, taint, "taints must be unique by key and effect pair"))
        seen.add(pair)
    return errors


def _node_resources(node: Obj) -> list[FieldError]:
    status = _dict(node.get("status"))
    errors: list[FieldError] = []
    for part in ("capacity", "allocatable"):
        for name, value in sorted(_dict(status.get(part)).items()):
            if value is not None:
                errors += validate_quantity(name, value, f"status.{part}.{name}")
    return errors


def _node(node: Obj) -> list[FieldError]:
    # Kubernetes reports taints under "metadata.taints" (its field path has been that way for years)
    errors = _taints(_list(_dict(node.get("spec")).get("taints")), "metadata.taints")
    errors += _node_resources(node)
    spec = _dict(node.get("spec"))
    for key in ("podCIDR",):
        value = spec.get(key)
        if value:
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                errors.append(invalid(f"spec.{key}", value, "must be a valid CIDR"))
    return errors


def _node_update(new: Obj, old: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    for key in ("podCIDR", "providerID"):
        if old_spec.get(key) and new_spec.get(key) != old_spec.get(key):
            errors.append(forbidden(f"spec.{key}", f"{key} can only be set once" if key == "providerID" else
                                    "node updates may not change podCIDR except from \"\" to valid"))
    return errors


# ---------------------------------------------------------------------------- Namespace


def _finalizer_names(names: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for name in names:
        if type(name) is not str:
            continue
        problems = is_qualified_name(name)
        if problems:
            errors.extend(invalid(path, name, msg) for msg in problems)
        elif "/" not in name and name not in STANDARD_FINALIZERS:
            errors.append(invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified"))
    return errors


def _namespace(ns: Obj) -> list[FieldError]:
    return _finalizer_names(_list(_dict(ns.get("spec")).get("finalizers")), "spec.finalizers")


# ---------------------------------------------------------------------------- ConfigMap, Secret


def _data_keys(data: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in sorted(_dict(data)):
        errors.extend(invalid(f"{path}[{key}]", key, msg) for msg in is_config_map_key(key))
    return errors


def _config_map(cm: Obj) -> list[FieldError]:
    data, binary = _dict(cm.get("data")), _dict(cm.get("binaryData"))
    errors = _data_keys(data, "data") + _data_keys(binary, "binaryData")
    for key in sorted(set(data) & set(binary)):
        errors.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
    size = sum(len(v.encode()) for v in data.values() if type(v) is str)
    size += sum(len(v) * 3 // 4 for v in binary.values() if type(v) is str)
    if size > MAX_DATA_SIZE:
        errors.append(too_long("[]", MAX_DATA_SIZE))
    return errors


def _immutable_data(new: Obj, old: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errors.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        for key in ("data", "binaryData", "stringData"):
            if key != "stringData" and new.get(key) != old.get(key):
                errors.append(forbidden(key, "field is immutable when `immutable` is set"))
    return errors


_SECRET_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def _secret(secret: Obj) -> list[FieldError]:
    data = dict(_dict(secret.get("data")))
    for key, value in _dict(secret.get("stringData")).items():
        data[key] = value  # stringData is merged into data before validation
    errors = _data_keys(data, "data")
    size = sum(len(v) for v in data.values() if type(v) is str)
    if size > MAX_DATA_SIZE:
        errors.append(too_long("data", MAX_DATA_SIZE))
    kind = secret.get("type") or "Opaque"
    for key in _SECRET_KEYS.get(kind, ()):
        if key not in data:
            errors.append(required(f"data[{key}]"))
    if kind == "kubernetes.io/service-account-token":
        annotations = _dict(_dict(secret.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            errors.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    if kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errors.append(required("data[username]"))
    return errors


def _secret_update(new: Obj, old: Obj) -> list[FieldError]:
    errors = _immutable_data(new, old)
    if (new.get("type") or "Opaque") != (old.get("type") or "Opaque"):
        errors.append(invalid("type", new.get("type") or "Opaque", "field is immutable"))
    return errors


# ---------------------------------------------------------------------------- Service


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _service(svc: Obj) -> list[FieldError]:
    spec = _dict(svc.get("spec"))
    errors: list[FieldError] = []
    kind = spec.get("type") or "ClusterIP"
    cluster_ip = spec.get("clusterIP") or ""
    headless = cluster_ip == "None"
    ports = _list(spec.get("ports"))
    if kind == "ExternalName":
        name = spec.get("externalName") or ""
        if not name:
            errors.append(required("spec.externalName"))
        else:
            errors.extend(invalid("spec.externalName", name, msg) for msg in is_dns1123_subdomain(name))
    elif not ports and not headless:
        errors.append(required("spec.ports"))
    names: set[str] = set()
    seen: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        where = f"spec.ports[{index}]"
        port = _dict(port)
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            errors.append(required(f"{where}.name"))
        if name:
            errors.extend(invalid(f"{where}.name", name, msg) for msg in is_dns1123_label(name))
            if name in names:
                errors.append(duplicate(f"{where}.name", name))
            names.add(name)
        number = port.get("port") or 0
        errors += port_number(number, f"{where}.port")
        protocol = port.get("protocol") or "TCP"
        if protocol not in PROTOCOLS:
            errors.append(not_supported(f"{where}.protocol", protocol, PROTOCOLS))
        target = port.get("targetPort")
        if target is None or target == 0 or target == "":
            target = number  # defaulted to the port
        if type(target) is int:
            errors += port_number(target, f"{where}.targetPort")
        elif type(target) is str:
            errors.extend(invalid(f"{where}.targetPort", target, msg) for msg in is_port_name(target))
        key = (number, protocol)
        if key in seen:
            errors.append(duplicate(where, port))
        seen.add(key)
    if kind not in _SERVICE_TYPES:
        errors.append(not_supported("spec.type", kind, _SERVICE_TYPES))
    affinity = spec.get("sessionAffinity")
    if affinity is not None and affinity not in _SESSION_AFFINITY:
        errors.append(not_supported("spec.sessionAffinity", affinity, _SESSION_AFFINITY))
    if cluster_ip and not headless and not _ip(cluster_ip):
        errors.append(invalid("spec.clusterIPs[0]", cluster_ip,
                              "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
    errors += validate_labels(spec.get("selector"), "spec.selector")
    return errors


def _service_update(new: Obj, old: Obj) -> list[FieldError]:
    """A service's addresses stay: an update must carry them (``clusterIPs`` too), unchanged."""
    old_spec, new_spec = _dict(old.get("spec")), _dict(new.get("spec"))
    old_ip = old_spec.get("clusterIP") or ""
    if not old_ip or old_ip == "None":
        return []
    errors: list[FieldError] = []
    new_ips = _list(new_spec.get("clusterIPs"))
    if not new_ips:
        errors.append(FieldError(INVALID, "spec.clusterIPs[0]", OMIT,
                                 "[]string(nil): primary clusterIP can not be unset"))
        if new_spec.get("clusterIP"):
            errors.append(required("spec.clusterIPs"))
    elif new_ips[0] != old_ip or (new_spec.get("clusterIP") or old_ip) != old_ip:
        errors.append(invalid("spec.clusterIPs[0]", new_ips[0], "field is immutable"))
    return errors


# ---------------------------------------------------------------------------- Event


def _event(event: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    namespace = _dict(event.get("metadata")).get("namespace") or ""
    involved = _dict(event.get("involvedObject"))
    involved_ns = involved.get("namespace") or ""
    if not event.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errors.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errors.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace != "kube-system":
            errors.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = event.get("reportingComponent") or ""
        if not controller:
            errors.append(required("reportingController"))
        errors.extend(invalid("reportingController", controller, msg) for msg in is_qualified_name(controller))
        for key, limit, path in (("reportingInstance", 128, "repotingIntance"), ("action", 128, "action"),
                                 ("reason", 128, "reason")):
            value = event.get(key) or ""
            if not value:
                errors.append(required(key))
            if len(value) > limit:
                errors.append(invalid(path, "", f"can have at most {limit} characters"))
        if len(event.get("message") or "") > 1024:
            errors.append(invalid("message", "", "can have at most 1024 characters"))
    return errors


# ---------------------------------------------------------------------------- PriorityClass, Lease, quota


def _priority_class_name(name: str, prefix: bool) -> tuple[str, ...]:
    return name_is_dns_subdomain(name, prefix)


def _priority_class(pc: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    name = _dict(pc.get("metadata")).get("name") or ""
    value = pc.get("value") or 0
    if name.startswith("system-"):
        known = _SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            errors.append(forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for "
                                                     f"system use only. error: {name} is not a known system "
                                                     "priority class"))
        elif value != known:
            errors.append(forbidden("metadata.name", f"value of {name} is not a valid system priority class: "
                                                     f"value must be {known}"))
    elif type(value) is int and value > _HIGHEST_USER_PRIORITY:
        errors.append(forbidden("value", f"maximum allowed value of a user defined priority is "
                                         f"{_HIGHEST_USER_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in ("PreemptLowerPriority", "Never"):
        errors.append(not_supported("preemptionPolicy", policy, ("PreemptLowerPriority", "Never")))
    return errors


def _priority_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    if (new.get("value") or 0) != (old.get("value") or 0):
        errors.append(forbidden("value", "may not be changed in an update."))
    if (new.get("preemptionPolicy") or "PreemptLowerPriority") != (old.get("preemptionPolicy")
                                                                    or "PreemptLowerPriority"):
        errors.append(invalid("preemptionPolicy", new.get("preemptionPolicy"), "field is immutable"))
    return errors


def _lease(lease: Obj) -> list[FieldError]:
    spec = _dict(lease.get("spec"))
    errors: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if type(duration) is int and duration <= 0:
        errors.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if type(transitions) is int and transitions < 0:
        errors.append(invalid("spec.leaseTransitions", transitions, "must to greater or equal than 0"))
    return errors


def _resource_quota(quota: Obj) -> list[FieldError]:
    spec = _dict(quota.get("spec"))
    errors = validate_quota_resources(spec.get("hard"), "spec.hard")
    scopes = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass")
    for scope in _list(spec.get("scopes")):
        if scope not in scopes:
            errors.append(not_supported("spec.scopes", scope, scopes))
    status = _dict(quota.get("status"))
    errors += validate_quota_resources(status.get("hard"), "status.hard")
    errors += validate_quota_resources(status.get("used"), "status.used")
    return errors


def _service_account(sa: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, secret in enumerate(_list(sa.get("secrets"))):
        name = _dict(secret).get("name")
        if name:
            errors.extend(invalid(f"secrets[{index}].name", name, msg) for msg in is_dns1123_subdomain(name))
    return errors


def _pod_template(template: Obj) -> list[FieldError]:
    inner = _dict(template.get("template"))
    errors = validate_labels(_dict(inner.get("metadata")).get("labels"), "template.metadata.labels")
    errors += validate_pod_spec(inner.get("spec"), "template.spec", template=True)
    return errors


#: ``(group, kind)`` -> the rules of Kubernetes' own kinds (kinds not listed get the metadata rules only).
BUILT_IN: dict[tuple[str, str], KindRules] = {
    **WORKLOAD_RULES,
    **NETWORKING_RULES,
    ("", "Pod"): KindRules(create=_pod, update=_pod_update, reads="spec"),
    ("", "Node"): KindRules(create=_node, update=_node_update, reads="body"),
    ("", "Namespace"): KindRules(name=name_is_dns_label, create=_namespace, reads="spec"),
    ("", "ConfigMap"): KindRules(create=_config_map, update=_immutable_data, reads="body"),
    ("", "Secret"): KindRules(create=_secret, update=_secret_update),
    ("", "Service"): KindRules(name=name_is_dns1035_label, create=_service, update=_service_update, reads="spec"),
    ("", "Event"): KindRules(name=path_segment_name, create=_event),  # event names: any one path segment
    ("", "ServiceAccount"): KindRules(create=_service_account),
    ("", "ResourceQuota"): KindRules(create=_resource_quota),
    ("", "PodTemplate"): KindRules(create=_pod_template),
    ("scheduling.k8s.io", "PriorityClass"): KindRules(name=_priority_class_name, create=_priority_class,
                                                      update=_priority_class_update),
    ("coordination.k8s.io", "Lease"): KindRules(create=_lease, reads="spec"),
}
