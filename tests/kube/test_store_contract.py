"""One contract, three stores: the embedded ``MemoryStore``, and ``KubeStore`` over pumice's own API server and
over a real kube-apiserver v1.20. The same checks run against each; what differs is said where it does."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pumice.store import AlreadyExists, Conflict, MemoryStore, NotFound, Store, WatchEvent
from tests.builders import node, pod, podgroup

PODGROUPS = "podgroups.scheduling.volcano.sh"
QUEUES = "queues.scheduling.volcano.sh"


@pytest.fixture(scope="module", params=["memory", "pumice", "kube-1.20"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "memory":
        s: Any = MemoryStore()
    else:
        from pumice.store.kube import KubeStore, from_kubeconfig

        if request.param == "pumice":
            kubeconfig = request.getfixturevalue("pumice_server")
        else:
            kubeconfig = request.getfixturevalue("kube120").kubeconfig
        s = KubeStore(from_kubeconfig(str(kubeconfig)))
    try:
        yield s
    finally:
        s.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def settle(store: Store) -> None:
    flush = getattr(store, "flush", None)
    if callable(flush):
        flush(15)


def collect(watch: Any, until: Callable[[list[WatchEvent]], bool], timeout: float = 15.0) -> list[WatchEvent]:
    seen: list[WatchEvent] = []
    deadline = time.monotonic() + timeout
    while not until(seen):
        if time.monotonic() > deadline:
            raise AssertionError(f"watch events not seen in time: {[(e.type, _name(e)) for e in seen]}")
        event = watch.next(0.1)
        if event is not None:
            seen.append(event)
    return seen


def _name(event: WatchEvent) -> str:
    return str((event.object.get("metadata") or {}).get("name"))


def test_create_get_list_and_not_found(store: Store) -> None:
    name = unique("p")
    created = store.create("pods", pod(name, namespace="default", labels={}, scheduler="nobody"))
    meta = created["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    assert store.get("pods", "default", name)["metadata"]["uid"] == meta["uid"]
    items, rv = store.list("pods", "default")
    assert name in {p["metadata"]["name"] for p in items} and rv.isdigit()
    with pytest.raises(AlreadyExists):
        store.create("pods", pod(name, namespace="default", labels={}, scheduler="nobody"))
    with pytest.raises(NotFound):
        store.get("pods", "default", unique("missing"))


def test_watch_from_a_list_sees_every_later_change(store: Store) -> None:
    _, rv = store.list(PODGROUPS)
    watch = store.watch(PODGROUPS, resource_version=rv)
    name = unique("pg")
    store.create(PODGROUPS, podgroup(name, namespace="default", min_member=2, queue="default"))
    store.patch(PODGROUPS, "default", name, {"spec": {"minMember": 3}})
    store.delete(PODGROUPS, "default", name)
    mine = lambda seen: [e.type for e in seen if _name(e) == name]  # noqa: E731
    events = collect(watch, lambda seen: mine(seen)[-1:] == ["DELETED"])
    assert mine(events) == ["ADDED", "MODIFIED", "DELETED"]
    watch.close()


def test_optimistic_concurrency(store: Store) -> None:
    name = unique("pg")
    first = store.create(PODGROUPS, podgroup(name, namespace="default", min_member=2, queue="default"))
    second = store.update(PODGROUPS, {**first, "spec": {"minMember": 4, "queue": "default"}})
    assert second["spec"]["minMember"] == 4
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    with pytest.raises(Conflict):  # written over a stale resourceVersion
        store.update(PODGROUPS, {**first, "spec": {"minMember": 5, "queue": "default"}})
    with pytest.raises(Conflict):
        store.delete(PODGROUPS, "default", name, resource_version=first["metadata"]["resourceVersion"])
    assert store.get(PODGROUPS, "default", name)["spec"]["minMember"] == 4


def test_merge_patch_and_status_subresource(store: Store) -> None:
    name = unique("pg")
    store.create(PODGROUPS, podgroup(name, namespace="default", min_member=2, queue="default"))
    patched = store.patch(PODGROUPS, "default", name, {"status": {"phase": "Inqueue"}}, subresource="status")
    assert patched["status"]["phase"] == "Inqueue" and patched["spec"]["minMember"] == 2
    main = store.patch(PODGROUPS, "default", name, {"spec": {"minMember": 1}, "status": {"phase": "Running"}})
    assert main["spec"]["minMember"] == 1 and main["status"]["phase"] == "Inqueue"  # status only via /status
    status = store.patch(PODGROUPS, "default", name, {"spec": {"minMember": 9}, "status": {"phase": "Running"}},
                         subresource="status")
    assert status["spec"]["minMember"] == 1 and status["status"]["phase"] == "Running"
    json_patched = store.patch(PODGROUPS, "default", name, [{"op": "replace", "path": "/spec/minMember", "value": 7}],
                               patch_type="json")
    assert json_patched["spec"]["minMember"] == 7
    assert store.get(PODGROUPS, "default", name)["spec"]["minMember"] == 7  # reads see the write at once


def test_bind_once(store: Store) -> None:
    target = unique("n")
    store.create("nodes", node(target, cpu="4", pods="10", capacity=True))
    name = unique("p")
    store.create("pods", pod(name, namespace="default", labels={}, scheduler="nobody"))
    _, rv = store.list("pods")
    watch = store.watch("pods", resource_version=rv)
    bound = store.bind("default", name, target)
    assert bound["spec"]["nodeName"] == target  # the pod as the binding makes it
    with pytest.raises(Conflict):  # a pod is bound once
        store.bind("default", name, target)
    settle(store)
    eventually(lambda: store.get("pods", "default", name)["spec"].get("nodeName") == target)
    events = collect(watch, lambda seen: any(_name(e) == name and e.object["spec"].get("nodeName") for e in seen))
    assert all(e.type == "MODIFIED" for e in events if _name(e) == name)
    conditions = {c["type"]: c["status"] for c in store.get("pods", "default", name)["status"].get("conditions", [])}
    assert conditions.get("PodScheduled") == "True"
    watch.close()


def test_selector_watch_sees_objects_come_and_go(store: Store) -> None:
    app = unique("app")
    watch = store.watch("pods", label_selector=f"app={app}")
    name = unique("p")
    store.create("pods", pod(name, namespace="default", labels={"app": app}, scheduler="nobody"))
    store.patch("pods", "default", name, {"metadata": {"labels": {"app": "other"}}})
    store.patch("pods", "default", name, {"metadata": {"labels": {"app": app}}})
    events = collect(watch, lambda seen: len([e for e in seen if _name(e) == name]) >= 3)
    assert [e.type for e in events if _name(e) == name][:3] == ["ADDED", "DELETED", "ADDED"]
    items, _ = store.list("pods", label_selector={"matchLabels": {"app": app}})
    assert [p["metadata"]["name"] for p in items] == [name]
    watch.close()


def test_generate_name_and_cluster_scope(store: Store) -> None:
    created = store.create(QUEUES, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                    "metadata": {"generateName": "q-"}, "spec": {"weight": 2}})
    name = created["metadata"]["name"]
    assert name.startswith("q-") and len(name) > 2
    assert store.get(QUEUES, None, name)["spec"]["weight"] == 2
    store.delete(QUEUES, None, name)
    eventually(lambda: name not in {q["metadata"]["name"] for q in store.list(QUEUES)[0]})
