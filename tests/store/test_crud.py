"""Create / get / list / update / delete semantics, shared by both stores."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pumice.store import (
    AlreadyExists,
    BadRequest,
    BaseStore,
    Conflict,
    Invalid,
    NotFound,
    Store,
    StoreClosed,
    StoreError,
    format_timestamp,
)
from pumice.store.rules import uuid4_text
from tests.builders import pod

from .conftest import StoreFactory

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_satisfies_protocol(store: BaseStore) -> None:
    assert isinstance(store, Store)


def test_create_sets_system_fields(store: BaseStore) -> None:
    created = store.create("pods", pod("a"))
    meta = created["metadata"]
    assert uuid.UUID(meta["uid"]).version == 4
    assert RFC3339.match(meta["creationTimestamp"])
    assert meta["generation"] == 1
    assert meta["resourceVersion"] == store.resource_version == "1"
    assert created["apiVersion"] == "v1" and created["kind"] == "Pod"
    assert store.get("pods", "default", "a") == created


def test_create_keeps_caller_uid_and_uses_clock(make_store: StoreFactory) -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    store = make_store(clock=lambda: moment)
    created = store.create("pods", {"metadata": {"name": "a", "uid": "uid-1"}})
    assert created["metadata"]["uid"] == "uid-1"
    assert created["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    east = timezone(timedelta(hours=2))
    store2 = make_store(clock=lambda: datetime(2026, 1, 2, 5, 0, 0, tzinfo=east))
    assert store2.create("nodes", {"metadata": {"name": "n"}})["metadata"]["creationTimestamp"] == (
        "2026-01-02T03:00:00Z"
    )


def test_seeded_rng_makes_uids_and_generated_names_reproducible(make_store: StoreFactory) -> None:
    def run() -> list[tuple[str, str]]:
        store = make_store(rng=random.Random(7))
        out = []
        for _ in range(3):
            meta = store.create("pods", {"metadata": {"generateName": "job-"}})["metadata"]
            out.append((meta["name"], meta["uid"]))
        return out

    assert run() == run()
    rng = random.Random(7)  # the uid is the text of uuid.UUID made of the rng's bits
    uid = make_store(rng=random.Random(7)).create("pods", {"metadata": {"name": "a"}})["metadata"]["uid"]
    assert uid == str(uuid.UUID(int=rng.getrandbits(128), version=4))


def test_format_timestamp_is_strftimes_text() -> None:
    rng = random.Random(5)
    for seconds in [0.0, 1.9999999, 1_767_225_600.5, 253_402_300_799.0, *(rng.uniform(0, 4e9) for _ in range(2000))]:
        moment = datetime.fromtimestamp(seconds, UTC)
        assert format_timestamp(moment) == moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    offset = datetime(2026, 1, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(offset) == "2025-12-31T23:30:00Z"
    assert format_timestamp(datetime(2026, 1, 1, 12)) == "2026-01-01T12:00:00Z"  # naive: UTC
    early = datetime(999, 3, 4, tzinfo=UTC)
    assert format_timestamp(early) == early.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_uuid4_text_is_uuids_own_text() -> None:
    rng = random.Random(3)
    for bits in [0, (1 << 128) - 1, *(rng.getrandbits(128) for _ in range(2000))]:
        assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


def test_create_fills_defaults_and_rejects_wrong_kind(store: BaseStore) -> None:
    created = store.create("pods", {"metadata": {"name": "bare"}})
    assert list(created)[:2] == ["apiVersion", "kind"]
    assert created["metadata"]["namespace"] == "default"
    with pytest.raises(BadRequest):
        store.create("pods", {"kind": "Node", "metadata": {"name": "x"}})
    with pytest.raises(BadRequest):
        store.create("pods", {"apiVersion": "batch.volcano.sh/v1alpha1", "metadata": {"name": "x"}})
    # another version of the same group is accepted as is
    pg = store.create(
        "podgroups.scheduling.volcano.sh",
        {"apiVersion": "scheduling.volcano.sh/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"}},
    )
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1alpha1"


def test_create_duplicate_and_missing_name(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    with pytest.raises(AlreadyExists) as err:
        store.create("pods", pod("a"))
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"
    store.create("pods", pod("a", namespace="other"))  # same name, other namespace
    with pytest.raises(Invalid):
        store.create("pods", {"metadata": {}})
    with pytest.raises(Invalid):
        store.create("pods", {"metadata": {"name": "a/b"}})
    assert store.resource_version == "2"


def test_generate_name(store: BaseStore) -> None:
    names = {store.create("pods", {"metadata": {"generateName": "job-task-"}})["metadata"]["name"] for _ in range(50)}
    assert len(names) == 50
    assert all(re.fullmatch(r"job-task-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)
    long = store.create("pods", {"metadata": {"generateName": "x" * 80}})["metadata"]["name"]
    assert len(long) == 63


def test_cluster_scoped_and_unknown_resources(store: BaseStore) -> None:
    node = store.create("nodes", {"metadata": {"name": "n1", "namespace": "ignored"}})
    assert "namespace" not in node["metadata"]
    assert store.get("nodes", None, "n1")["metadata"]["name"] == "n1"
    assert store.get("nodes", "", "n1")["metadata"]["name"] == "n1"
    with pytest.raises(BadRequest):
        store.get("nodes", "default", "n1")
    with pytest.raises(BadRequest):
        store.get("pods", None, "x")
    with pytest.raises(NotFound, match=r"daemonsets\.apps"):
        store.create("daemonsets.apps", {"metadata": {"name": "d"}})
    with pytest.raises(NotFound):
        store.list("widgets")
    queue = store.create("queues.scheduling.volcano.sh", {"metadata": {"name": "q"}, "spec": {"weight": 1}})
    assert queue["apiVersion"] == "scheduling.volcano.sh/v1beta1" and queue["kind"] == "Queue"


def test_get_missing(store: BaseStore) -> None:
    with pytest.raises(NotFound) as err:
        store.get("pods", "default", "nope")
    assert err.value.code == 404
    assert err.value.to_status()["reason"] == "NotFound"


def test_returned_objects_are_copies(store: BaseStore) -> None:
    original = pod("a", labels={"app": "x"})
    created = store.create("pods", original)
    original["metadata"]["labels"]["app"] = "changed-input"
    created["metadata"]["labels"]["app"] = "changed-output"
    got = store.get("pods", "default", "a")
    got["spec"]["containers"].append({"name": "evil"})
    items, _ = store.list("pods")
    items[0]["metadata"]["labels"]["app"] = "changed-list"
    fresh = store.get("pods", "default", "a")
    assert fresh["metadata"]["labels"] == {"app": "x"}
    assert len(fresh["spec"]["containers"]) == 1


def test_non_json_values_refused(store: BaseStore) -> None:
    with pytest.raises(BadRequest):
        store.create("pods", {"metadata": {"name": "a"}, "spec": {"when": datetime.now(UTC)}})
    with pytest.raises(BadRequest):
        store.create("pods", {"metadata": {"name": "a"}, "spec": {1: "x"}})
    created = store.create("pods", {"metadata": {"name": "a"}, "spec": {"args": ("x", "y")}})
    assert created["spec"]["args"] == ["x", "y"]
    assert store.resource_version == "1"


def test_list_sorted_with_resource_version(store: BaseStore) -> None:
    for ns, name in [("b", "z"), ("a", "y"), ("b", "a"), ("a", "b")]:
        store.create("pods", pod(name, namespace=ns))
    items, rv = store.list("pods")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items] == [
        ("a", "b"),
        ("a", "y"),
        ("b", "a"),
        ("b", "z"),
    ]
    assert rv == "4"
    items, _ = store.list("pods", namespace="b")
    assert [p["metadata"]["name"] for p in items] == ["a", "z"]
    assert store.list("pods", namespace="none") == ([], "4")
    assert store.list("configmaps") == ([], "4")


def test_update_optimistic_concurrency(store: BaseStore) -> None:
    created = store.create("pods", pod("a"))
    stale = dict(created)
    created["metadata"]["labels"] = {"v": "1"}
    updated = store.update("pods", created)
    assert updated["metadata"]["resourceVersion"] == "2"
    stale["metadata"] = dict(stale["metadata"], labels={"v": "stale"}, resourceVersion="1")
    with pytest.raises(Conflict) as err:
        store.update("pods", stale)
    assert err.value.code == 409
    # no resourceVersion: unconditional update
    del stale["metadata"]["resourceVersion"]
    assert store.update("pods", stale)["metadata"]["labels"] == {"v": "stale"}
    # uid precondition
    wrong = store.get("pods", "default", "a")
    wrong["metadata"]["uid"] = "someone-else"
    with pytest.raises(Conflict):
        store.update("pods", wrong)
    with pytest.raises(NotFound):
        store.update("pods", pod("missing"))


def test_update_keeps_system_fields_and_bumps_generation(store: BaseStore) -> None:
    created = store.create("jobs.batch.volcano.sh", {"metadata": {"name": "j"}, "spec": {"minAvailable": 1}})
    change = store.get("jobs.batch.volcano.sh", "default", "j")
    change["metadata"]["uid"] = created["metadata"]["uid"]
    change["metadata"]["creationTimestamp"] = "1999-01-01T00:00:00Z"
    change["metadata"]["generation"] = 42
    change["metadata"]["labels"] = {"a": "b"}
    updated = store.update("jobs.batch.volcano.sh", change)
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert updated["metadata"]["generation"] == 1  # metadata-only change
    change = store.get("jobs.batch.volcano.sh", "default", "j")
    change["spec"]["minAvailable"] = 2
    assert store.update("jobs.batch.volcano.sh", change)["metadata"]["generation"] == 2


def test_status_subresource_semantics(store: BaseStore) -> None:
    store.create(
        "podgroups.scheduling.volcano.sh",
        {"metadata": {"name": "g"}, "spec": {"minMember": 2}, "status": {"phase": "Pending"}},
    )
    # a main-resource update keeps the stored status
    obj = store.get("podgroups.scheduling.volcano.sh", "default", "g")
    obj["spec"]["minMember"] = 3
    obj["status"] = {"phase": "Running"}
    updated = store.update("podgroups.scheduling.volcano.sh", obj)
    assert updated["status"] == {"phase": "Pending"}
    assert updated["spec"]["minMember"] == 3
    assert updated["metadata"]["generation"] == 2
    # a status update only changes status
    obj = store.get("podgroups.scheduling.volcano.sh", "default", "g")
    obj["spec"]["minMember"] = 99
    obj["metadata"]["labels"] = {"ignored": "yes"}
    obj["status"] = {"phase": "Running", "running": 3}
    updated = store.update("podgroups.scheduling.volcano.sh", obj, subresource="status")
    assert updated["status"] == {"phase": "Running", "running": 3}
    assert updated["spec"]["minMember"] == 3
    assert "labels" not in updated["metadata"]
    assert updated["metadata"]["generation"] == 2
    # resources without a status subresource: status is just part of the object
    store.create("commands.bus.volcano.sh", {"metadata": {"name": "c"}, "action": "AbortJob"})
    with pytest.raises(NotFound):
        store.update("commands.bus.volcano.sh", {"metadata": {"name": "c"}}, subresource="status")
    with pytest.raises(BadRequest):
        store.update("podgroups.scheduling.volcano.sh", obj, subresource="scale")


def test_noop_update_writes_nothing(store: BaseStore) -> None:
    created = store.create("pods", pod("a"))
    again = store.update("pods", created)
    assert again["metadata"]["resourceVersion"] == "1"
    assert store.resource_version == "1"


def test_delete(store: BaseStore) -> None:
    store.create("pods", pod("a"))
    store.create("pods", pod("b"))
    with pytest.raises(Conflict):
        store.delete("pods", "default", "a", resource_version="99")
    deleted = store.delete("pods", "default", "a", resource_version="1")
    assert deleted["metadata"]["name"] == "a"
    assert deleted["metadata"]["resourceVersion"] == "3"
    with pytest.raises(NotFound):
        store.get("pods", "default", "a")
    with pytest.raises(NotFound):
        store.delete("pods", "default", "a")
    assert [p["metadata"]["name"] for p in store.list("pods")[0]] == ["b"]
    store.create("pods", pod("a"))  # the name is free again, with a new uid
    assert store.resource_version == "4"


def test_closed_store_refuses(make_store: StoreFactory) -> None:
    store = make_store()
    store.close()
    store.close()
    with pytest.raises(StoreClosed):
        store.get("pods", "default", "a")
    with pytest.raises(StoreError):
        store.create("pods", pod("a"))


def test_context_manager(make_store: StoreFactory) -> None:
    with make_store() as store:
        store.create("pods", pod("a"))
    with pytest.raises(StoreClosed):
        store.list("pods")
