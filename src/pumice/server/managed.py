"""Field ownership (``metadata.managedFields``) and server-side apply, after kube-apiserver's
structured-merge-diff.

A field set is a set of paths; a path is a tuple of ``fieldsV1`` keys: ``f:<name>`` for a map field,
``k:<json>`` for an item of a list merged by key (built-in kinds' ``containers`` by ``name``, ...), ``v:<json>``
for an item of a set (``finalizers``) and ``.`` for such an item itself. Lists of custom resources are
atomic, as kube-apiserver treats them without a schema; maps are merged field by field.

``apply`` is ``PATCH`` with ``application/apply-patch+yaml``: the applied configuration is merged into the
object; fields the manager applied before and no longer applies are removed unless another manager owns
them too; a field another manager owns with a different value is a conflict (409) unless ``force``, which
takes it over. Other writes record an ``Update`` entry for their manager: the fields they changed, taken
from whoever owned them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pumice.store import Conflict
from pumice.store.jsonutil import copy_json

from .patch import MERGE_KEYS

__all__ = ["FieldConflict", "apply_configuration", "field_set", "manager_of", "record_update"]

Path = tuple[str, ...]
_IDENTITY = {"apiVersion", "kind"}
_META_IGNORED = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                 "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}


class FieldConflict(Conflict):
    """409 with kube-apiserver's message and ``FieldManagerConflict`` causes."""

    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        self.conflicts = conflicts
        parts = [f"conflict with {manager}: {render_path(path)}" for manager, path in conflicts]
        n = len(conflicts)
        if n == 1:
            message = f"Apply failed with 1 conflict: {parts[0]}"
        else:
            message = f"Apply failed with {n} conflicts: " + "\n".join(parts)
        super().__init__(message)

    def to_status(self) -> dict[str, Any]:
        status = super().to_status()
        status["details"] = {"causes": [{"type": "FieldManagerConflict", "message": f"conflict with {m}",
                                         "field": render_path(p)} for m, p in self.conflicts]}
        return status


def manager_of(field_manager: str | None, user_agent: str | None) -> str:
    """The manager's name: ``fieldManager``, else the user agent up to its first ``/`` (kube-apiserver)."""
    if field_manager:
        return field_manager
    return (user_agent or "unknown").split("/", 1)[0] or "unknown"


# --- paths --------------------------------------------------------------------------------------------------


def _list_key(field: str, items: list[Any], builtin: bool) -> str | bool | None:
    """How a list merges: a key name (associative), True (a set of scalars), or None (atomic)."""
    if not builtin or field not in MERGE_KEYS:
        return None
    keys = MERGE_KEYS[field]
    if keys is None:
        return True
    for key in keys:
        if all(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def _item_key(item: dict[str, Any], key: str) -> str:
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))


def field_set(obj: Any, builtin: bool) -> set[Path]:
    """The leaf paths of ``obj`` (identity and system metadata left out, as in ``managedFields``)."""
    out: set[Path] = set()
    if not isinstance(obj, dict):
        return out
    for key, value in obj.items():
        if key in _IDENTITY or key == "status":
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _META_IGNORED}
            for path in _walk(meta, ("f:metadata",), builtin):
                out.add(path)
            continue
        out |= set(_walk({key: value}, (), builtin))
    return out


def _walk(value: Any, prefix: Path, builtin: bool) -> Iterator[Path]:
    if isinstance(value, dict):
        for key, child in value.items():
            path = (*prefix, f"f:{key}")
            if isinstance(child, dict) and child:
                if not builtin:
                    # A map of a custom resource is owned itself too (its labels and annotations as well, as
                    # kube-apiserver records them for CRDs with structural schemas such as pumice crds').
                    yield (*path, ".")
                yield from _walk(child, path, builtin)
            elif isinstance(child, list) and child:
                mode = _list_key(key, child, builtin)
                if mode is None:
                    yield path
                elif mode is True:
                    for item in child:
                        yield (*path, "v:" + json.dumps(item, separators=(",", ":")))
                else:
                    for item in child:
                        item_path = (*path, _item_key(item, str(mode)))
                        yield (*item_path, ".")
                        yield from _walk(item, item_path, builtin)
            else:
                yield path


