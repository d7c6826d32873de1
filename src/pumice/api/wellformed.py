"""Whether the scheduler and the controllers can read an object: :func:`problem` names the first field of
the wrong type or value they would trip over, or says None.

An object can pass admission and still be *poisoned*: a pod whose cpu request is ``lots``, whose affinity
is a string, whose priority is ``"high"``; a node whose allocatable memory is a list; a status written through
the ``/status`` subresource (which no webhook sees); anything in a data directory written before a check
existed. The components run this check where a wire object enters them (the scheduler's cache, the
controllers' mirrors) and skip what fails it, so that one bad object cannot stop every other job.

A store whose every writer is this process's own code (a simulation: objects from parsed manifests and from
the controllers) says so with ``screened = False``; :func:`screened` tells the components whether to check.
Every other store — served by the API server, durable (an old data directory), a real cluster's — is
screened.

The check covers the fields the components read, with their types (quantities must parse, integers must be
integers, maps of strings must be maps of strings); it is not Kubernetes' validation (names, label syntax,
immutable fields), which belongs at the API's door. It runs on every watch event, so it is cheap: plain type
checks, quantities through the parser's cache, the pydantic models only for the rare structured fields
(affinity, tolerations, HyperNode members), and a verdict is remembered for the very object (the store's
objects are immutable and shared by every watch, so each version is checked once, whoever reads it first).
"""

from __future__ import annotations

import itertools
import marshal
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from pumice.api.quantity import is_valid_quantity

__all__ = ["forget", "problem", "screened"]

_MEMO_SIZE = 16384
# id(object) -> (the object, kept alive so that its id stays its own; the verdict): whole objects, and the parts
# (a pod's spec, a job's spec) that stay the same object from one version to the next
_memo: dict[int, tuple[Any, str | None]] = {}
_parts: dict[int, tuple[Any, str | None]] = {}
# marshal's bytes of a pod spec -> its verdict: the replicas of one task, each a new object with the same spec
_specs: dict[bytes, str | None] = {}
_UNSEEN = "(a spec not seen yet)"  # _specs.get's default: compared by identity, never a verdict itself


def forget() -> None:
    """Forget every remembered verdict (for a measurement or a test that needs a fresh check)."""
    _memo.clear()
    _parts.clear()
    _specs.clear()


