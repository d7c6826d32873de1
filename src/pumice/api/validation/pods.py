"""Pod rules (``pkg/apis/core/validation``: ``ValidatePodSpec`` and what it calls), for Pods and for every pod
template (workloads, Volcano's job tasks).

The object has been decoded (every field has its JSON type, :mod:`.decode`); absent enumerated fields are
checked as the defaults the API server gives them (``restartPolicy: Always``, port ``protocol: TCP``...).
"""

from __future__ import annotations

from typing import Any

from .common import NONNEGATIVE, PORT_RANGE, PROTOCOLS, TAINT_EFFECTS, port_number
from .common import as_dict as _dict
from .common import as_list as _list
from .errors import FieldError, duplicate, forbidden, invalid, not_found, not_supported, required
from .meta import validate_annotations, validate_labels
from .names import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_label_value,
    is_port_name,
    is_qualified_name,
)
from .resources import validate_container_resources

__all__ = [
    "validate_affinity",
    "validate_label_selector",
    "validate_pod_spec",
    "validate_pod_spec_update",
    "validate_pod_template",
    "validate_tolerations",
]

Obj = dict[str, Any]
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_TOLERATION_OPERATORS = ("Equal", "Exists")
_NODE_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
_MOUNT_PROPAGATION = ("None", "HostToContainer", "Bidirectional")
_VOLUME_SOURCES = frozenset({
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
})




def _nonnegative(obj: Obj, key: str, path: str) -> list[FieldError]:
    value = obj.get(key)
    if type(value) is int and value < 0:
        return [invalid(f"{path}.{key}", value, NONNEGATIVE)]
    return []


def _port_num_or_name(value: Any, path: str) -> list[FieldError]:
    if type(value) is int:
        return port_number(value, path)
    if type(value) is str:
        if not value:
            return [required(path)]
        if value.isdigit():
            number = int(value)
            return [] if 1 <= number <= 65535 else [invalid(path, value, PORT_RANGE)]
        return [invalid(path, value, msg) for msg in is_port_name(value)]
    return [required(path)] if value is None else []


# ---------------------------------------------------------------------------- volumes


def _volumes(volumes: list[Any], path: str) -> tuple[set[str], list[FieldError]]:
    names: set[str] = set()
    errors: list[FieldError] = []
    for index, volume in enumerate(volumes):
        where = f"{path}[{index}]"
        volume = _dict(volume)
        name = volume.get("name") or ""
        if not name:
            errors.append(required(f"{where}.name"))
        else:
            errors.extend(invalid(f"{where}.name", name, msg) for msg in is_dns1123_label(name))
            if name in names:
                errors.append(duplicate(f"{where}.name", name))
            names.add(name)
        sources = [key for key in volume if key in _VOLUME_SOURCES and volume[key] is not None]
        if not sources:
            errors.append(required(where, "must specify a volume type"))
        elif len(sources) > 1:
            errors.append(forbidden(f"{where}.{sources[1]}", "may not specify more than 1 volume type"))
    return names, errors


# ---------------------------------------------------------------------------- containers