def render_path(path: Path) -> str:
    """``.spec.containers[name="c"].image`` (kube-apiserver's form in conflict messages)."""
    out = ""
    for part in path:
        if part.startswith("f:"):
            out += "." + part[2:]
        elif part.startswith("k:"):
            key = json.loads(part[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
        elif part.startswith("v:"):
            out += f"[{part[2:]}]"
    return out


_MISSING = object()


def value_at(obj: Any, path: Path) -> Any:
    cur = obj
    for part in path:
        if part == ".":
            return cur
        if part.startswith("f:"):
            if not isinstance(cur, dict) or part[2:] not in cur:
                return _MISSING
            cur = cur[part[2:]]
        elif part.startswith("k:"):
            key = json.loads(part[2:])
            if not isinstance(cur, list):
                return _MISSING
            cur = next((i for i in cur if isinstance(i, dict) and all(i.get(k) == v for k, v in key.items())),
                       _MISSING)
            if cur is _MISSING:
                return _MISSING
        elif part.startswith("v:"):
            item = json.loads(part[2:])
            return item if isinstance(cur, list) and item in cur else _MISSING
    return cur


def _remove(obj: Any, path: Path) -> None:
    parent_path, last = path[:-1], path[-1]
    if last == "." and parent_path and parent_path[-1].startswith("f:"):
        _remove(obj, parent_path)  # a map owned itself: the map goes
        return
    if last == ".":
        holder_path, item = parent_path[:-1], parent_path[-1]
        holder = value_at(obj, holder_path)
        if isinstance(holder, list):
            key = json.loads(item[2:])
            holder[:] = [i for i in holder if not (isinstance(i, dict) and all(i.get(k) == v for k, v in key.items()))]
        return
    parent = value_at(obj, parent_path)
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("v:") and isinstance(parent, list):
        item = json.loads(last[2:])
        parent[:] = [i for i in parent if i != item]


# --- fieldsV1 <-> sets ---------------------------------------------------------------------------------------


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        path = (*prefix, key)
        if isinstance(child, dict) and child:
            out |= from_fields_v1(child, path)
        else:
            out.add(path)
    return out


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in (obj.get("metadata") or {}).get("managedFields") or [] if isinstance(e, dict)]


def _entry(manager: str, operation: str, api_version: str, now: str, paths: set[Path]) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


def _set_entries(obj: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    meta = obj.setdefault("metadata", {})
    kept = [e for e in entries if e.get("fieldsV1") or e.get("operation") == "Apply"]
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


# --- writes -------------------------------------------------------------------------------------------------


def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str, *, builtin: bool,
                  subresource: str | None = None) -> None:
    """Give ``manager`` (an ``Update``) the fields this write changed in ``new``, in place."""
    api_version = str(new.get("apiVersion") or (old or {}).get("apiVersion") or "")
    if subresource == "status":
        before = {"status": (old or {}).get("status")} if old else {}
        after = {"status": new.get("status")}
        changed = _changed(_status_set(before), _status_set(after), before, after)
        entries = _entries(old) if old is not None else _entries(new)
    else:
        new_set = field_set(new, builtin)
        changed = new_set if old is None else _changed(field_set(old, builtin), new_set, old, new)
        entries = _entries(old) if old is not None else []
    out: list[dict[str, Any]] = []
    mine: set[Path] = set()
    for e in entries:
        paths = from_fields_v1(e.get("fieldsV1"))
        if e.get("manager") == manager and e.get("operation") == "Update" and e.get("subresource") == subresource:
            mine = paths
            continue
        out.append({**e, "fieldsV1": to_fields_v1(paths - changed)})
    mine = (mine | changed) & _current(new, builtin, subresource)
    entry = _entry(manager, "Update", api_version, now, mine)
    if subresource:
        entry["subresource"] = subresource
    if mine:
        out.append(entry)
    _set_entries(new, out)


def _status_set(obj: dict[str, Any]) -> set[Path]:
    status = obj.get("status")
    return set(_walk({"status": status}, (), True)) if status else set()


def _current(obj: dict[str, Any], builtin: bool, subresource: str | None) -> set[Path]:
    return _status_set(obj) if subresource == "status" else field_set(obj, builtin)


def _changed(before: set[Path], after: set[Path], old: Any, new: Any) -> set[Path]:
    changed = {p for p in after if p not in before or value_at(old, p) != value_at(new, p)}
    return changed | (before - after)


def apply_configuration(current: dict[str, Any] | None, config: dict[str, Any], manager: str, now: str, *,
                        builtin: bool, force: bool) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``current`` (None: it does not exist yet)."""
    applied = field_set(config, builtin)
    api_version = str(config.get("apiVersion") or "")
    if current is None:
        result = copy_json(config)
        _set_entries(result, [_entry(manager, "Apply", api_version, now, applied)])
        return result
    entries = _entries(current)
    previous: set[Path] = set()
    others: list[tuple[dict[str, Any], set[Path]]] = []
    for e in entries:
        paths = from_fields_v1(e.get("fieldsV1"))
        if e.get("manager") == manager and e.get("operation") == "Apply":
            previous = paths
        else:
            others.append((e, paths))
    conflicts: list[tuple[str, Path]] = []
    for e, paths in others:
        if e.get("subresource"):
            continue
        for path in sorted(paths & applied):
            if path[-1] != "." and value_at(current, path) != value_at(config, path):
                # an Update manager is named with the version it wrote, as structured-merge-diff does
                who = f'"{e.get("manager")}"'
                if e.get("operation") == "Update":
                    who += f" using {e.get('apiVersion')}"
                conflicts.append((who, path))
    if conflicts and not force:
        raise FieldConflict(conflicts)
    result = _merge(copy_json(current), config, builtin, ())
    owned_by_others = set().union(*(paths for _, paths in others)) if others else set()
    for path in sorted(previous - applied, key=len, reverse=True):
        if path not in owned_by_others and not any(path[:len(p)] == p for p in applied if p[-1] != "."):
            _remove(result, path)
    out: list[dict[str, Any]] = []
    taken = {p for _, p in conflicts}
    for e, paths in others:
        out.append({**e, "fieldsV1": to_fields_v1(paths - taken)} if taken & paths else e)
    out.append(_entry(manager, "Apply", api_version, now, applied))
    _set_entries(result, out)
    return result


def _merge(target: Any, patch: Any, builtin: bool, path: Path) -> Any:
    if not isinstance(target, dict) or not isinstance(patch, dict):
        return copy_json(patch)
    for key, value in patch.items():
        if key in ("status",) and not path:
            continue
        if key == "metadata" and not path and isinstance(value, dict):
            meta = target.setdefault("metadata", {})
            for k, v in value.items():
                if k in ("name", "namespace", "managedFields", "resourceVersion", "uid"):
                    continue
                meta[k] = _merge(meta.get(k), v, builtin, ("f:metadata", f"f:{k}"))
            continue
        current = target.get(key)
        if isinstance(value, list) and isinstance(current, list):
            mode = _list_key(key, current + value, builtin)
            if mode is True:
                target[key] = current + [i for i in value if i not in current]
                continue
            if isinstance(mode, str):
                merged = list(current)
                for item in value:
                    at = next((n for n, old in enumerate(merged) if isinstance(old, dict)
                               and old.get(mode) == item.get(mode)), None)
                    if at is None:
                        merged.append(copy_json(item))
                    else:
                        merged[at] = _merge(merged[at], item, builtin, path)
                target[key] = merged
                continue
        target[key] = _merge(current, value, builtin, (*path, f"f:{key}")) if isinstance(value, dict) else \
            copy_json(value)
    return target
