"""How often the cyclic garbage collector runs while pumice builds large object graphs.

Reading a manifest, listing a cluster or building a snapshot allocates hundreds of thousands of small
containers that all stay alive: with the default thresholds (a pass every 700 allocations, older
generations every 10 passes) the collector scans them again and again — reading a 25 MB JSON List
took three times as long as parsing it. pumice creates next to no reference cycles on these paths
(sessions break theirs in ``Session.dispose``), so collecting rarely costs no memory.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

__all__ = ["RARE", "few_collections", "no_collection_at_exit", "no_collections"]

#: Thresholds for code that builds and keeps many objects (gen0 allocations, gen1 and gen2 passes).
RARE = (50_000, 50, 100)


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Collect rarely inside the block, and restore the thresholds after it."""
    before = gc.get_threshold()
    gc.set_threshold(*RARE)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextlib.contextmanager
def no_collections() -> Iterator[None]:
    """No cyclic collection inside the block, for a command that builds one large graph and prints what it
    found (a dry run's passes over its objects took 0.12 s). On the way out what the block built moves to
    the oldest generation at once (``freeze`` then ``unfreeze``), as surviving objects would have, instead of
    the first young pass after the collector is switched back on walking all of it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def no_collection_at_exit() -> None:
    """Skip the interpreter's last collection, for a command that only reads and prints: what it built dies
    with the process (the last collection walked a 50,000-pod dry run's objects for 0.6 s). Objects in
    reference cycles are then not finalized: not for a command that holds files or connections open."""
    atexit.unregister(gc.freeze)  # once, however often a process runs such a command (tests run it in-process)
    atexit.register(gc.freeze)
