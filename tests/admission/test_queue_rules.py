"""Queue admission: the hierarchy rules (issue 3 included), each refusal's one-line message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.admission import admitted_memory_store
from pumice.controllers import ensure_default_queues
from pumice.store import Invalid, MemoryStore, StoreError
from tests.builders import queue
from tests.builders import vcjob as job

from ..controllers.harness import QUEUES, Cluster


@pytest.fixture
def store() -> MemoryStore:
    s = admitted_memory_store()
    ensure_default_queues(s)
    return s


def _refused(store: MemoryStore, obj: dict[str, Any], match: str) -> str:
    with pytest.raises(Invalid, match=match) as err:
        store.create(QUEUES, obj)
    assert "\n" not in err.value.message
    return getattr(err.value, "refusal", err.value.message)


def test_tenant_child_refused_while_parent_has_pods_and_no_children_then_accepted() -> None:
    c = Cluster(run_for=lambda p: 60.0)
    c.apply([queue("tenant-a", deserved={"cpu": "12"}, guarantee={"resource": {"cpu": "2"}})])
    c.apply([job("work", replicas=3, queue="tenant-a")])
    c.run_until(lambda: c.phase("work") == "Running")
    with pytest.raises(Invalid) as err:
        c.store.create(QUEUES, queue("tenant-a-q1", parent="tenant-a", deserved={"cpu": "4"}))
    assert err.value.refusal == (
        'queue "tenant-a-q1" cannot be created under "tenant-a": "tenant-a" has no child queues and 3 pods allocated'
    )
    # once the parent's pods are done, the first child is accepted...
    c.run_until(lambda: c.phase("work") == "Completed")
    c.apply([queue("tenant-a-q1", parent="tenant-a", deserved={"cpu": "4"})])
    # ...and with a child in place the parent's allocation (a roll-up of its children's) no longer blocks
    c.apply([job("child-work", replicas=2, queue="tenant-a-q1")])
    c.run_until(lambda: c.phase("child-work") == "Running")
    c.apply([queue("tenant-a-q2", parent="tenant-a", deserved={"cpu": "4"})])
    assert c.store.get(QUEUES, None, "tenant-a-q2")["spec"]["parent"] == "tenant-a"
    # and the parent, no longer a leaf, takes no job
    with pytest.raises(Invalid, match='leaf queue, queue "tenant-a" has 2 child queues'):
        c.store.create("jobs.batch.volcano.sh", job("late", queue="tenant-a"))


def test_queue_cannot_be_its_own_parent(store: MemoryStore) -> None:
    assert _refused(store, queue("self", parent="self"), "itself") == 'queue "self" cannot use itself as its parent'


def test_parent_must_exist(store: MemoryStore) -> None:
    _refused(store, queue("orphan", parent="ghost"), 'parent queue "ghost" does not exist')


def test_queue_cannot_move_under_its_descendant(store: MemoryStore) -> None:
    store.create(QUEUES, queue("a", deserved={"cpu": "4"}))
    store.create(QUEUES, queue("b", parent="a", deserved={"cpu": "4"}))
    store.create(QUEUES, queue("c", parent="b", deserved={"cpu": "4"}))
    with pytest.raises(Invalid) as err:
        store.patch(QUEUES, None, "a", {"spec": {"parent": "c"}})
    assert err.value.refusal == 'queue "a" cannot be moved under "c": "a" is an ancestor of "c"'


def test_at_most_five_levels(store: MemoryStore) -> None:
    parent = "root"
    for level in range(1, 6):
        store.create(QUEUES, queue(f"l{level}", parent=parent, deserved={"cpu": "4"}))
        parent = f"l{level}"
    message = _refused(store, queue("l6", parent="l5", deserved={"cpu": "4"}), "depth")
    assert message == 'queue "l6" cannot be created under "l5": it would be at depth 6, more than the maximum of 5'


def test_root_resources_cannot_change(store: MemoryStore) -> None:
    with pytest.raises(Invalid) as err:
        store.patch(QUEUES, None, "root", {"spec": {"capability": {"cpu": "10"}}})
    assert err.value.refusal == "queue \"root\": the root queue's capability cannot be changed"
    store.patch(QUEUES, None, "root", {"metadata": {"labels": {"a": "b"}}})  # other changes are fine


@pytest.mark.parametrize("name", ["root", "default"])
def test_builtin_queues_cannot_be_deleted(store: MemoryStore, name: str) -> None:
    with pytest.raises(Invalid) as err:
        store.delete(QUEUES, None, name)
    assert err.value.refusal == f'queue "{name}" cannot be deleted: it is a built-in queue'


def test_queue_with_children_cannot_be_deleted(store: MemoryStore) -> None:
    store.create(QUEUES, queue("p", deserved={"cpu": "8"}))
    store.create(QUEUES, queue("k1", parent="p", deserved={"cpu": "4"}))
    store.create(QUEUES, queue("k2", parent="p", deserved={"cpu": "4"}))
    with pytest.raises(Invalid) as err:
        store.delete(QUEUES, None, "p")
    assert err.value.refusal == 'queue "p" cannot be deleted: it has 2 child queues: k1, k2'
    store.delete(QUEUES, None, "k1")
    store.delete(QUEUES, None, "k2")
    store.delete(QUEUES, None, "p")


def test_child_capability_within_ancestors(store: MemoryStore) -> None:
    store.create(QUEUES, queue("cap", capability={"cpu": "4", "memory": "8Gi"}, deserved={"cpu": "4"}))
    store.create(QUEUES, queue("mid", parent="cap", deserved={"cpu": "4"}))
    message = _refused(store, queue("leaf", parent="mid", capability={"cpu": "6"}, deserved={"cpu": "2"}),
                       "exceeds capability")
    assert message == 'queue "leaf": capability cpu=6 exceeds capability cpu=4 of ancestor "cap"'


def test_children_deserved_and_guarantee_fit_the_parent(store: MemoryStore) -> None:
    store.create(QUEUES, queue("p", deserved={"cpu": "8"}, guarantee={"resource": {"cpu": "2"}}))
    store.create(QUEUES, queue("k1", parent="p", deserved={"cpu": "6"}))
    message = _refused(store, queue("k2", parent="p", deserved={"cpu": "4"}), "deserved")
    assert message == (
        'queue "k2": the children of "p" would have deserved cpu=10 in total, more than the parent\'s deserved cpu=8'
    )
    message = _refused(store, queue("k3", parent="p", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "3"}}),
                       "guarantee")
    assert message == 'queue "k3": guarantee must not exceed deserved: guarantee cpu=3 > deserved cpu=2'
    message = _refused(store, queue("k4", parent="p", deserved={"cpu": "2", "memory": "1Gi"}), "memory")
    assert message == (
        'queue "k4": the children of "p" would have deserved memory=1Gi in total, more than the parent\'s '
        "deserved memory=0"
    )


def test_guarantee_deserved_capability_order(store: MemoryStore) -> None:
    message = _refused(store, queue("q", deserved={"cpu": "8"}, capability={"cpu": "4"}), "capability")
    assert message == 'queue "q": deserved must not exceed capability: deserved cpu=8 > capability cpu=4'
    store.create(QUEUES, queue("ok", guarantee={"resource": {"cpu": "1"}}, deserved={"cpu": "2"},
                               capability={"cpu": "4"}))


def test_parent_cannot_shrink_below_its_children(store: MemoryStore) -> None:
    store.create(QUEUES, queue("p", deserved={"cpu": "6"}, capability={"cpu": "8"}))
    store.create(QUEUES, queue("k", parent="p", deserved={"cpu": "6"}, capability={"cpu": "8"}))
    with pytest.raises(Invalid, match=r"deserved cpu=4 is below the sum of its children's deserved cpu=6"):
        store.patch(QUEUES, None, "p", {"spec": {"deserved": {"cpu": "4"}}})
    with pytest.raises(Invalid, match='capability cpu=7 is below capability cpu=8 of its child "k"'):
        store.patch(QUEUES, None, "p", {"spec": {"capability": {"cpu": "7"}}})


def test_weight_range_and_defaults(store: MemoryStore) -> None:
    _refused(store, queue("heavy", weight=70000), "spec.weight in body should be less than or equal to 65535")
    created = store.create(QUEUES, queue("plain"))
    assert created["spec"]["weight"] == 1 and created["spec"]["reclaimable"] is True
    assert created["status"]["state"] == "Open"


def test_root_cannot_get_a_parent(store: MemoryStore) -> None:
    """Issue 18: ``PATCH queues/root {"spec": {"parent": "child-a"}}`` with child-a root's child was accepted, and
    the hierarchy then had a cycle."""
    store.create(QUEUES, queue("child-a", parent="root"))
    with pytest.raises(Invalid) as err:
        store.patch(QUEUES, None, "root", {"spec": {"parent": "child-a"}})
    assert err.value.code == 400 and "the root queue cannot have a parent" in err.value.message
    assert not store.get(QUEUES, None, "root")["spec"].get("parent")


def _parents(store: MemoryStore) -> dict[str, str]:
    items, _ = store.list(QUEUES)
    return {q["metadata"]["name"]: str((q.get("spec") or {}).get("parent") or "") for q in items}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["create", "move"]), st.sampled_from(["root", "a", "b", "c", "d", "e"]),
                          st.sampled_from(["", "root", "a", "b", "c", "d", "e", "default"])), max_size=25))
def test_no_write_ever_makes_the_queue_hierarchy_a_cycle(ops: list[tuple[str, str, str]]) -> None:
    """Whatever creates and moves are tried, the queues accepted form a tree under root: following ``spec.parent``
    from any queue reaches root, and root has no parent."""
    store = admitted_memory_store()
    ensure_default_queues(store)
    for op, name, parent in ops:
        try:
            if op == "create":
                store.create(QUEUES, queue(name, parent=parent or None))
            else:
                store.patch(QUEUES, None, name, {"spec": {"parent": parent or None}})
        except (Invalid, StoreError):
            continue
        parents = _parents(store)
        assert not parents["root"]
        for start in parents:
            seen, current = set(), start
            while current != "root":
                assert current not in seen, f"cycle through {current}: {parents}"
                seen.add(current)
                current = parents.get(current) or "root"
