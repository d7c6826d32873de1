"""The events Volcano's controllers write (reasons and messages as Volcano's), and what they never contain."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from tests.builders import vcjob as job

from .harness import QUEUES, Cluster, command

Obj = dict[str, Any]


def events_of(c: Cluster, name: str, ns: str = "default") -> list[tuple[str, str, str]]:
    """(type, reason, message) of the events about ``name``, oldest first."""
    items = [e for e in c.store.list("events", ns)[0] if e["involvedObject"]["name"] == name]
    items.sort(key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    return [(e["type"], e["reason"], e["message"]) for e in items]


def test_policy_actions_and_phase_changes_tell_the_job_story() -> None:
    c = Cluster(run_for=lambda p: 5.0, exit_code=lambda p: 1)
    c.apply([job("flaky", maxRetry=1, policies=[{"event": "PodFailed", "action": "RestartJob"}])])
    c.run_until(lambda: c.phase("flaky") == "Failed")
    story = events_of(c, "flaky")
    assert ("Normal", "ExecuteAction", "Start to execute action RestartJob ") in story
    reasons = [r for _, r, _ in story]
    assert reasons[0] == "Running" and reasons[-1] == "Failed"  # from the first change on (new -> Pending: none)
    assert "Restarting" in reasons
    failed = next(e for e in c.store.list("events", "default")[0] if e["reason"] == "Failed")
    assert failed["type"] == "Warning" and failed["source"] == {"component": "vc-controller-manager"}
    assert failed["involvedObject"]["kind"] == "Job" and failed["involvedObject"]["apiVersion"] == \
        "batch.volcano.sh/v1alpha1"
    assert failed["count"] == 1 and failed["firstTimestamp"] == failed["lastTimestamp"]


def test_commands_and_delayed_actions_are_told() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("paused", policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "10m"}])])
    c.run_until(lambda: c.phase("paused") == "Running")
    c.apply([command("stop", "AbortJob", "Job", "paused")])
    c.run_until(lambda: c.phase("paused") == "Aborted")
    story = events_of(c, "paused")
    assert ("Normal", "Execute action AbortJob after 10m0s") in [(t, m) for t, _, m in story]
    assert ("Normal", "CommandIssued", "Start to execute command AbortJob, and clean it up to make sure executed "
            "not more than once.") in story
    assert ("Normal", "ExecuteAction", "Start to execute action AbortJob ") in story


def test_an_unschedulable_gang_is_told_on_the_job_once_per_reason() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)  # 3 nodes x 8 CPU
    c.apply([job("big", replicas=4, cpu="7")])
    for _ in range(6):
        c.step()
    pending = [m for _, r, m in events_of(c, "big") if r == "PodGroupPending"]
    pg = c.podgroups()[0]["status"]["conditions"][0]
    assert pending == [f"PodGroup default:big unschedulable, reason: {pg['message']}"]
    folded = [e for e in c.store.list("events", "default")[0] if e["reason"] == "PodGroupPending"]
    assert folded[0]["type"] == "Warning" and folded[0]["count"] == 1


def test_a_plugin_that_refuses_pods_is_told() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("rayless", plugins={"ray": []})])
    for _ in range(3):
        c.step()
    assert c.pods("rayless") == []
    assert ("Warning", "PluginError", "Execute plugin when pod create failed, err: job rayless doesn't have head "
            "task head") in events_of(c, "rayless")


def test_bad_plugin_arguments_are_told_once() -> None:
    c = Cluster(run_for=lambda p: 10_000.0)
    c.apply([job("typo", plugins={"mpi": ["--master=main", "--wroker=w"]})])
    for _ in range(3):
        c.step()
    warnings = [m for t, r, m in events_of(c, "typo") if r == "PluginError"]
    assert warnings == ["plugin mpi flagset parse failed, err: flag provided but not defined: -wroker"]


def test_queue_close_and_refused_open_are_told() -> None:
    c = Cluster()
    parent = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "p"},
              "spec": {"weight": 1}}
    child = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "ch"},
             "spec": {"weight": 1, "parent": "p"}}
    c.store.create(QUEUES, parent)
    c.store.create(QUEUES, child)
    c.apply([command("close-p", "CloseQueue", "Queue", "p")])
    c.apply([command("open-ch", "OpenQueue", "Queue", "ch")])
    assert ("Normal", "CloseQueue", "Close queue succeed") in events_of(c, "p")
    assert ("Warning", "OpenQueue", "OpenQueue queue failed for Failed to open queue ch because its parent queue p "
            "is closing or closed. Open the parent queue first.") in events_of(c, "ch")


def test_the_private_key_is_only_in_the_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    c = Cluster(run_for=lambda p: 5.0)
    c.apply([job("keyed", replicas=2, plugins={"ssh": ["--ssh-port=0"], "mpi": ["--master=main", "--worker=main"]})])
    c.run_until(lambda: c.phase("keyed") == "Running")
    (secret,) = c.store.list("secrets", "default")[0]
    private = base64.b64decode(secret["data"]["id_rsa"]).decode()
    assert "PRIVATE KEY" in private
    c.run_until(lambda: c.phase("keyed") == "Completed")
    assert c.store.list("secrets", "default")[0] == []  # gone with the job's pods, as Volcano's OnJobDelete
    body = "".join(private.splitlines()[1:-1])
    for resource in ("events", "pods", "jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh", "configmaps"):
        for obj in c.store.list(resource, "default")[0]:
            assert body[:40] not in str(obj), f"{resource} {obj['metadata']['name']} carries the private key"
    assert body[:40] not in caplog.text
    assert any(m == "invalid ssh port 0, falling back to default port 22" for _, _, m in events_of(c, "keyed"))
