"""The cyclic collector around a dry run: off inside, and what the run built is not walked again by the first
young pass afterwards, yet garbage cycles it left are still collected by a full pass."""

from __future__ import annotations

import gc
import weakref

from pumice.gctune import no_collections


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_no_collections_moves_what_it_built_to_the_oldest_generation() -> None:
    assert gc.isenabled()
    with no_collections():
        assert not gc.isenabled()
        kept = [Node() for _ in range(20_000)]  # far beyond a young pass's threshold: no pass ran
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle that becomes garbage
        dead = weakref.ref(a)
        del a, b
        assert dead() is not None
    assert gc.isenabled()
    assert gc.get_count()[0] < 100  # the young generation does not hold the 20,000 objects
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in kept[:: 1000])
    gc.collect()
    assert dead() is None  # the cycle was not frozen for good


def test_no_collections_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with no_collections():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
