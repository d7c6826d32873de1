"""JobFlow and JobTemplate: admission (the DAG check), the flow controller, the template controller."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.admission.jobflows import flow_graph_problem
from pumice.store import Invalid
from tests.builders import vcjob as job

from .harness import Cluster

Obj = dict[str, Any]
FLOWS = "jobflows.flow.volcano.sh"
TEMPLATES = "jobtemplates.flow.volcano.sh"


def template(name: str, *, cpu: str = "1") -> Obj:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": "default"}, "spec": job(name, cpu=cpu)["spec"]}


def jobflow(name: str, flows: list[Obj], retain: str = "retain") -> Obj:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobRetainPolicy": retain, "flows": flows}}


def flow(name: str, *targets: str) -> Obj:
    return {"name": name, "dependsOn": {"targets": list(targets)}} if targets else {"name": name}


def flow_status(c: Cluster, name: str) -> Obj:
    return c.store.get(FLOWS, "default", name).get("status") or {}


def test_three_templates_with_a_cycle_are_refused_at_admission() -> None:
    c = Cluster()
    c.apply([template(n) for n in ("a", "b", "c")])
    cyclic = jobflow("loop", [flow("a", "c"), flow("b", "a"), flow("c", "b")])
    with pytest.raises(Invalid, match="jobflow Flow is not DAG"):
        c.store.create(FLOWS, cyclic)
    with pytest.raises(Invalid, match="jobflow Flow is not DAG: vertex is not defined: z"):
        c.store.create(FLOWS, jobflow("dangling", [flow("a", "z")]))
    with pytest.raises(Invalid, match=r"jobRetainPolicy"):
        c.store.create(FLOWS, jobflow("bad", [flow("a")], retain="keep"))
    assert c.store.list(FLOWS, "default")[0] == [] and c.store.list("jobs.batch.volcano.sh", "default")[0] == []


def _cyclic(graph: dict[str, list[str]]) -> bool:
    """Brute force: a cycle exists iff some vertex reaches itself."""
    for start in graph:
        seen, frontier = set(), list(graph[start])
        while frontier:
            node = frontier.pop()
            if node == start:
                return True
            if node not in seen:
                seen.add(node)
                frontier.extend(graph.get(node, []))
    return False


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.lists(st.sampled_from("abcdefg"), max_size=3), min_size=1))
def test_the_dag_check_refuses_exactly_cycles_and_undefined_targets(graph: dict[str, list[str]]) -> None:
    problem = flow_graph_problem([flow(name, *targets) for name, targets in graph.items()])
    undefined = any(t not in graph for targets in graph.values() for t in targets)
    if undefined:
        assert problem is not None and "vertex is not defined" in problem
    elif _cyclic(graph):
        assert problem is not None and problem.startswith("jobflow Flow is not DAG")
    else:
        assert problem is None


def test_flow_creates_jobs_in_dependency_order_and_succeeds() -> None:
    c = Cluster(run_for=lambda p: 5.0)
    c.apply([template(n) for n in ("prepare", "train", "evaluate")])
    c.apply([jobflow("pipe", [flow("prepare"), flow("train", "prepare"), flow("evaluate", "prepare", "train")])])
    created: dict[str, int] = {}
    phases: list[str] = []
    steps = itertools.count()

    def record() -> None:
        n = next(steps)
        for j in c.store.list("jobs.batch.volcano.sh", "default")[0]:
            created.setdefault(j["metadata"]["name"], n)
        phase = (flow_status(c, "pipe").get("state") or {}).get("phase")
        if phase and (not phases or phases[-1] != phase):
            phases.append(phase)

    c.run_until(lambda: (flow_status(c, "pipe").get("state") or {}).get("phase") == "Succeed", on_step=record)
    assert created["pipe-prepare"] < created["pipe-train"] < created["pipe-evaluate"]
    assert phases == ["Pending", "Running", "Succeed"] or phases == ["Running", "Succeed"]
    status = flow_status(c, "pipe")
    assert status["completedJobs"] == ["pipe-evaluate", "pipe-prepare", "pipe-train"]
    train = c.job("pipe-train")
    assert train["metadata"]["labels"] == {"volcano.sh/createdByJobTemplate": "default.train",
                                           "volcano.sh/createdByJobFlow": "default.pipe"}
    assert train["metadata"]["ownerReferences"][0]["kind"] == "JobFlow"
    history = next(s for s in status["jobStatusList"] if s["name"] == "pipe-train")["runningHistories"]
    assert [h["state"] for h in history][-1] == "Completed"
    assert c.store.get(TEMPLATES, "default", "train")["status"] == {"jobDependsOnList": ["pipe-train"]}
    events = [(e["reason"], e["message"]) for e in c.store.list("events", "default")[0]
              if e["involvedObject"]["kind"] == "JobFlow"]
    assert ("Created", "create a job named pipe-train!") in events


def test_failed_job_fails_the_flow_and_stops_it() -> None:
    c = Cluster(run_for=lambda p: 5.0, exit_code=lambda p: 1 if "first" in p["metadata"]["name"] else 0)
    c.apply([template("first"), template("second")])
    c.apply([jobflow("f", [flow("first"), flow("second", "first")])])
    c.run_until(lambda: (flow_status(c, "f").get("state") or {}).get("phase") == "Failed")
    assert flow_status(c, "f")["failedJobs"] == ["f-first"]
    for _ in range(10):
        c.step()
    assert [j["metadata"]["name"] for j in c.store.list("jobs.batch.volcano.sh", "default")[0]] == ["f-first"]


def test_delete_policy_removes_jobs_and_deleting_the_flow_removes_its_jobs() -> None:
    c = Cluster(run_for=lambda p: 3.0)
    c.apply([template("one")])
    c.apply([jobflow("gone", [flow("one")], retain="delete"), jobflow("kept", [flow("one")])])
    c.run_until(lambda: (flow_status(c, "gone").get("state") or {}).get("phase") == "Succeed"
                and (flow_status(c, "kept").get("state") or {}).get("phase") == "Succeed")
    c.step()
    names = [j["metadata"]["name"] for j in c.store.list("jobs.batch.volcano.sh", "default")[0]]
    assert names == ["kept-one"]
    c.store.delete(FLOWS, "default", "kept")
    c.step()
    assert c.store.list("jobs.batch.volcano.sh", "default")[0] == []


def test_a_missing_template_is_told_and_waited_for() -> None:
    c = Cluster(run_for=lambda p: 3.0)
    c.apply([jobflow("late", [flow("later")])])
    c.step()
    warnings = [e["message"] for e in c.store.list("events", "default")[0] if e["type"] == "Warning"]
    assert any('"later" not found' in m for m in warnings)
    c.apply([template("later")])
    c.run_until(lambda: (flow_status(c, "late").get("state") or {}).get("phase") == "Succeed")


def test_unused_probe_and_patch_are_told() -> None:
    c = Cluster(run_for=lambda p: 3.0)
    c.apply([template("x")])
    probed = flow("x")
    probed["dependsOn"] = {"probe": {"taskStatusList": [{"taskName": "main", "phase": "Running"}]}}
    probed["patch"] = {"jobSpec": {"queue": "default"}}
    c.apply([jobflow("p", [probed])])
    reasons = [(e["reason"], e["message"]) for e in c.store.list("events", "default")[0]]
    assert ("Ignored", "flow x: patch is not applied (Volcano's JobFlow controller creates the Job from the "
            "JobTemplate as it is)") in reasons
    assert any(r == "Ignored" and "dependsOn.probe is not evaluated" in m for r, m in reasons)
