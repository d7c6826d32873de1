"""Queue admission (``pkg/webhooks/admission/queues/validate``), hierarchy rules included.

Every refusal is ``Invalid`` with one line naming the rule and the numbers involved.
"""

from __future__ import annotations

from typing import Any

from pumice.api.quantity import QuantityError
from pumice.store import Invalid

from .lookup import Reader, allocated_pods, ancestors, children, get_queue, parent_of
from .resources import Amounts, amounts, exceeding, show, total

__all__ = ["MAX_QUEUE_DEPTH", "PROTECTED_QUEUES", "validate_queue", "validate_queue_delete"]

MAX_QUEUE_DEPTH = 5  # --max-queue-depth
PROTECTED_QUEUES = ("root", "default")
_RESOURCE_FIELDS = ("capability", "deserved", "guarantee")
Obj = dict[str, Any]


def _name(queue: Obj) -> str:
    return str((queue.get("metadata") or {}).get("name") or "")


def _resources(queue: Obj) -> dict[str, Amounts]:
    spec = queue.get("spec") or {}
    name = _name(queue)
    try:
        return {
            "capability": amounts(spec.get("capability")),
            "deserved": amounts(spec.get("deserved")),
            "guarantee": amounts((spec.get("guarantee") or {}).get("resource")),
        }
    except QuantityError as err:
        raise Invalid(f'queue "{name}": invalid resource quantity: {err}') from None


def _check_own(queue: Obj, res: dict[str, Amounts], creating: bool) -> None:
    """guarantee <= deserved <= capability, weight range, state."""
    name, spec = _name(queue), queue.get("spec") or {}
    weight = spec.get("weight")
    if weight is not None and not 1 <= int(weight) <= 65535:
        raise Invalid(f'queue "{name}": weight {weight} is out of range [1, 65535]')
    if spec.get("priority") is not None and int(spec["priority"]) < 0:
        raise Invalid(f'queue "{name}": priority {spec["priority"]} must not be negative')
    state = (queue.get("status") or {}).get("state")
    if creating and state and state not in ("Open", "Closed"):
        raise Invalid(f'queue "{name}": state {state!r} must be Open or Closed')
    guarantee, deserved, capability = res["guarantee"], res["deserved"], res["capability"]
    if guarantee and deserved:
        bad = exceeding(guarantee, deserved, missing_is_zero=True)
        if bad:
            raise Invalid(
                f'queue "{name}": guarantee must not exceed deserved: guarantee {show(guarantee, bad)} > '
                f"deserved {show(deserved, bad)}"
            )
    bad = exceeding(deserved, capability, missing_is_zero=False)
    if bad:
        raise Invalid(
            f'queue "{name}": deserved must not exceed capability: deserved {show(deserved, bad)} > '
            f"capability {show(capability, bad)}"
        )


def _check_parent(store: Reader, queue: Obj, parent: str, creating: bool) -> None:
    """Self/ancestor parent, existence, depth, and the busy-parent rule (volcano#4031)."""
    name = _name(queue)
    verb = "created" if creating else "moved"
    if parent == name:
        raise Invalid(f'queue "{name}" cannot use itself as its parent')
    if get_queue(store, parent) is None:
        raise Invalid(f'queue "{name}" cannot be {verb} under "{parent}": parent queue "{parent}" does not exist')
    chain = ancestors(store, parent)
    if name in chain:
        raise Invalid(f'queue "{name}" cannot be {verb} under "{parent}": "{name}" is an ancestor of "{parent}"')
    depth = 1 + 1 + sum(1 for a in chain if a != "root")  # the queue, its parent, the parent's non-root ancestors
    if depth > MAX_QUEUE_DEPTH:
        raise Invalid(
            f'queue "{name}" cannot be {verb} under "{parent}": it would be at depth {depth}, '
            f"more than the maximum of {MAX_QUEUE_DEPTH}"
        )
    siblings = [c for c in children(store, parent) if _name(c) != name]
    if not siblings:
        parent_obj = get_queue(store, parent)
        assert parent_obj is not None
        pods = allocated_pods(store, parent_obj)
        if pods:
            raise Invalid(
                f'queue "{name}" cannot be {verb} under "{parent}": "{parent}" has no child queues and '
                f"{pods} pods allocated"
            )