def _remember(memo: dict[int, tuple[Any, str | None]], value: Any, verdict: str | None) -> None:
    if len(memo) >= _MEMO_SIZE:  # forget the older half (a dict keeps the order of insertion)
        try:
            for key in list(itertools.islice(memo, _MEMO_SIZE // 2)):
                memo.pop(key, None)
        except RuntimeError:  # another thread changed it meanwhile: forget everything instead
            memo.clear()
    memo[id(value)] = (value, verdict)  # one dict operation: atomic, whichever threads check objects


def _part(check: Callable[[Any, str], None], value: Any, path: str) -> None:
    """``check(value, path)``, remembered for this very ``value`` (a part shared by versions of an object)."""
    hit = _parts.get(id(value))
    if hit is not None and hit[0] is value:
        if hit[1] is not None:
            raise _Bad.of(hit[1])
        return
    try:
        check(value, path)
    except _Bad as bad:
        _remember(_parts, value, str(bad))
        raise
    _remember(_parts, value, None)


class _Bad(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)

    @classmethod
    def of(cls, text: str) -> _Bad:
        return cls("", text)


def screened(store: object) -> bool:
    """Whether the components reading ``store`` must check what they read (unless it says ``screened = False``)."""
    return bool(getattr(store, "screened", True))


def problem(obj: Mapping[str, Any], passed: Mapping[str, Any] | None = None) -> str | None:
    """The first field of ``obj`` the components cannot read (``"spec.priority: expected an integer, got
    "high""``), or None. Kinds the components do not read are always fine.

    ``passed``: an earlier version of the same object that passed this check. Parts of ``obj`` equal to
    its parts (the spec, labels and annotations: a bind or a status write changes none of them) are not
    checked again — comparing is far cheaper than checking, and a watch decodes every version anew."""
    hit = _memo.get(id(obj))  # first: most calls are for an object some other component checked already
    if hit is not None and hit[0] is obj:
        return hit[1]
    checker = _CHECKERS.get(obj.get("kind")) if type(obj) is dict or isinstance(obj, Mapping) else None
    if checker is None:
        return None
    if passed is not None:
        _known_parts(obj, passed)
    try:
        checker(obj)
        verdict = None
    except _Bad as bad:
        verdict = str(bad)
    _remember(_memo, obj, verdict)
    return verdict


def _known_parts(obj: Mapping[str, Any], passed: Mapping[str, Any]) -> None:
    """Remember as fine the parts of ``obj`` equal to those of ``passed`` (which passed)."""
    spec, before = obj.get("spec"), passed.get("spec")
    if type(spec) is dict and type(before) is dict and spec is not before and _same_spec(spec, before):
        _remember(_parts, spec, None)
    meta, old = obj.get("metadata"), passed.get("metadata")
    if type(meta) is dict and type(old) is dict:
        for key in ("labels", "annotations"):
            value = meta.get(key)
            if type(value) is dict and value is not old.get(key) and value == old.get(key):
                _remember(_parts, value, None)


def _same_spec(spec: dict[str, Any], before: dict[str, Any]) -> bool:
    """Equal specs, or equal but for a ``nodeName`` (a string) set since: a bind."""
    if spec == before:
        return True
    node = spec.get("nodeName")
    if type(node) is not str or node == before.get("nodeName"):
        return False
    return {k: v for k, v in spec.items() if k != "nodeName"} == {k: v for k, v in before.items() if k != "nodeName"}


# ----------------------------------------------------------------------------------------------- helpers


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return repr(text).replace("'", '"')
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _mapping(value: Any, path: str) -> dict[str, Any]:
    """An object (``None`` reads as an empty one)."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise _Bad(path, f"expected an object, got {_describe(value)}")
    return value


def _items(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _Bad(path, f"expected a list, got {_describe(value)}")
    return value


def _objects(value: Any, path: str) -> list[dict[str, Any]]:
    items = _items(value, path)
    for index, item in enumerate(items):
        if type(item) is not dict:
            raise _Bad(f"{path}[{index}]", f"expected an object, got {_describe(item)}")
    return items


def _string(value: Any, path: str) -> None:
    if value is not None and type(value) is not str:
        raise _Bad(path, f"expected a string, got {_describe(value)}")


def _strings(parent: Mapping[str, Any], path: str, *keys: str) -> None:
    for key in keys:
        value = parent.get(key)
        if value is not None and type(value) is not str:
            raise _Bad(f"{path}.{key}" if path else key, f"expected a string, got {_describe(value)}")


def _check_spec(check: Callable[[dict[str, Any], str], None]) -> Callable[[Any, str], None]:
    return lambda value, path: check(_mapping(value, path), path)


def _integer(value: Any, path: str) -> None:
    if value is not None and (type(value) is not int):
        raise _Bad(path, f"expected an integer, got {_describe(value)}")


def _boolean(value: Any, path: str) -> None:
    if value is not None and type(value) is not bool:
        raise _Bad(path, f"expected true or false, got {_describe(value)}")


def _string_map(value: Any, path: str) -> None:
    for key, item in _mapping(value, path).items():
        if type(item) is not str:
            raise _Bad(f"{path}[{key}]", f"expected a string, got {_describe(item)}")


_VALID_QUANTITIES: set[str] = set()  # texts known to parse (a cluster repeats a few)


def _quantities(value: Any, path: str) -> None:
    if value is None:
        return
    if type(value) is not dict:
        raise _Bad(path, f"expected an object, got {_describe(value)}")
    known = _VALID_QUANTITIES
    for name, quantity in value.items():
        if type(quantity) is str and quantity in known:
            continue
        if not is_valid_quantity(quantity):
            raise _Bad(f"{path}[{name}]", f"invalid quantity {_describe(quantity)}")
        if type(quantity) is str and len(known) < 4096:
            known.add(quantity)


_models: dict[Any, TypeAdapter[Any]] = {}


def _model(kind: Any, value: Any, path: str) -> None:
    """``value`` read by a pydantic model (or type) of :mod:`pumice.api`, for the rare structured fields."""
    if value is None:
        return
    try:
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            kind.model_validate(value, by_alias=True, by_name=False)
        else:
            adapter = _models.get(kind)
            if adapter is None:
                adapter = _models[kind] = TypeAdapter(kind)
            adapter.validate_python(value, by_alias=True, by_name=False)
    except ValidationError as err:
        first = err.errors()[0]
        where = (path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])).lstrip(".")
        message = first["msg"] if first["type"] == "invalid_quantity" else first["msg"][:1].lower() + first["msg"][1:]
        raise _Bad(where, f"{message}, got {_describe(first.get('input'))}") from None


def _shared(check: Callable[[Any, str], None], value: Any, path: str) -> None:
    """``check`` a part that later versions of the object most likely share (remembered when it is one)."""
    if type(value) is dict or type(value) is list:
        _part(check, value, path)
    else:
        check(value, path)


def _alike(check: Callable[[Any, str], None], value: Any, path: str) -> None:
    """As :func:`_shared`, and remembered by content too: a part that new objects repeat (every replica's pod
    spec is equal and its own object)."""
    if type(value) is dict:
        _part(lambda part, where: _by_content(check, part, where), value, path)
    else:
        _shared(check, value, path)


def _by_content(check: Callable[[Any, str], None], value: Any, path: str) -> None:
    """``check(value, path)``, its verdict remembered by ``marshal``'s bytes of ``value``: they write types
    exactly (``1``, ``1.0`` and ``True`` differ), so equal bytes are equal values of equal types, which get the
    same verdict; a value it cannot write (not plain JSON types) is just checked."""
    try:
        content = marshal.dumps(value, 2)
    except ValueError:
        check(value, path)
        return
    verdict = _specs.get(content, _UNSEEN)
    if verdict is _UNSEEN:
        try:
            check(value, path)
            verdict = None
        except _Bad as bad:
            verdict = str(bad)
        if len(_specs) >= _MEMO_SIZE:
            _specs.clear()  # a cluster repeats a few specs: they come back at once
        _specs[content] = verdict
    if verdict is not None:
        raise _Bad.of(verdict)


def _owners(value: Any, path: str) -> None:
    _objects(value, path)


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if type(meta) is not dict:
        meta = _mapping(meta, "metadata")
    for key in ("name", "namespace", "uid"):  # what keys and names are made of
        value = meta.get(key)
        if value is not None and type(value) is not str:
            raise _Bad(f"metadata.{key}", f"expected a string, got {_describe(value)}")
    labels, annotations, owners = meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences")
    if labels:
        _shared(_string_map, labels, "metadata.labels")
    if annotations:
        _shared(_string_map, annotations, "metadata.annotations")
    if owners:
        _shared(_owners, owners, "metadata.ownerReferences")
    return meta


def _conditions(value: Any, path: str) -> None:
    if value is None:
        return
    if type(value) is not list:
        raise _Bad(path, f"expected a list, got {_describe(value)}")
    for index, condition in enumerate(value):
        if type(condition) is not dict:
            raise _Bad(f"{path}[{index}]", f"expected an object, got {_describe(condition)}")
        kind, status = condition.get("type"), condition.get("status")  # compared, kept in sets
        if (kind is not None and type(kind) is not str) or (status is not None and type(status) is not str):
            _strings(condition, f"{path}[{index}]", "type", "status")


# ----------------------------------------------------------------------------------------------- kinds


def _pod_spec(spec: dict[str, Any], path: str) -> None:
    from pumice.api.core import Affinity, Toleration
    from pumice.api.plain import plain_check

    for key in ("containers", "initContainers"):
        for index, container in enumerate(_objects(spec.get(key), f"{path}.{key}")):
            where = f"{path}.{key}[{index}]"
            _strings(container, where, "name", "restartPolicy")
            resources = _mapping(container.get("resources"), f"{where}.resources")
            _quantities(resources.get("requests"), f"{where}.resources.requests")
            _quantities(resources.get("limits"), f"{where}.resources.limits")
            for port_index, port in enumerate(_objects(container.get("ports"), f"{where}.ports")):
                for field in ("containerPort", "hostPort"):
                    _integer(port.get(field), f"{where}.ports[{port_index}].{field}")
                _strings(port, f"{where}.ports[{port_index}]", "protocol", "hostIP")
    _quantities(spec.get("overhead"), f"{path}.overhead")
    _string_map(spec.get("nodeSelector"), f"{path}.nodeSelector")
    _strings(spec, path, "nodeName", "priorityClassName", "schedulerName", "preemptionPolicy", "restartPolicy")
    _integer(spec.get("priority"), f"{path}.priority")
    _model(Affinity, _mapping(spec.get("affinity"), f"{path}.affinity") or None, f"{path}.affinity")
    tolerations = _items(spec.get("tolerations"), f"{path}.tolerations")
    if tolerations:  # every pod has some (the API server adds two): the model only to name what is wrong
        plain = plain_check(Toleration)
        if not all(plain(toleration) for toleration in tolerations):
            _model(list[Toleration], tolerations, f"{path}.tolerations")
    for index, constraint in enumerate(_objects(spec.get("topologySpreadConstraints"),
                                                f"{path}.topologySpreadConstraints")):
        where = f"{path}.topologySpreadConstraints[{index}]"
        _integer(constraint.get("maxSkew"), f"{where}.maxSkew")
        _strings(constraint, where, "topologyKey", "whenUnsatisfiable")
        _mapping(constraint.get("labelSelector"), f"{where}.labelSelector")
    _objects(spec.get("schedulingGates"), f"{path}.schedulingGates")


def _pod(pod: Mapping[str, Any]) -> None:
    _metadata(pod)
    _alike(_POD_SPEC, pod.get("spec"), "spec")
    _pod_status(pod.get("status"), "status")  # most often new with each version: not worth remembering


def _pod_status(value: Any, path: str) -> None:
    """What the components read of a pod's status (written most often of all: kept to plain lookups)."""
    if value is None:
        return
    if type(value) is not dict:
        raise _Bad("status", f"expected an object, got {_describe(value)}")
    get = value.get
    for key in ("phase", "nominatedNodeName", "startTime"):
        field = get(key)
        if field is not None and type(field) is not str:
            raise _Bad(f"status.{key}", f"expected a string, got {_describe(field)}")
    conditions = get("conditions")
    if conditions is not None:
        _conditions(conditions, "status.conditions")
    for key in ("containerStatuses", "initContainerStatuses"):
        containers = get(key)
        if not containers:
            continue
        for index, container in enumerate(_objects(containers, f"status.{key}")):
            for state_key in ("state", "lastState"):
                state = container.get(state_key)
                if state is None:
                    continue
                where = f"status.{key}[{index}].{state_key}"
                for phase, detail in _mapping(state, where).items():
                    if detail is not None and (type(detail) is not dict or type(detail.get("exitCode", 0)) is not int):
                        _integer(_mapping(detail, f"{where}.{phase}").get("exitCode"), f"{where}.{phase}.exitCode")


def _node(node: Mapping[str, Any]) -> None:
    _metadata(node)
    _shared(_NODE_SPEC, node.get("spec"), "spec")
    _shared(_NODE_STATUS, node.get("status"), "status")


def _node_spec(spec: dict[str, Any], path: str) -> None:
    _boolean(spec.get("unschedulable"), "spec.unschedulable")
    for index, taint in enumerate(_objects(spec.get("taints"), "spec.taints")):
        _strings(taint, f"spec.taints[{index}]", "key", "value", "effect")


def _node_status(status: dict[str, Any], path: str) -> None:
    _quantities(status.get("allocatable"), "status.allocatable")
    _quantities(status.get("capacity"), "status.capacity")
    _conditions(status.get("conditions"), "status.conditions")


def _podgroup(pg: Mapping[str, Any]) -> None:
    _metadata(pg)
    _shared(_PODGROUP_SPEC, pg.get("spec"), "spec")
    status = _mapping(pg.get("status"), "status")
    _strings(status, "status", "phase")
    for key in ("running", "succeeded", "failed"):
        _integer(status.get(key), f"status.{key}")
    _conditions(status.get("conditions"), "status.conditions")


def _podgroup_spec(spec: dict[str, Any], path: str) -> None:
    _integer(spec.get("minMember"), "spec.minMember")
    for task, count in _mapping(spec.get("minTaskMember"), "spec.minTaskMember").items():
        _integer(count, f"spec.minTaskMember[{task}]")
    _quantities(spec.get("minResources"), "spec.minResources")
    _strings(spec, "spec", "queue", "priorityClassName")
    topology = _mapping(spec.get("networkTopology"), "spec.networkTopology")
    _strings(topology, "spec.networkTopology", "mode")
    _integer(topology.get("highestTierAllowed"), "spec.networkTopology.highestTierAllowed")
    _objects(spec.get("subGroupPolicy"), "spec.subGroupPolicy")


def _queue(queue: Mapping[str, Any]) -> None:
    _metadata(queue)
    _shared(_QUEUE_SPEC, queue.get("spec"), "spec")
    status = queue.get("status")
    if status is not None:  # the scheduler writes it every cycle: what is read (state) only
        _strings(_mapping(status, "status"), "status", "state")


def _queue_spec(spec: dict[str, Any], path: str) -> None:
    _integer(spec.get("weight"), "spec.weight")
    _integer(spec.get("priority"), "spec.priority")
    _strings(spec, "spec", "parent")
    _boolean(spec.get("reclaimable"), "spec.reclaimable")
    _quantities(spec.get("capability"), "spec.capability")
    _quantities(spec.get("deserved"), "spec.deserved")
    _quantities(_mapping(spec.get("guarantee"), "spec.guarantee").get("resource"), "spec.guarantee.resource")


def _priority_class(pc: Mapping[str, Any]) -> None:
    _metadata(pc)
    _integer(pc.get("value"), "value")
    _boolean(pc.get("globalDefault"), "globalDefault")


def _whole(model_name: str) -> Callable[[Mapping[str, Any]], None]:
    """A kind read through its model as a whole (kinds with few objects)."""

    def check(obj: Mapping[str, Any]) -> None:
        from pumice.api import registry

        model = registry.model_for(str(obj.get("apiVersion", "")), model_name)
        _model(model, obj, "")

    return check


def _job(job: Mapping[str, Any]) -> None:
    from pumice.api.batch import JobSpec

    _metadata(job)
    spec = _mapping(job.get("spec"), "spec")
    _part(lambda value, path: _model(JobSpec, value, path), spec, "spec")
    status = _mapping(job.get("status"), "status")
    _strings(_mapping(status.get("state"), "status.state"), "status.state", "phase")
    for key in ("version", "retryCount", "minAvailable", "pending", "running", "succeeded", "failed"):
        _integer(status.get(key), f"status.{key}")


_batch_job = _whole("Job")


def _any_job(job: Mapping[str, Any]) -> None:
    """A Volcano Job, or a Kubernetes ``batch/v1`` Job (same kind, another model)."""
    (_batch_job if job.get("apiVersion") == "batch/v1" else _job)(job)


_POD_SPEC = _check_spec(_pod_spec)
_NODE_SPEC = _check_spec(_node_spec)
_NODE_STATUS = _check_spec(_node_status)
_PODGROUP_SPEC = _check_spec(_podgroup_spec)
_QUEUE_SPEC = _check_spec(_queue_spec)

_CHECKERS: dict[Any, Callable[[Mapping[str, Any]], None]] = {
    "Pod": _pod,
    "Node": _node,
    "PodGroup": _podgroup,
    "Queue": _queue,
    "PriorityClass": _priority_class,
    "HyperNode": _whole("HyperNode"),
    "Job": _any_job,
    "Command": _whole("Command"),
    # the workload controllers' kinds (few objects each): read through their models as a whole
    "Deployment": _whole("Deployment"),
    "ReplicaSet": _whole("ReplicaSet"),
    "StatefulSet": _whole("StatefulSet"),
    "CronJob": _whole("CronJob"),
    "JobFlow": _whole("JobFlow"),
    "JobTemplate": _whole("JobTemplate"),
    "ResourceQuota": _whole("ResourceQuota"),  # the quota controller and the resourcequota plugin
}
