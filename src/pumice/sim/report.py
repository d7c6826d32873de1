"""``--report DIR``: an HTML page with PNG plots (matplotlib, Agg backend: no display needed).

Plots: cluster utilization (CPU, memory, GPU) and fragmentation over time, each queue's share of
the cluster over time, and the distribution of job wait times per queue.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from .engine import SimResult
from .metrics import queue_share_series, utilization_series
from .recorder import DIMS

__all__ = ["time_unit", "write_report"]


def time_unit(span: float) -> tuple[float, str]:
    """A readable unit for a time axis spanning ``span`` seconds."""
    for div, name in ((86400.0, "days"), (3600.0, "hours"), (60.0, "minutes")):
        if span >= 3 * div:
            return div, name
    return 1.0, "seconds"


def _plots(result: SimResult, rows: list[dict[str, Any]], out: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = result.recorder
    div, unit = time_unit(result.end)
    made: list[tuple[str, str]] = []

    times, util = utilization_series(rec)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    cap = rec.capacity.sum(axis=0) if rec.capacity.size else np.zeros(len(DIMS))
    for i, dim in enumerate(DIMS):
        if cap[i] > 0 and len(times):
            ax.step(np.append(times, result.end) / div, np.append(util[:, i], util[-1, i]) * 100, where="post",
                    label=f"{dim} allocated")
    if result.fragmentation:
        ft = np.array([t for t, _ in result.fragmentation])
        fv = np.array([f for _, f in result.fragmentation])
        ax.plot(ft / div, fv * 100, linestyle="--", label="fragmented (unusable free)")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("% of cluster")
    ax.set_ylim(0, 105)
    ax.legend(loc="upper right", fontsize="small")
    ax.set_title("Cluster utilization")
    fig.tight_layout()
    fig.savefig(out / "utilization.png", dpi=110)
    plt.close(fig)
    made.append(("utilization.png", "Cluster utilization and fragmentation over time"))

    times, shares = queue_share_series(rec)
    if shares and len(times):
        fig, ax = plt.subplots(figsize=(9, 3.6))
        x = np.append(times, result.end) / div
        ax.stackplot(x, *[np.append(v, v[-1]) * 100 for v in shares.values()], labels=list(shares), step="post")
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("dominant share (%)")
        ax.legend(loc="upper right", fontsize="small")
        ax.set_title("Queue shares of the cluster")
        fig.tight_layout()
        fig.savefig(out / "queue_shares.png", dpi=110)
        plt.close(fig)
        made.append(("queue_shares.png", "Each queue's dominant share of the cluster over time"))

    waits: dict[str, list[float]] = {}
    for r in rows:
        if r["wait"] is not None:
            waits.setdefault(r["queue"], []).append(r["wait"])
    if waits:
        fig, ax = plt.subplots(figsize=(9, 3.6))
        all_w = np.concatenate([np.asarray(v) for v in waits.values()])
        top = float(all_w.max()) if all_w.size else 1.0
        bins = np.linspace(0, top if top > 0 else 1.0, 40)
        ax.hist(list(waits.values()), bins=bins.tolist(), label=list(waits), stacked=True)
        ax.set_xlabel("wait before the first pod started (seconds)")
        ax.set_ylabel("jobs")
        ax.set_yscale("log")
        ax.legend(loc="upper right", fontsize="small")
        ax.set_title("Wait-time distribution")
        fig.tight_layout()
        fig.savefig(out / "wait_times.png", dpi=110)
        plt.close(fig)
        made.append(("wait_times.png", "Distribution of job wait times, per queue"))
    return made


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('-' if c is None else str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_report(result: SimResult, rows: list[dict[str, Any]], summary: dict[str, Any], directory: Path) -> Path:
    """Write ``index.html``, the PNGs and ``result.json`` into ``directory``; returns the HTML path."""
    directory.mkdir(parents=True, exist_ok=True)
    plots = _plots(result, rows, directory)
    qcols = ["jobs", "started", "finished", "mean_wait", "p95_wait", "mean_jct", "p95_jct", "mean_share", "peak_share"]
    queues = _table(["queue", *qcols], [[q, *(v[c] for c in qcols)] for q, v in summary["queues"].items()])
    cluster = _table(["metric", "value"], [[k, json.dumps(v) if isinstance(v, dict | list) else v]
                                            for k, v in summary["cluster"].items()])
    shown = rows[:500]
    jobs = _table(["job", "queue", "phase", "submitted", "started", "finished", "pods"],
                  [[f"{r['namespace']}/{r['name']}", r["queue"], r["phase"], r["submitted"], r["started"],
                    r["finished"], len(r["pods"])] for r in shown])
    more = f"<p>{len(rows) - len(shown)} more jobs in result.json.</p>" if len(rows) > len(shown) else ""
    images = "".join(f'<figure><img src="{p}" alt="{html.escape(c)}"><figcaption>{html.escape(c)}</figcaption>'
                     f"</figure>" for p, c in plots)
    sc = result.scenario
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>pumice sim: {html.escape(sc.name)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }}
th {{ background: #f3f3f3; }} td:first-child {{ text-align: left; }}
img {{ max-width: 100%; }} figure {{ margin: 1.5em 0; }}
</style></head><body>
<h1>pumice sim: {html.escape(sc.name)}</h1>
<p>{html.escape(sc.description or sc.source)} — simulated {result.end:g} s in {result.wall_seconds:.2f} s wall time,
{result.cycles} scheduling cycles.</p>
<h2>Queues</h2>{queues}
<h2>Cluster</h2>{cluster}
<h2>Plots</h2>{images}
<h2>Jobs</h2>{jobs}{more}
</body></html>
"""
    (directory / "result.json").write_text(json.dumps({"jobs": rows, **summary}, indent=1))
    path = directory / "index.html"
    path.write_text(page)
    return path