def _env(env: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, var in enumerate(env):
        where = f"{path}[{index}]"
        var = _dict(var)
        name = var.get("name") or ""
        if not name:
            errors.append(required(f"{where}.name"))
        else:
            errors.extend(invalid(f"{where}.name", name, msg) for msg in is_env_var_name(name))
        source = var.get("valueFrom")
        if type(source) is dict:
            given = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
                     if source.get(k) is not None]
            if var.get("value"):
                errors.append(invalid(f"{where}.valueFrom", "",
                                      "may not be specified when `value` is not empty"))
            if len(given) > 1:
                errors.append(invalid(f"{where}.valueFrom", "", "may not have more than one field specified at a "
                                                                  "time"))
            elif not given:
                errors.append(invalid(f"{where}.valueFrom", "", "must specify one of: `fieldRef`, "
                                      "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
            for ref in ("configMapKeyRef", "secretKeyRef"):
                selector = source.get(ref)
                if type(selector) is dict:
                    key = selector.get("key") or ""
                    if not key:
                        errors.append(required(f"{where}.valueFrom.{ref}.key"))
                    else:
                        errors.extend(invalid(f"{where}.valueFrom.{ref}.key", key, msg)
                                      for msg in is_config_map_key(key))
    return errors


def _env_from(sources: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, source in enumerate(sources):
        where = f"{path}[{index}]"
        source = _dict(source)
        prefix = source.get("prefix")
        if prefix:
            errors.extend(invalid(f"{where}.prefix", prefix, msg) for msg in is_env_var_name(prefix))
        given = [k for k in ("configMapRef", "secretRef") if source.get(k) is not None]
        if len(given) > 1:
            errors.append(invalid(where, "", "may not have more than one field specified at a time"))
        for ref in given:
            if not _dict(source[ref]).get("name"):
                errors.append(required(f"{where}.{ref}.name"))
    return errors


def _ports(ports: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    names: set[str] = set()
    for index, port in enumerate(ports):
        where = f"{path}[{index}]"
        port = _dict(port)
        name = port.get("name")
        if name:
            errors.extend(invalid(f"{where}.name", name, msg) for msg in is_port_name(name))
            if name in names:
                errors.append(duplicate(f"{where}.name", name))
            names.add(name)
        number = port.get("containerPort")
        if not number:
            errors.append(required(f"{where}.containerPort"))
        else:
            errors += port_number(number, f"{where}.containerPort")
        host = port.get("hostPort")
        if host:
            errors += port_number(host, f"{where}.hostPort")
        protocol = port.get("protocol")
        if protocol not in (None, "") and protocol not in PROTOCOLS:  # "": defaulted (TCP), as unset
            errors.append(not_supported(f"{where}.protocol", protocol, PROTOCOLS))
    return errors


def _mounts(mounts: list[Any], volumes: set[str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    paths: set[str] = set()
    for index, mount in enumerate(mounts):
        where = f"{path}[{index}]"
        mount = _dict(mount)
        name = mount.get("name") or ""
        if not name:
            errors.append(required(f"{where}.name"))
        elif name not in volumes:
            errors.append(not_found(f"{where}.name", name))
        mount_path = mount.get("mountPath") or ""
        if not mount_path:
            errors.append(required(f"{where}.mountPath"))
        elif mount_path in paths:
            errors.append(invalid(f"{where}.mountPath", mount_path, "must be unique"))
        paths.add(mount_path)
        sub = mount.get("subPath")
        if sub and (sub.startswith("/") or ".." in sub.split("/")):
            problem = "must be a relative path" if sub.startswith("/") else "must not contain '..'"
            errors.append(invalid(f"{where}.subPath", sub, problem))
        propagation = mount.get("mountPropagation")
        if propagation is not None and propagation not in _MOUNT_PROPAGATION:
            errors.append(not_supported(f"{where}.mountPropagation", propagation, _MOUNT_PROPAGATION))
    return errors


def _handler(handler: Obj, path: str) -> list[FieldError]:
    given = [k for k in ("exec", "httpGet", "tcpSocket") if handler.get(k) is not None]
    if not given:
        return [required(path, "must specify a handler type")]
    if len(given) > 1:
        return [forbidden(f"{path}.{given[1]}", "may not specify more than 1 handler type")]
    errors: list[FieldError] = []
    kind = given[0]
    action = _dict(handler[kind])
    if kind == "exec" and not action.get("command"):
        errors.append(required(f"{path}.exec.command"))
    elif kind == "httpGet":
        if not action.get("path") and action.get("path") is not None:
            errors.append(required(f"{path}.httpGet.path"))
        errors += _port_num_or_name(action.get("port"), f"{path}.httpGet.port")
        scheme = action.get("scheme")
        if scheme is not None and scheme not in ("HTTP", "HTTPS"):
            errors.append(not_supported(f"{path}.httpGet.scheme", scheme, ("HTTP", "HTTPS")))
    elif kind == "tcpSocket":
        errors += _port_num_or_name(action.get("port"), f"{path}.tcpSocket.port")
    return errors


def _probe(probe: Any, path: str, liveness: bool) -> list[FieldError]:
    if type(probe) is not dict:
        return []
    errors = _handler(probe, path)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errors += _nonnegative(probe, key, path)
    success = probe.get("successThreshold")
    if liveness and type(success) is int and success != 1:
        errors.append(invalid(f"{path}.successThreshold", success, "must be 1"))
    return errors


def _container(container: Obj, path: str, volumes: set[str], template: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    name = container.get("name") or ""
    if not name:
        errors.append(required(f"{path}.name"))
    else:
        errors.extend(invalid(f"{path}.name", name, msg) for msg in is_dns1123_label(name))
    image = container.get("image") or ""
    if not image:
        errors.append(required(f"{path}.image"))
    elif not template and image != image.strip():
        errors.append(invalid(f"{path}.image", image, "must not have leading or trailing whitespace"))
    policy = container.get("imagePullPolicy")
    if policy not in (None, "") and policy not in _PULL_POLICIES:  # "": defaulted by the image's tag
        errors.append(not_supported(f"{path}.imagePullPolicy", policy, _PULL_POLICIES))
    message_policy = container.get("terminationMessagePolicy")
    if message_policy not in (None, "") and message_policy not in _TERMINATION_MESSAGE_POLICIES:
        errors.append(not_supported(f"{path}.terminationMessagePolicy", message_policy,
                                    _TERMINATION_MESSAGE_POLICIES))
    errors += _ports(_list(container.get("ports")), f"{path}.ports")
    errors += _env(_list(container.get("env")), f"{path}.env")
    errors += _env_from(_list(container.get("envFrom")), f"{path}.envFrom")
    errors += _mounts(_list(container.get("volumeMounts")), volumes, f"{path}.volumeMounts")
    errors += _probe(container.get("livenessProbe"), f"{path}.livenessProbe", True)
    errors += _probe(container.get("readinessProbe"), f"{path}.readinessProbe", False)
    errors += _probe(container.get("startupProbe"), f"{path}.startupProbe", True)
    lifecycle = _dict(container.get("lifecycle"))
    for hook in ("postStart", "preStop"):
        if type(lifecycle.get(hook)) is dict:
            errors += _handler(lifecycle[hook], f"{path}.lifecycle.{hook}")
    errors += validate_container_resources(container.get("resources"), f"{path}.resources")
    return errors


def _containers(containers: list[Any], path: str, volumes: set[str], seen: set[str], template: bool,
                empty_ok: bool = False) -> list[FieldError]:
    if not containers:
        return [] if empty_ok else [required(path)]
    errors: list[FieldError] = []
    for index, container in enumerate(containers):
        where = f"{path}[{index}]"
        container = _dict(container)
        errors += _container(container, where, volumes, template)
        name = container.get("name")
        if name:
            if name in seen:
                errors.append(duplicate(f"{where}.name", name))
            seen.add(name)
    return errors


# ---------------------------------------------------------------------------- scheduling constraints


def validate_tolerations(tolerations: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, toleration in enumerate(tolerations):
        where = f"{path}[{index}]"
        toleration = _dict(toleration)
        key = toleration.get("key") or ""
        if key:
            errors.extend(invalid(f"{where}.key", key, msg) for msg in is_qualified_name(key))
        operator = toleration.get("operator") or "Equal"
        if not key and operator != "Exists":
            errors.append(invalid(f"{where}.operator", operator,
                                  "operator must be Exists when `key` is empty, which means \"match all values and "
                                  "all keys\""))
        seconds = toleration.get("tolerationSeconds")
        if seconds is not None and toleration.get("effect") != "NoExecute":
            errors.append(invalid(f"{where}.effect", toleration.get("effect") or "",
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator == "Equal":
            value = toleration.get("value") or ""
            errors.extend(invalid(f"{where}.operator", value, msg) for msg in is_label_value(value))
        elif operator == "Exists":
            if toleration.get("value"):
                errors.append(invalid(f"{where}.operator", toleration,
                                      "value must be empty when `operator` is 'Exists'"))
        else:
            errors.append(not_supported(f"{where}.operator", operator, _TOLERATION_OPERATORS))
        effect = toleration.get("effect")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
    return errors


def _node_selector_requirements(requirements: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, requirement in enumerate(requirements):
        where = f"{path}[{index}]"
        requirement = _dict(requirement)
        operator = requirement.get("operator")
        values = _list(requirement.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(forbidden(f"{where}.values",
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                errors.append(required(f"{where}.values", "must be specified single value when `operator` is 'Lt' "
                                                          "or 'Gt'"))
        else:
            errors.append(invalid(f"{where}.operator", operator if operator is not None else "",
                                  "not a valid selector operator"))
        key = requirement.get("key") or ""
        errors.extend(invalid(f"{where}.key", key, msg) for msg in is_qualified_name(key))
    return errors


def _node_selector_term(term: Any, path: str) -> list[FieldError]:
    term = _dict(term)
    errors = _node_selector_requirements(_list(term.get("matchExpressions")), f"{path}.matchExpressions")
    for index, requirement in enumerate(_list(term.get("matchFields"))):
        where = f"{path}.matchFields[{index}]"
        requirement = _dict(requirement)
        if requirement.get("key") != "metadata.name":
            errors.append(invalid(f"{where}.key", requirement.get("key") or "", "not a valid field selector key"))
        if requirement.get("operator") not in ("In", "NotIn") or len(_list(requirement.get("values"))) != 1:
            errors.append(required(f"{where}.values", "must be only one value when `operator` is 'In' or "
                                                      "'NotIn' for node field selector"))
    return errors


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelSelector``."""
    if type(selector) is not dict:
        return []
    errors: list[FieldError] = []
    for index, requirement in enumerate(_list(selector.get("matchExpressions"))):
        where = f"{path}.matchExpressions[{index}]"
        requirement = _dict(requirement)
        operator = requirement.get("operator")
        values = _list(requirement.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(forbidden(f"{where}.values",
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errors.append(invalid(f"{where}.operator", operator if operator is not None else "",
                                  "not a valid selector operator"))
        key = requirement.get("key") or ""
        errors.extend(invalid(f"{where}.key", key, msg) for msg in is_qualified_name(key))
    errors += validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    return errors


def _pod_affinity_term(term: Any, path: str) -> list[FieldError]:
    term = _dict(term)
    errors = validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    for name in _list(term.get("namespaces")):
        if type(name) is str:
            errors.extend(invalid(f"{path}.namespace", name, msg) for msg in is_dns1123_label(name))
    key = term.get("topologyKey") or ""
    if not key:
        errors.append(required(f"{path}.topologyKey", "can not be empty"))
    else:
        errors.extend(invalid(f"{path}.topologyKey", key, msg) for msg in is_qualified_name(key))
    return errors


def _weighted(terms: list[Any], path: str, check: Any, inner: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, weighted in enumerate(terms):
        where = f"{path}[{index}]"
        weighted = _dict(weighted)
        weight = weighted.get("weight")
        if type(weight) is not int or not 1 <= weight <= 100:
            errors.append(invalid(f"{where}.weight", weight if weight is not None else 0,
                                  "must be in the range 1-100"))
        errors += check(weighted.get(inner), f"{where}.{inner}")
    return errors


def validate_affinity(affinity: Any, path: str) -> list[FieldError]:
    if type(affinity) is not dict:
        return []
    errors: list[FieldError] = []
    node = affinity.get("nodeAffinity")
    if type(node) is dict:
        where = f"{path}.nodeAffinity"
        required_terms = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if type(required_terms) is dict:
            terms = _list(required_terms.get("nodeSelectorTerms"))
            inner = f"{where}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            if not terms:
                errors.append(required(inner, "must have at least one node selector term"))
            for index, term in enumerate(terms):
                errors += _node_selector_term(term, f"{inner}[{index}]")
        errors += _weighted(_list(node.get("preferredDuringSchedulingIgnoredDuringExecution")),
                            f"{where}.preferredDuringSchedulingIgnoredDuringExecution", _node_selector_term,
                            "preference")
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(kind)
        if type(pods) is not dict:
            continue
        where = f"{path}.{kind}"
        for index, term in enumerate(_list(pods.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errors += _pod_affinity_term(term, f"{where}.requiredDuringSchedulingIgnoredDuringExecution[{index}]")
        errors += _weighted(_list(pods.get("preferredDuringSchedulingIgnoredDuringExecution")),
                            f"{where}.preferredDuringSchedulingIgnoredDuringExecution", _pod_affinity_term,
                            "podAffinityTerm")
    return errors


# ---------------------------------------------------------------------------- the spec


def validate_pod_spec(spec: Any, path: str = "spec", *, template: bool = False) -> list[FieldError]:
    """``ValidatePodSpec``: containers, volumes, policies, scheduling constraints."""
    spec = _dict(spec)
    volume_names, errors = _volumes(_list(spec.get("volumes")), f"{path}.volumes")
    seen: set[str] = set()
    errors += _containers(_list(spec.get("containers")), f"{path}.containers", volume_names, seen, template)
    errors += _containers(_list(spec.get("initContainers")), f"{path}.initContainers", volume_names, seen,
                          template, empty_ok=True)
    restart = spec.get("restartPolicy")
    if restart not in (None, "") and restart not in _RESTART_POLICIES:  # kube-apiserver defaults "" as unset
        errors.append(not_supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns not in (None, "") and dns not in _DNS_POLICIES:
        errors.append(not_supported(f"{path}.dnsPolicy", dns, _DNS_POLICIES))
    errors += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for key, check in (("serviceAccountName", is_dns1123_subdomain), ("nodeName", is_dns1123_subdomain),
                       ("hostname", is_dns1123_label), ("subdomain", is_dns1123_label),
                       ("priorityClassName", is_dns1123_subdomain), ("schedulerName", None)):
        value = spec.get(key)
        if value and check is not None:
            errors.extend(invalid(f"{path}.{key}", value, msg) for msg in check(value))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and type(deadline) is int and not 1 <= deadline <= 2147483647:
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive"))
    for index, secret in enumerate(_list(spec.get("imagePullSecrets"))):
        if type(secret) is dict and not secret.get("name"):
            errors.append(required(f"{path}.imagePullSecrets[{index}].name"))
    errors += validate_tolerations(_list(spec.get("tolerations")), f"{path}.tolerations")
    errors += validate_affinity(spec.get("affinity"), f"{path}.affinity")
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in _PREEMPTION_POLICIES:
        errors.append(not_supported(f"{path}.preemptionPolicy", preemption, _PREEMPTION_POLICIES))
    for index, gate in enumerate(_list(spec.get("readinessGates"))):
        condition = _dict(gate).get("conditionType") or ""
        errors.extend(invalid(f"{path}.readinessGates[{index}].conditionType", condition, msg)
                      for msg in is_qualified_name(condition))
    for index, alias in enumerate(_list(spec.get("hostAliases"))):
        if type(alias) is dict and not alias.get("ip"):
            errors.append(invalid(f"{path}.hostAliases[{index}].ip", "", "must be valid IP address"))
    overhead = spec.get("overhead")
    if type(overhead) is dict:
        errors += validate_container_resources({"limits": overhead}, f"{path}.overhead")
    return errors


def validate_pod_template(template: Any, path: str = "template") -> list[FieldError]:
    """``ValidatePodTemplateSpec``: a pod template's labels and annotations, and its spec."""
    template = _dict(template)
    meta = _dict(template.get("metadata"))
    errors = validate_labels(meta.get("labels"), f"{path}.metadata.labels")
    errors += validate_annotations(meta.get("annotations"), f"{path}.metadata.annotations")
    errors += validate_pod_spec(template.get("spec"), f"{path}.spec", template=True)
    return errors


#: Set by admission plugins on create (``Priority``): an update without them keeps them.
_ADMITTED_FIELDS = ("priority", "preemptionPolicy", "priorityClassName")
_MUTABLE_POD_FIELDS = ("activeDeadlineSeconds", "tolerations")


#: The defaults kube-apiserver stores in a pod spec (``SetDefaults_PodSpec`` and friends): an update is compared
#: with them filled in on both sides, so that giving a default explicitly is no change.
_SPEC_DEFAULTS: dict[str, Any] = {
    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": True,
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
}


def _pull_policy(image: Any) -> str:
    name = str(image or "")
    tag = name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""
    return "Always" if "@" not in name and tag in ("", "latest") else "IfNotPresent"


def _defaulted_container(container: Any) -> Obj:
    out = {**_CONTAINER_DEFAULTS, **_dict(container)}
    out.setdefault("imagePullPolicy", _pull_policy(out.get("image")))
    if type(out.get("ports")) is list:
        out["ports"] = [{"protocol": "TCP", **_dict(p)} for p in out["ports"]]
    return out


def _image_paths(spec: Obj) -> Obj:
    """The spec, defaulted, without what an update may change (containers' images, tolerations, a deadline)."""
    out = {k: v for k, v in {**_SPEC_DEFAULTS, **spec}.items() if k not in _MUTABLE_POD_FIELDS and v is not None}
    for key in ("containers", "initContainers"):
        if type(out.get(key)) is list:
            out[key] = [{k: v for k, v in _defaulted_container(c).items() if k != "image"} for c in out[key]]
    return out


def validate_pod_spec_update(new: Obj, old: Obj, path: str = "spec") -> list[FieldError]:
    """``ValidatePodUpdate``: a pod's spec is immutable but for images, the deadline and added tolerations."""
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errors: list[FieldError] = []
    if len(_list(new_spec.get("containers"))) != len(_list(old_spec.get("containers"))):
        return [forbidden(path, "pod updates may not add or remove containers")]
    for index, container in enumerate(_list(new_spec.get("containers"))):
        image = _dict(container).get("image")
        if not image:
            errors.append(required(f"{path}.containers[{index}].image"))
    deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if old_deadline is not None and (deadline is None or (type(deadline) is int and deadline > old_deadline)):
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline if deadline is not None else "",
                              "must be less than or equal to previous value"))
    old_tolerations = _list(old_spec.get("tolerations"))
    for toleration in old_tolerations:
        if toleration not in _list(new_spec.get("tolerations")) and _dict(toleration).get("effect") != "NoExecute":
            errors.append(forbidden(f"{path}.tolerations", "existing toleration can not be modified except its "
                                                           "tolerationSeconds"))
            break
    # what admission filled in at create (a priority from the class) is kept when an update leaves it out
    new_spec = {**{k: old_spec[k] for k in _ADMITTED_FIELDS if k in old_spec and k not in new_spec}, **new_spec}
    if _image_paths(new_spec) != _image_paths(old_spec):
        errors.append(forbidden(path, "pod updates may not change fields other than `spec.containers[*].image`, "
                                      "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or "
                                      "`spec.tolerations` (only additions to existing tolerations)"))
    return errors
