"""extender: Volcano's HTTP extender protocol against a real extender on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pumice.scheduler import load_conf, run_session
from pumice.scheduler.outcome import SessionOutcome
from pumice.server import ServerThread
from tests.builders import node, pod, podgroup, priority_class, queue
from tests.scheduler.plugins.support import conf_text


class Extender:
    """A small extender: refuses node n1, prefers n2, lets only pods labelled evictable=yes be victims,
    refuses to enqueue the job ``blocked``; ``slow`` answers after 0.5 s, ``broken`` with a 500."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        routes = [Route(f"/{verb}", getattr(self, verb.replace("-", "_")), methods=["POST"]) for verb in (
            "onSessionOpen", "onSessionClose", "predicate", "prioritize", "preemptable", "jobEnqueueable",
            "queueOverused", "slow", "broken")]
        self.app = Starlette(routes=routes)

    async def _body(self, verb: str, request: Request) -> Any:
        body = await request.json()
        self.calls.append((verb, body))
        return body

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    async def onSessionOpen(self, request: Request) -> Response:
        await self._body("onSessionOpen", request)
        return JSONResponse({})

    async def onSessionClose(self, request: Request) -> Response:
        await self._body("onSessionClose", request)
        return JSONResponse({})

    async def predicate(self, request: Request) -> Response:
        body = await self._body("predicate", request)
        refused = body["node"]["Name"] == "n1"
        return JSONResponse({"status": "n1 is reserved" if refused else "", "code": 0})

    async def prioritize(self, request: Request) -> Response:
        body = await self._body("prioritize", request)
        return JSONResponse({"nodeScore": {n["Name"]: 100.0 if n["Name"] == "n2" else 0.0 for n in body["nodes"]}})

    async def preemptable(self, request: Request) -> Response:
        body = await self._body("preemptable", request)
        victims = [t for t in body["evictees"] if (t["Pod"]["metadata"].get("labels") or {}).get("evictable") == "yes"]
        return JSONResponse({"status": 1, "victims": victims})

    async def jobEnqueueable(self, request: Request) -> Response:
        body = await self._body("jobEnqueueable", request)
        return JSONResponse({"status": -1 if body["job"]["Name"] == "blocked" else 1})

    async def queueOverused(self, request: Request) -> Response:
        await self._body("queueOverused", request)
        return JSONResponse({"overused": False})

    async def slow(self, request: Request) -> Response:
        await self._body("slow", request)
        await asyncio.sleep(0.5)
        return JSONResponse({"status": ""})

    async def broken(self, request: Request) -> Response:
        await self._body("broken", request)
        return Response("boom", status_code=500)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Extender, str]]:
    extender = Extender()
    with ServerThread(extender.app) as server:
        yield extender, server.url


@pytest.fixture
def extender(served: tuple[Extender, str]) -> tuple[Extender, str]:
    served[0].calls.clear()
    return served


def three_nodes(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("n0", cpu="4"), node("n1", cpu="4"), node("n2", cpu="4"), queue("default"),
            podgroup("j", queue="default"), pod("j-0", group="j", cpu="1"), *extra]


def run(objects: list[dict[str, Any]], url: str, actions: str = "enqueue, allocate",
        **arguments: Any) -> SessionOutcome:
    plugin = {"name": "extender", "arguments": {"extender.urlPrefix": url, **arguments}}
    return run_session(objects, load_conf(conf_text("priority", "gang", "predicates", plugin, actions=actions)))


def test_predicate_and_prioritize_choose_the_node(extender: tuple[Extender, str]) -> None:
    ext, url = extender
    assert run(three_nodes(), url).binds == {"default/j-0": "n0"}  # no verbs: nothing asked
    assert ext.verbs() == []
    outcome = run(three_nodes(), url, **{"extender.onSessionOpenVerb": "onSessionOpen",
                                         "extender.onSessionCloseVerb": "onSessionClose",
                                         "extender.predicateVerb": "predicate",
                                         "extender.prioritizeVerb": "prioritize"})
    assert outcome.binds == {"default/j-0": "n2"}
    verbs = ext.verbs()
    assert verbs[0] == "onSessionOpen" and verbs[-1] == "onSessionClose"
    assert verbs.count("predicate") == 3  # one request per node, as Volcano
    opened = ext.calls[0][1]
    assert set(opened["Nodes"]) == {"n0", "n1", "n2"} and "default/j" in opened["Jobs"]
    predicate = next(body for verb, body in ext.calls if verb == "predicate")
    assert predicate["task"]["Name"] == "j-0" and predicate["task"]["Resreq"]["MilliCPU"] == 1000.0


def test_a_refused_node_is_never_used(extender: tuple[Extender, str]) -> None:
    _, url = extender
    objects = [node("n1", cpu="4"), queue("default"), podgroup("j", queue="default"), pod("j-0", group="j", cpu="1")]
    outcome = run(objects, url, **{"extender.predicateVerb": "predicate"})
    assert outcome.binds == {}
    assert "n1 is reserved" in outcome.pending_pods["default/j-0"]


def test_managed_resources_leave_other_tasks_alone(extender: tuple[Extender, str]) -> None:
    ext, url = extender
    outcome = run(three_nodes(), url, **{"extender.predicateVerb": "predicate", "extender.prioritizeVerb": "prioritize",
                                         "extender.managedResources": ["nvidia.com/gpu"]})
    assert outcome.binds == {"default/j-0": "n0"}
    assert ext.verbs() == []


@pytest.mark.parametrize("ignorable", [True, False])
def test_timeouts_and_errors_follow_ignorable(extender: tuple[Extender, str], ignorable: bool) -> None:
    ext, url = extender
    for verb in ("slow", "broken"):
        outcome = run(three_nodes(), url, **{"extender.predicateVerb": verb, "extender.httpTimeout": "100ms",
                                             "extender.ignorable": ignorable})
        assert bool(outcome.binds) is ignorable, verb
    assert "slow" in ext.verbs() and "broken" in ext.verbs()


def test_a_failed_session_open_registers_nothing_unless_ignorable(extender: tuple[Extender, str]) -> None:
    ext, url = extender
    blocked = [podgroup("blocked", queue="default", min_resources={"cpu": "1"}),
               pod("blocked-0", group="blocked", cpu="1")]
    args = {"extender.onSessionOpenVerb": "broken", "extender.jobEnqueueableVerb": "jobEnqueueable"}
    assert "default/blocked-0" in run(three_nodes(*blocked), url, **args).binds
    assert "jobEnqueueable" not in ext.verbs()
    outcome = run(three_nodes(*blocked), url, **args, **{"extender.ignorable": True})
    assert "default/blocked-0" not in outcome.binds and "default/j-0" in outcome.binds


def test_preemptable_victims_come_from_the_extender(extender: tuple[Extender, str]) -> None:
    ext, url = extender
    objects = [node("n0", cpu="2"), queue("default"), priority_class("high", 1000), priority_class("low", 1),
               podgroup("lo", queue="default", priority_class="low", phase="Running", min_member=0),
               pod("lo-0", group="lo", cpu="1", node="n0", phase="Running", priority=1),
               pod("lo-1", group="lo", cpu="1", node="n0", phase="Running", priority=1, labels={"evictable": "yes"}),
               podgroup("hi", queue="default", priority_class="high"), pod("hi-0", group="hi", cpu="1", priority=1000)]
    outcome = run(objects, url, actions="enqueue, allocate, preempt", **{"extender.preemptableVerb": "preemptable"})
    assert outcome.evictions == ["default/lo-1"]  # lo-0 comes first in victim order, but the extender keeps it
    assert "preemptable" in ext.verbs()