def _check_hierarchy_resources(store: Reader, queue: Obj, res: dict[str, Amounts], parent: str) -> None:
    """Capability within the ancestors'; siblings' deserved/guarantee within the parent's; own children."""
    name = _name(queue)
    capability = res["capability"]
    resolved: set[str] = set()
    for ancestor in [parent, *ancestors(store, parent)] if parent else []:
        if ancestor == "root":
            break
        anc = get_queue(store, ancestor)
        if anc is None:
            break
        limit = _resources(anc)["capability"]
        for dim in sorted(set(capability) & set(limit) - resolved):
            resolved.add(dim)  # the nearest ancestor that defines a dimension bounds it
            if capability[dim] > limit[dim]:
                raise Invalid(
                    f'queue "{name}": capability {show(capability, [dim])} exceeds capability '
                    f'{show(limit, [dim])} of ancestor "{ancestor}"'
                )
    if parent and parent != "root":
        parent_obj = get_queue(store, parent)
        if parent_obj is not None:
            parent_res = _resources(parent_obj)
            siblings = [_resources(c) for c in children(store, parent) if _name(c) != name] + [res]
            for field in ("deserved", "guarantee"):
                summed = total(s[field] for s in siblings)
                bad = exceeding(summed, parent_res[field], missing_is_zero=True)
                if bad:
                    raise Invalid(
                        f'queue "{name}": the children of "{parent}" would have {field} {show(summed, bad)} in '
                        f"total, more than the parent's {field} {show(parent_res[field], bad)}"
                    )
    kids = [(_name(c), _resources(c)) for c in children(store, name)]
    if kids:
        for kid, kid_res in kids:
            bad = exceeding(kid_res["capability"], capability, missing_is_zero=False)
            if bad:
                raise Invalid(
                    f'queue "{name}": capability {show(capability, bad)} is below capability '
                    f'{show(kid_res["capability"], bad)} of its child "{kid}"'
                )
        for field in ("deserved", "guarantee"):
            summed = total(r[field] for _, r in kids)
            bad = exceeding(summed, res[field], missing_is_zero=True)
            if bad:
                raise Invalid(
                    f'queue "{name}": {field} {show(res[field], bad)} is below the sum of its children\'s '
                    f"{field} {show(summed, bad)}"
                )


def validate_queue(store: Reader, queue: Obj, old: Obj | None) -> None:
    """CREATE (``old`` None) or UPDATE of a queue."""
    name = _name(queue)
    res = _resources(queue)
    creating = old is None
    _check_own(queue, res, creating)
    if name == "root":
        given = (queue.get("spec") or {}).get("parent")
        if given:  # the top of every hierarchy: a parent would close a cycle or hang root under another queue
            raise Invalid(f'queue "root": the root queue cannot have a parent (spec.parent {given!r})')
        if old is not None:
            old_res = _resources(old)
            changed = [f for f in _RESOURCE_FIELDS if old_res[f] != res[f]]
            if changed:
                raise Invalid(f'queue "root": the root queue\'s {", ".join(changed)} cannot be changed')
        return
    parent = parent_of(queue)
    parent_changed = creating or parent_of(old or {}) != parent
    if parent_changed and parent != "root":
        _check_parent(store, queue, parent, creating)
    resources_changed = creating or parent_changed or _resources(old or {}) != res
    if resources_changed:
        _check_hierarchy_resources(store, queue, res, parent)


def validate_queue_delete(store: Reader, queue: Obj) -> None:
    name = _name(queue)
    if name in PROTECTED_QUEUES:
        raise Invalid(f'queue "{name}" cannot be deleted: it is a built-in queue')
    kids = sorted(_name(c) for c in children(store, name))
    if kids:
        raise Invalid(f'queue "{name}" cannot be deleted: it has {len(kids)} child queues: {", ".join(kids)}')
