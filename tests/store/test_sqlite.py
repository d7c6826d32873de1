"""SqliteStore only: durability across reopen, the persisted event log, exclusivity, and kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from pumice.store import Conflict, Gone, SqliteStore, StoreError
from tests.builders import pod


def test_reopen_restores_objects_counter_and_log(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteStore(path) as store:
        created = store.create("pods", pod("a", labels={"app": "web"}))
        store.create("nodes", {"metadata": {"name": "n1"}})
        store.bind("default", "a", "n1")
        store.create("pods", pod("b"))
        store.delete("pods", "default", "b")
        before = store.list("pods")
    with SqliteStore(path) as store:
        assert store.list("pods") == before
        assert store.resource_version == "5"
        assert store.get("pods", "default", "a")["metadata"]["uid"] == created["metadata"]["uid"]
        # watches resume from versions still in the log, selector transitions included
        unbound = store.watch("pods", resource_version="1", field_selector="spec.nodeName=")
        assert [(e.type, e.object["metadata"]["name"]) for e in unbound.drain()] == [
            ("DELETED", "a"),
            ("ADDED", "b"),
            ("DELETED", "b"),
        ]
        created2 = store.create("pods", pod("c"))
        assert created2["metadata"]["resourceVersion"] == "6"
        with pytest.raises(Conflict):
            store.bind("default", "a", "n2")


def test_reopen_with_compacted_log_gives_gone(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteStore(path, history=4) as store:
        for i in range(10):
            store.create("pods", pod(f"p{i}"))
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 4
    with SqliteStore(path, history=4) as store:
        with pytest.raises(Gone):
            store.watch("pods", resource_version="5")
        names = [e.object["metadata"]["name"] for e in store.watch("pods", resource_version="6").drain()]
        assert names == ["p6", "p7", "p8", "p9"]
    with SqliteStore(path, history=2) as store:  # a smaller history on reopen keeps only the newest
        with pytest.raises(Gone):
            store.watch("pods", resource_version="7")
        assert len(store.watch("pods", resource_version="8").drain()) == 2


def test_batch_is_one_transaction_and_rolls_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteStore(path) as store:
        with store.batch():
            for i in range(100):
                store.create("pods", pod(f"p{i}"))
        with pytest.raises(ValueError), store.batch():
            store.create("pods", pod("lost"))
            raise ValueError("abort")
    with SqliteStore(path) as store:
        assert len(store.list("pods")[0]) == 100
        assert store.resource_version == "100"


def test_second_store_on_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SqliteStore(path) as store:
        store.create("pods", pod("a"))
        with pytest.raises(StoreError, match="locked"):
            SqliteStore(path, timeout=0.1)
    with SqliteStore(path) as store:  # released on close
        assert store.get("pods", "default", "a")


def test_file_is_wal_with_expected_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SqliteStore(path).close()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"objects", "events", "meta"} <= tables
        columns = [row[1] for row in conn.execute("PRAGMA table_info(objects)")]
        assert columns == ["resource", "namespace", "name", "resource_version", "json"]


CHILD = textwrap.dedent(
    """
    import sys, time
    from pumice.store import SqliteStore
    store = SqliteStore(sys.argv[1], history=100_000)
    if sys.argv[2] == "bind":
        store.create("namespaces", {"metadata": {"name": "crash"}})
        for i in range(1_000_000):
            name = f"p{i:06d}"
            store.create("pods", {"metadata": {"name": name, "namespace": "crash"}, "spec": {}})
            print("created", name, flush=True)
            store.bind("crash", name, f"node-{i % 7}")
            print("bound", name, flush=True)
    else:
        with store.batch():
            for i in range(50):
                store.create("pods", {"metadata": {"name": f"b{i}", "namespace": "crash"}, "spec": {}})
            print("in batch", flush=True)
            time.sleep(60)
    """
)


def _run_child_and_kill(path: Path, mode: str, until: str, count: int) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        seen = 0
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith(until):
                seen += 1
                if seen >= count:
                    break
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=10)
        lines.extend(rest.splitlines())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return lines


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    lines = _run_child_and_kill(path, "bind", "bound", 300)
    created = [line.split()[1] for line in lines if line.startswith("created ")]
    bound = [line.split()[1] for line in lines if line.startswith("bound ")]
    assert len(bound) >= 300
    with SqliteStore(path, history=100_000) as store:
        for name in created:
            store.get("pods", "crash", name)  # raises NotFound if an acknowledged create was lost
        for name in bound:
            index = int(name[1:])
            assert store.get("pods", "crash", name)["spec"]["nodeName"] == f"node-{index % 7}"
        # every pod in the file was bound at most once, every acknowledged bind exactly once
        binds: dict[str, int] = {}
        for event in store.watch("pods", namespace="crash", resource_version="1").drain():
            if event.type == "MODIFIED" and event.object["spec"].get("nodeName"):
                name = event.object["metadata"]["name"]
                binds[name] = binds.get(name, 0) + 1
        assert set(bound) <= set(binds)
        assert set(binds.values()) == {1}
        for name in bound[:20] + bound[-5:]:
            with pytest.raises(Conflict):
                store.bind("crash", name, "elsewhere")
        # the store keeps working after the crash, and the counter continues
        rv = int(store.resource_version)
        store.create("pods", pod("after", namespace="crash"))
        assert store.resource_version == str(rv + 1)


def test_kill_inside_batch_loses_the_whole_batch(tmp_path: Path) -> None:
    path = tmp_path / "batch.db"
    _run_child_and_kill(path, "batch", "in batch", 1)
    with SqliteStore(path) as store:
        assert store.list("pods") == ([], "0")
