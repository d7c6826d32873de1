"""The HyperNode controller: status.nodeCount kept current, and HyperNodes discovered from node labels."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.clock import VirtualClock
from pumice.controllers import ControllerManager, HyperNodeController
from pumice.store import Conflict, MemoryStore
from pumice.topology_discovery import SOURCE_LABEL, discover_hypernodes, parse_discovery_config
from tests.builders import hypernode, node, node_member

HYPERNODES = "hypernodes.topology.volcano.sh"
ZONE, RACK = "example.com/zone", "example.com/rack"
DISCOVERY = parse_discovery_config({RACK: 1, ZONE: 2})


def oracle(members: list[dict[str, Any]], nodes: dict[str, dict[str, str]]) -> int:
    """Volcano's actualNodeCnt, written out: the union of the nodes each member's selector picks."""
    picked = set()
    for member in members:
        sel = member["selector"]
        for name, labels in nodes.items():
            if "exactMatch" in sel and sel["exactMatch"]["name"] == name:
                picked.add(name)
            if "regexMatch" in sel and re.search(sel["regexMatch"]["pattern"], name):
                picked.add(name)
            if "labelMatch" in sel and all(labels.get(k) == v for k, v in sel["labelMatch"]["matchLabels"].items()):
                picked.add(name)
    return len(picked)


selectors = st.one_of(
    st.builds(lambda i: {"exactMatch": {"name": f"n{i}"}}, st.integers(0, 7)),
    st.builds(lambda d: {"regexMatch": {"pattern": f"^n[{d}-7]$"}}, st.integers(0, 7)),
    st.builds(lambda r: {"labelMatch": {"matchLabels": {RACK: f"r{r}"}}}, st.integers(0, 2)),
)

operations = st.lists(st.tuples(st.sampled_from(["add", "delete", "relabel"]), st.integers(0, 7), st.integers(0, 2)),
                      max_size=25)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(selectors, min_size=1, max_size=3), min_size=1, max_size=4), operations)
def test_node_count_follows_nodes_coming_and_going(hn_members: list[list[dict[str, Any]]],
                                                   ops: list[tuple[str, int, int]]) -> None:
    store = MemoryStore()
    controller = HyperNodeController(store, VirtualClock())
    members = {f"hn{i}": [{"type": "Node", "selector": s} for s in sels] for i, sels in enumerate(hn_members)}
    for name, m in members.items():
        store.create(HYPERNODES, hypernode(name, 1, m))
    nodes: dict[str, dict[str, str]] = {}
    for op, i, rack in [("sync", 0, 0), *ops]:
        name = f"n{i}"
        if op == "add" and name not in nodes:
            nodes[name] = {RACK: f"r{rack}"}
            store.create("nodes", node(name, labels=nodes[name], cpu="8", capacity=True))
        elif op == "delete" and name in nodes:
            del nodes[name]
            store.delete("nodes", None, name)
        elif op == "relabel" and name in nodes:
            nodes[name] = {RACK: f"r{rack}"}
            store.patch("nodes", None, name, {"metadata": {"labels": nodes[name]}})
        while controller.sync():
            pass
        for hn, m in members.items():
            assert store.get(HYPERNODES, None, hn).get("status", {}).get("nodeCount") == oracle(m, nodes)


def _discovered(store: MemoryStore) -> dict[str, dict[str, Any]]:
    return {h["metadata"]["name"]: h for h in store.list(HYPERNODES)[0]
            if h["metadata"].get("labels", {}).get(SOURCE_LABEL) == "label"}


def test_discovery_creates_updates_and_deletes_hypernodes() -> None:
    store = MemoryStore()
    manager = ControllerManager(store, VirtualClock(), discovery=DISCOVERY)
    store.create(HYPERNODES, hypernode("by-hand", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": ".*"}}}]))
    layout = {"n0": ("z0", "r0"), "n1": ("z0", "r0"), "n2": ("z0", "r1"), "n3": ("z1", "r2")}
    for name, (zone, rack) in layout.items():
        store.create("nodes", node(name, labels={ZONE: zone, RACK: rack, "kubernetes.io/hostname": name}, cpu="8",
                                      capacity=True))
    manager.sync()

    def expected() -> dict[str, dict[str, Any]]:
        return {h["metadata"]["name"]: h for h in discover_hypernodes(store.list("nodes")[0], DISCOVERY)}

    want = expected()
    have = _discovered(store)
    assert have.keys() == want.keys() and len(have) == 5  # racks r0 r1 r2, zones z0 z1
    assert all(have[n]["spec"] == want[n]["spec"] for n in want)
    counts = {h["spec"]["tierName"] + "=" + h["metadata"]["labels"][h["spec"]["tierName"]]: h["status"]["nodeCount"]
              for h in have.values()}
    assert counts[f"{RACK}=r0"] == 2 and counts[f"{RACK}=r2"] == 1
    assert store.get(HYPERNODES, None, "by-hand")["status"]["nodeCount"] == 4

    # n2 moves to r0 (r1 is left empty: deleted), n3 goes away (r2 and z1 too), a new node opens r3
    store.patch("nodes", None, "n2", {"metadata": {"labels": {RACK: "r0"}}})
    store.delete("nodes", None, "n3")
    store.create("nodes", node("n4", labels={ZONE: "z0", RACK: "r3", "kubernetes.io/hostname": "n4"}, cpu="8",
                               capacity=True))
    manager.sync()
    want = expected()
    have = _discovered(store)
    assert have.keys() == want.keys()
    assert all(have[n]["spec"] == want[n]["spec"] for n in want)
    racks = sorted(h["metadata"]["labels"][RACK] for h in have.values() if h["spec"]["tierName"] == RACK)
    assert racks == ["r0", "r3"]
    assert store.get(HYPERNODES, None, "by-hand")["status"]["nodeCount"] == 4  # untouched, counted
    for name in want:
        assert store.get(HYPERNODES, None, name)["status"]["nodeCount"] >= 0


def test_no_discovery_leaves_hypernodes_alone() -> None:
    store = MemoryStore()
    manager = ControllerManager(store, VirtualClock())
    store.create("nodes", node("n0", labels={RACK: "r0"}, cpu="8", capacity=True))
    manager.sync()
    assert _discovered(store) == {}
    assert store.list(HYPERNODES)[0] == []


def _fail_then_wait(store: Any, clock: VirtualClock, controller: HyperNodeController,
                    nothing_written: Callable[[], bool]) -> None:
    """A sync while ``store`` fails writes nothing; with the store back, the controller waits (a failing
    server is not hammered) and syncs again once its wake-up time has come."""
    store.failing = True
    controller.sync()
    assert nothing_written()
    store.failing = False
    assert not controller.pending()
    wake = controller.next_wakeup()
    assert wake is not None and wake > clock.now()
    clock.advance_to(wake)
    assert controller.pending()
    controller.sync()


class FlakyStatusStore(MemoryStore):
    """A real store whose HyperNode status writes fail while ``failing`` (a conflict storm, an API server away)."""

    failing = False

    def patch(self, resource: str, namespace: str | None, name: str, patch: Any, **kw: Any) -> Any:
        if self.failing and resource == HYPERNODES and kw.get("subresource") == "status":
            raise Conflict(f"hypernode {name}: the object has been modified")
        return super().patch(resource, namespace, name, patch, **kw)


def test_a_count_that_could_not_be_written_is_written_again_later() -> None:
    """Nothing else changes after the failed write: the count is still written, after a short wait."""
    store, clock = FlakyStatusStore(), VirtualClock()
    store.create("nodes", node("n0"))
    store.create(HYPERNODES, hypernode("rack", 1, [node_member("n0")]))
    controller = HyperNodeController(store, clock)
    _fail_then_wait(store, clock, controller, lambda: "status" not in store.get(HYPERNODES, None, "rack"))
    assert store.get(HYPERNODES, None, "rack")["status"]["nodeCount"] == 1
    assert not controller.sync()  # its own write's watch event: nothing more to write
    assert controller.next_wakeup() is None and not controller.pending()


class FlakyCreateStore(MemoryStore):
    """A real store whose HyperNode creates fail while ``failing`` (an API server away for a moment)."""

    failing = False

    def create(self, resource: str, obj: Any, **kw: Any) -> Any:
        if self.failing and resource == HYPERNODES:
            raise Conflict("hypernodes: the server is busy")
        return super().create(resource, obj, **kw)


def test_a_discovered_hypernode_that_could_not_be_written_is_written_again_later() -> None:
    """Discovery's create fails and no node changes afterwards: the HyperNodes still appear, after a short wait."""
    store, clock = FlakyCreateStore(), VirtualClock()
    for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1")):
        store.create("nodes", node(name, labels={ZONE: "z0", RACK: rack, "kubernetes.io/hostname": name}))
    controller = HyperNodeController(store, clock, DISCOVERY)
    _fail_then_wait(store, clock, controller, lambda: not _discovered(store))
    want = {h["metadata"]["name"] for h in discover_hypernodes(store.list("nodes")[0], DISCOVERY)}
    assert set(_discovered(store)) == want and len(want) == 3  # racks r0 r1, zone z0
    racks = sorted(h["status"]["nodeCount"] for h in _discovered(store).values() if h["spec"]["tier"] == 1)
    assert racks == [1, 2]  # and counted: no node changed since, so only the controller's own writes tell it
    assert controller.next_wakeup() is None


def test_hypernodes_discovered_after_nodes_came_during_a_discovery_are_counted() -> None:
    """A node arrives while discovery writes (another thread's create): the discovery that follows creates its
    HyperNode, and counts it, though no node changes after that (CI saw ``pumice up`` wait for that count)."""
    store, clock = MemoryStore(), VirtualClock()
    store.create("nodes", node("n0", labels={ZONE: "z0", RACK: "r0", "kubernetes.io/hostname": "n0"}))
    controller = HyperNodeController(store, clock, DISCOVERY)
    reconcile = controller._reconcile
    arrivals = [node("n1", labels={ZONE: "z0", RACK: "r1", "kubernetes.io/hostname": "n1"})]

    def reconcile_while_a_node_arrives() -> bool:
        wrote = reconcile()
        while arrivals:
            store.create("nodes", arrivals.pop())
        return wrote

    controller._reconcile = reconcile_while_a_node_arrives  # type: ignore[method-assign]
    while controller.pending():
        controller.sync()
    racks = {h["metadata"]["labels"][RACK]: (h.get("status") or {}).get("nodeCount")
             for h in _discovered(store).values() if h["spec"]["tier"] == 1}
    assert racks == {"r0": 1, "r1": 1}
