"""Queue weights hold over a whole run in pumice's default configuration (issue 11, item 2): two queues
of weight 1 and 2, two 8-CPU nodes, 40 one-pod jobs of half a CPU in each, submitted together."""

from __future__ import annotations

from typing import Any

from pumice.scheduler.conf import DEFAULT_CONF
from pumice.sim import Action, Scenario, job_rows, run_scenario
from tests.builders import node, queue, vcjob

QUEUES = ("qa", "qb")


def job(q: str, i: int) -> dict[str, Any]:
    """A one-pod job of half a CPU running 100 to 350 s (ends spread over the run)."""
    obj = vcjob(f"{q}-{i:02d}", queue=q, cpu="500m", min_available=1)
    container = obj["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["command"] = ["sh", "-c", f"sleep {100 + i * 37 % 250}"]
    return obj


def run(conf: str | None) -> list[dict[str, Any]]:
    jobs = [job(q, i) for i in range(40) for q in QUEUES]
    sc = Scenario(name="weights", source="test", nodes=[node("n1", cpu="8", capacity=True),
                                                        node("n2", cpu="8", capacity=True)],
                  conf_text=conf, until=5000,
                  timeline=[Action(0.0, "apply", [queue("qa", weight=1), queue("qb", weight=2)]),
                            Action(0.0, "apply", jobs)])
    return [r for r in job_rows(run_scenario(sc)) if r["queue"] in QUEUES]


def states(rows: list[dict[str, Any]]) -> list[tuple[float, dict[str, int], dict[str, int]]]:
    """(time, running jobs per queue, waiting jobs per queue) after each scheduling decision."""
    starts = sorted({r["started"] for r in rows if r["started"] is not None})
    out = []
    for t in starts:
        running = {q: sum(1 for r in rows if r["queue"] == q and r["started"] is not None and r["started"] <= t
                          and (r["finished"] is None or r["finished"] > t)) for q in QUEUES}
        waiting = {q: sum(1 for r in rows if r["queue"] == q and (r["started"] is None or r["started"] > t))
                   for q in QUEUES}
        out.append((t, running, waiting))
    return out


def test_weights_hold_from_the_first_wave_to_the_end_without_idle_cpus() -> None:
    rows = run(None)
    assert all(r["phase"] == "Completed" for r in rows) and len(rows) == 80
    seen = states(rows)
    _, first, _ = seen[0]
    assert 1.5 <= first["qb"] / first["qa"] <= 2.5, first
    contended = [(t, now, wait) for t, now, wait in seen if wait["qa"] and wait["qb"]]
    assert len(contended) > 10
    for t, now, wait in contended:
        assert 1.5 <= now["qb"] / now["qa"] <= 2.5, (t, now, wait)
    for t, now, wait in seen:
        if wait["qa"] or wait["qb"]:
            assert now["qa"] + now["qb"] == 32, (t, now, wait)  # no half CPU idle while a job waits


def test_volcanos_configuration_admits_the_first_queue_first() -> None:
    _, first, _ = states(run(DEFAULT_CONF))[0]
    assert first["qa"] > first["qb"], first  # Volcano: 26 against 6
