"""Finalizers, admission, binding and batches: shared by both stores."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.store import BadRequest, BaseStore, Conflict, Invalid, NotFound, StoreError
from tests.builders import pod

from .conftest import StoreFactory

# --- finalizers -------------------------------------------------------------------------------------------


def test_finalizers_delay_deletion(store: BaseStore) -> None:
    store.create("jobs.batch.volcano.sh", {"metadata": {"name": "j", "finalizers": ["a", "b"]}, "spec": {}})
    watcher = store.watch("jobs.batch.volcano.sh", resource_version=store.resource_version)
    marked = store.delete("jobs.batch.volcano.sh", "default", "j")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["generation"] == 2
    again = store.delete("jobs.batch.volcano.sh", "default", "j")  # idempotent while terminating
    assert again == marked
    obj = store.get("jobs.batch.volcano.sh", "default", "j")
    obj["metadata"]["finalizers"] = ["a", "b", "c"]
    with pytest.raises(Invalid, match="finalizers"):
        store.update("jobs.batch.volcano.sh", obj)
    obj["metadata"]["finalizers"] = ["b"]
    obj["metadata"]["deletionTimestamp"] = None  # cannot be cleared by an update
    assert store.update("jobs.batch.volcano.sh", obj)["metadata"]["deletionTimestamp"]
    last = store.patch("jobs.batch.volcano.sh", "default", "j", {"metadata": {"finalizers": None}})
    assert last["metadata"]["resourceVersion"] == "4"
    with pytest.raises(NotFound):
        store.get("jobs.batch.volcano.sh", "default", "j")
    assert [e.type for e in watcher.drain()] == ["MODIFIED", "MODIFIED", "DELETED"]


# --- admission --------------------------------------------------------------------------------------------


def test_admission_mutates_and_refuses(make_store: StoreFactory) -> None:
    calls: list[tuple[str, str, bool, bool]] = []

    def admission(op: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Any:
        calls.append((op, resource, new is not None, old is not None))
        if op == "DELETE":
            assert old is not None
            if old["metadata"].get("labels", {}).get("protected") == "true":
                raise Invalid("protected objects cannot be deleted")
            return None
        assert new is not None
        if resource == "pods" and op == "CREATE":
            new["spec"].setdefault("schedulerName", "volcano")
            new["metadata"]["uid"] = "admission-cannot-change-this"
        if resource == "queues.scheduling.volcano.sh":
            weight = new.get("spec", {}).get("weight", 1)
            if weight < 1:
                raise Invalid(f"queue weight must be positive, got {weight}")
            return {**new, "spec": {**new.get("spec", {}), "weight": weight, "reclaimable": True}}
        if resource == "pods/status" and new.get("status", {}).get("phase") == "Bogus":
            raise Invalid("bad phase")
        return None

    store = make_store(admission=admission)
    created = store.create("pods", {"metadata": {"name": "p", "uid": "mine"}, "spec": {}})
    assert created["spec"]["schedulerName"] == "volcano"
    assert created["metadata"]["uid"] == "mine"
    queue = store.create("queues.scheduling.volcano.sh", {"metadata": {"name": "q"}, "spec": {"weight": 2}})
    assert queue["spec"] == {"weight": 2, "reclaimable": True}
    rv = store.resource_version
    watcher = store.watch("queues.scheduling.volcano.sh", resource_version=rv)
    with pytest.raises(Invalid) as err:
        store.create("queues.scheduling.volcano.sh", {"metadata": {"name": "bad"}, "spec": {"weight": 0}})
    assert err.value.code == 422 and "weight" in str(err.value)
    with pytest.raises(Invalid):
        store.patch("queues.scheduling.volcano.sh", None, "q", {"spec": {"weight": -1}})
    with pytest.raises(Invalid):
        store.patch("pods", "default", "p", {"status": {"phase": "Bogus"}}, subresource="status")
    store.patch("pods", "default", "p", {"metadata": {"labels": {"protected": "true"}}})
    with pytest.raises(Invalid):
        store.delete("pods", "default", "p")
    # refused writes left nothing behind
    assert store.resource_version == str(int(rv) + 1)
    assert [q["metadata"]["name"] for q in store.list("queues.scheduling.volcano.sh")[0]] == ["q"]
    assert store.get("queues.scheduling.volcano.sh", None, "q")["spec"]["weight"] == 2
    assert "phase" not in store.get("pods", "default", "p").get("status", {})
    assert watcher.drain() == []
    store.bind("default", "p", "n1")
    assert ("UPDATE", "pods/binding", True, True) in calls
    assert ("UPDATE", "pods/status", True, True) in calls
    assert ("DELETE", "pods", False, True) in calls


def test_admission_cannot_break_subresource_rules(make_store: StoreFactory) -> None:
    def admission(op: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Any:
        if new is not None and op == "UPDATE":
            new.setdefault("spec", {})["sneaky"] = True
            if old is not None:
                old["metadata"]["name"] = "mutating-old-is-harmless"
        return None

    store = make_store(admission=admission)
    store.create("pods", pod("a"))
    updated = store.patch("pods", "default", "a", {"status": {"phase": "Running"}}, subresource="status")
    assert "sneaky" not in updated["spec"]
    bound = store.bind("default", "a", "n1")
    assert "sneaky" not in bound["spec"]
    assert store.get("pods", "default", "a")["metadata"]["name"] == "a"


def test_admission_sees_only_the_writes_it_declares(make_store: StoreFactory) -> None:
    calls: list[tuple[str, str]] = []

    class Hook:
        resources = frozenset({"pods", "configmaps"})
        deletes = frozenset({"configmaps"})

        def __call__(self, op: str, resource: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Any:
            calls.append((op, resource))
            return None

    store = make_store(admission=Hook())
    store.create("pods", pod("a"))
    store.patch("pods", "default", "a", {"status": {"phase": "Running"}}, subresource="status")
    store.create("configmaps", {"metadata": {"name": "c"}})
    store.create("services", {"metadata": {"name": "s"}})
    for resource, name in (("pods", "a"), ("configmaps", "c"), ("services", "s")):
        store.delete(resource, "default", name)
    assert calls == [("CREATE", "pods"), ("CREATE", "configmaps"), ("DELETE", "configmaps")]


# --- binding ----------------------------------------------------------------------------------------------


def test_bind_once(store: BaseStore) -> None:
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    store.create("pods", pod("a", status={"conditions": [unschedulable]}))
    bound = store.bind("default", "a", "node-1")
    assert bound["spec"]["nodeName"] == "node-1"
    condition = bound["status"]["conditions"][0]
    assert condition["type"] == "PodScheduled" and condition["status"] == "True"
    assert "reason" not in condition
    assert condition["lastTransitionTime"]
    with pytest.raises(Conflict) as err:
        store.bind("default", "a", "node-2")
    assert "already assigned" in str(err.value)
    with pytest.raises(Conflict):
        store.bind("default", "a", "node-1")
    assert store.get("pods", "default", "a")["spec"]["nodeName"] == "node-1"
    with pytest.raises(NotFound):
        store.bind("default", "missing", "node-1")
    # an update cannot rebind either
    obj = store.get("pods", "default", "a")
    obj["spec"]["nodeName"] = "node-2"
    with pytest.raises(Invalid):
        store.update("pods", obj)
    # a pod created bound is bound
    store.create("pods", pod("pre", node="node-3"))
    with pytest.raises(Conflict):
        store.bind("default", "pre", "node-1")


def test_bind_refuses_terminating_pod(store: BaseStore) -> None:
    store.create("pods", pod("a") | {"metadata": {"name": "a", "finalizers": ["x"]}})
    store.delete("pods", "default", "a")
    with pytest.raises(Conflict, match="being deleted"):
        store.bind("default", "a", "n1")


# --- batches ----------------------------------------------------------------------------------------------


def test_batch_commits_at_exit(store: BaseStore) -> None:
    watcher = store.watch("pods", resource_version="0")
    with store.batch():
        for i in range(5):
            store.create("pods", pod(f"p{i}"))
        store.bind("default", "p0", "n1")
        assert store.get("pods", "default", "p0")["spec"]["nodeName"] == "n1"  # own writes visible
        assert watcher.drain() == []  # not published before the commit
        with store.batch():  # nested: joins the outer batch
            store.create("pods", pod("inner"))
    assert store.resource_version == "7"
    assert [e.object["metadata"]["resourceVersion"] for e in watcher.drain()] == [str(i) for i in range(1, 8)]


def test_batch_rolls_back_on_error(store: BaseStore) -> None:
    store.create("pods", pod("keep", labels={}))
    watcher = store.watch("pods", resource_version="1")
    with pytest.raises(RuntimeError), store.batch():
        store.create("pods", pod("a"))
        store.patch("pods", "default", "keep", {"metadata": {"labels": {"x": "y"}}})
        store.delete("pods", "default", "keep")
        store.bind("default", "a", "n1")
        with pytest.raises(Conflict):  # a refused write inside a batch does not abort it
            store.bind("default", "a", "n2")
        raise RuntimeError("abort the load")
    assert store.resource_version == "1"
    assert [p["metadata"]["name"] for p in store.list("pods")[0]] == ["keep"]
    assert store.get("pods", "default", "keep")["metadata"]["labels"] == {}
    assert watcher.drain() == []
    store.create("pods", pod("after"))
    assert summary_names(watcher.drain()) == [("ADDED", "after", "2")]


def summary_names(events: list[Any]) -> list[tuple[str, str, str]]:
    return [(e.type, e.object["metadata"]["name"], e.object["metadata"]["resourceVersion"]) for e in events]


def test_errors_are_store_errors() -> None:
    for error in (Conflict("x"), Invalid("y"), NotFound("z")):
        assert isinstance(error, StoreError)
        assert error.to_status()["code"] == error.code


def test_change_marker_moves_with_every_write_even_one_rolled_back(store: BaseStore) -> None:
    changes = store.change_marker
    start = changes()
    store.create("pods", pod("a"))
    after_create = changes()
    assert after_create != start
    store.patch("pods", "default", "a", {"metadata": {}})  # a no-op write: nothing changed
    assert changes() == after_create
    with pytest.raises(RuntimeError), store.batch():
        store.create("pods", pod("b"))
        raise RuntimeError("abort")
    assert store.resource_version == "1"  # the resourceVersion went back...
    assert changes() not in (start, after_create)  # ...the marker did not: readers polling it look again


def test_null_label_and_annotation_values_are_stored_as_empty_strings(store: BaseStore) -> None:
    """As kube-apiserver: Go decodes a null into a map of strings as "" (a label ``team: ""`` is valid); a value
    of another type is still refused."""
    created = store.create("configmaps", {"metadata": {"name": "c", "namespace": "default",
                                                       "labels": {"team": None, "tier": "a"},
                                                       "annotations": {"note": None}}})
    assert created["metadata"]["labels"] == {"team": "", "tier": "a"}
    assert created["metadata"]["annotations"] == {"note": ""}
    assert store.get("configmaps", "default", "c")["metadata"]["labels"] == {"team": "", "tier": "a"}
    with pytest.raises(BadRequest, match=r"metadata\.labels"):
        store.create("configmaps", {"metadata": {"name": "d", "namespace": "default", "labels": {"team": 1}}})
