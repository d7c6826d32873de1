"""``pumice sim``: simulate a scenario, a directory of manifests or a recorded trace in virtual time."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pumice.api import ManifestError
from pumice.api.reader import InputError, file_size_limit, read_text_file
from pumice.nodes import parse_duration
from pumice.scheduler import ConfError, load_conf

from .limits import MaxFileSize

__all__ = ["format_seconds", "render_table", "sim"]

#: Jobs are listed one per row in the table output up to this many.
JOB_ROWS = 40


def format_seconds(value: float | None) -> str:
    """``95`` -> ``1m35s``; ``None`` -> ``-``."""
    if value is None:
        return "-"
    s = float(value)
    if s < 60:
        return f"{s:.3g}s" if s != int(s) else f"{int(s)}s"
    out, rest = "", round(s)
    for div, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if rest >= div:
            out += f"{rest // div}{unit}"
            rest %= div
    return out + (f"{rest}s" if rest else "")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def render_table(console: Console, rows: list[dict[str, Any]], summary: dict[str, Any], title: str) -> None:
    if len(rows) <= JOB_ROWS:
        t = Table(title=f"Jobs — {title}", title_justify="left")
        for col in ("JOB", "QUEUE", "PHASE", "SUBMITTED", "STARTED", "FINISHED", "PODS (node)"):
            t.add_column(col, overflow="fold")
        for r in rows:
            nodes = sorted({p["node"] for p in r["pods"] if p["node"]})
            pods = f"{len(r['pods'])}" + (f" ({', '.join(nodes[:3])}{' ...' if len(nodes) > 3 else ''})" if nodes
                                          else "")
            t.add_row(f"{r['namespace']}/{r['name']}", r["queue"], r["phase"], format_seconds(r["submitted"]),
                      format_seconds(r["started"]), format_seconds(r["finished"]), pods)
        console.print(t)
    t = Table(title="Queues", title_justify="left")
    for col in ("QUEUE", "JOBS", "STARTED", "FINISHED", "MEAN WAIT", "P95 WAIT", "MEAN JCT", "P95 JCT",
                "MEAN SHARE", "PEAK SHARE"):
        t.add_column(col, justify="left" if col == "QUEUE" else "right")
    for q, v in summary["queues"].items():
        t.add_row(q, str(v["jobs"]), str(v["started"]), str(v["finished"]), format_seconds(v["mean_wait"]),
                  format_seconds(v["p95_wait"]), format_seconds(v["mean_jct"]), format_seconds(v["p95_jct"]),
                  _pct(v["mean_share"]), _pct(v["peak_share"]))
    console.print(t)
    c = summary["cluster"]
    t = Table(title="Cluster", title_justify="left")
    t.add_column("METRIC")
    t.add_column("VALUE", justify="right")
    cap = c["capacity"]
    t.add_row("nodes", f"{c['nodes']} ({cap['cpu']:g} CPU, {cap['memory_gib']:g} GiB, {cap['gpu']:g} GPU)")
    t.add_row("jobs / pods", f"{c['jobs']} / {c['pods']} ({c['pods_never_bound']} never bound)")
    t.add_row("job phases", ", ".join(f"{k} {v}" for k, v in c["job_phases"].items()) or "-")
    for dim in ("cpu", "memory", "gpu"):
        if (cap["memory_gib"] if dim == "memory" else cap[dim]) > 0:
            t.add_row(f"{dim.upper() if dim != 'memory' else 'memory'} allocated (mean / peak)",
                      f"{_pct(c[f'{dim}_util_mean'])} / {_pct(c[f'{dim}_util_peak'])}")
    t.add_row("CPU / memory used (measured, mean)", f"{_pct(c['cpu_used_mean'])} / {_pct(c['memory_used_mean'])}")
    t.add_row(f"unallocated fragments ({c['primary_resource']}, mean / end)",
              f"{_pct(c['fragmentation_mean'])} / {_pct(c['fragmentation_end'])}")
    t.add_row("simulated", f"{format_seconds(c['end'])} in {c['wall_seconds']:.2f}s wall, "
                           f"{c['scheduling_cycles']} scheduling cycles")
    console.print(t)
    for err in c.get("errors", []):
        console.print(f"[yellow]refused: {err}")


class _Bar:
    """A Rich progress bar over virtual time, refreshed at most ten times a wall second."""

    def __init__(self, total: float, console: Console) -> None:
        self.progress = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=console, transient=True)
        self.total = max(total, 1.0)
        self.task = self.progress.add_task("", total=self.total)
        self._last = 0.0

    def __enter__(self) -> Callable[[float], None]:
        self.progress.start()
        return self.update

    def update(self, t: float) -> None:
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        self.progress.update(self.task, completed=min(t, self.total), description=format_seconds(t))

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def sim(
    scenario: Annotated[Path | None, typer.Argument(help="Scenario file or directory of manifests")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="table or json")] = "table",
    report: Annotated[Path | None, typer.Option("--report", help="Write an HTML report with plots here")] = None,
    trace: Annotated[str | None, typer.Option("--trace", help="Replay a recorded trace: openb")] = None,
    trace_dir: Annotated[Path | None, typer.Option("--trace-dir", help="Folder of the trace's CSV files")] = None,
    pods: Annotated[str, typer.Option("--pods", help="openb pod list: default, gpuspec33, ...")] = "default",
    trace_nodes: Annotated[str, typer.Option("--trace-nodes", help="openb node list: all or gpu")] = "all",
    as_jobs: Annotated[bool, typer.Option("--as-jobs", help="Trace pods as one-pod Volcano Jobs")] = False,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N pods of the trace")] = None,
    compress: Annotated[float, typer.Option("--compress", help="Divide trace arrival times by this")] = 1.0,
    until: Annotated[str | None, typer.Option("--until", help="Stop at this virtual time (e.g. 1d, 90m)")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="volcano-scheduler.conf to use instead")] = None,
    federation_config: Annotated[
        Path | None, typer.Option("--federation-config", help="federation.yaml to use instead (federation scenarios)")
    ] = None,
    compare: Annotated[str | None, typer.Option(
        "--compare", help="With --trace: placement policies side by side (binpack,fragmentation,default)")] = None,
    inflate: Annotated[float, typer.Option(
        "--inflate", help="With --compare: pods arrive until they ask this x the cluster's GPUs")] = 1.3,
    arrival_rate: Annotated[int, typer.Option(
        "--arrival-rate", help="With --compare: pods arriving per scheduling session")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="With --compare: seed of the pods drawn past the trace")] = 0,
    node_limit: Annotated[int | None, typer.Option(
        "--node-limit", help="With --compare: only the first N nodes of the trace's node list")] = None,
    max_file_size: MaxFileSize = None,
) -> None:
    """Simulate SCENARIO (or --trace) on a virtual clock and summarize jobs, queues and the cluster."""
    from pumice.sim import ScenarioError, job_rows, load_path, load_trace, run_scenario, summarize
    from pumice.sim.federation import FederationScenario
    from pumice.sim.report import write_report

    def fail(message: str) -> typer.Exit:
        print(f"error: {message}", file=sys.stderr)
        return typer.Exit(2)

    if output not in ("table", "json"):
        raise fail(f"--output: unknown format {output!r} (use table or json)")
    try:
        stop = None if until is None else parse_duration(until)
    except ValueError as err:
        raise fail(f"--until: {err}") from None
    if compare is not None:
        if trace is None or trace_dir is None:
            raise fail("--compare: needs --trace openb and --trace-dir")
        if trace != "openb":
            raise fail(f"--trace: unknown trace {trace!r} (known: openb)")
        _compare(compare, trace_dir, pods, trace_nodes, limit, inflate, arrival_rate, seed, node_limit, output,
                 report, fail)
        return
    try:
        if trace is not None:
            if scenario is not None:
                raise fail("give either a SCENARIO or --trace, not both")
            if trace_dir is None:
                raise fail("--trace-dir: required with --trace (the folder of the trace's CSV files)")
            sc = load_trace(trace, trace_dir, pods, nodes=trace_nodes, as_jobs=as_jobs, limit=limit,
                            compress=compress)
        elif scenario is None:
            raise fail("SCENARIO: missing (a scenario file, a directory of manifests, or --trace)")
        else:
            with file_size_limit(max_file_size):
                loaded = load_path(scenario)
            if isinstance(loaded, FederationScenario):
                if config is not None or report is not None:
                    raise fail("--config and --report are for single-cluster scenarios (a federation scenario "
                               "gives each cluster's scheduler configuration in it)")
                _federation(loaded, federation_config, stop, output)
                return
            sc = loaded
        if federation_config is not None:
            raise fail("--federation-config: this is not a federation scenario (it has no clusters)")
        if stop is not None:
            sc.until = stop
        if config is not None:
            if not config.is_file():
                raise fail(f"{config}: no such file")
            try:
                sc.conf_text, sc.conf_source = read_text_file(config), str(config)
            except (OSError, UnicodeDecodeError, InputError) as err:  # unreadable, not UTF-8, too large
                raise fail(f"{config}: {err}") from None
            load_conf(sc.conf_text, source=sc.conf_source)
        console = Console(width=None if sys.stdout.isatty() else 160)
        horizon = sc.until if sc.until is not None else max((a.at for a in sc.timeline), default=0.0)
        show = output == "table" and sys.stdout.isatty() and horizon > 0
        if show:
            with _Bar(horizon, console) as tick:
                result = run_scenario(sc, progress=tick)
        else:
            result = run_scenario(sc)
    except (ScenarioError, ManifestError, ConfError) as err:
        raise fail(str(err)) from None
    rows = job_rows(result)
    summary = summarize(result, rows)
    if report is not None:
        path = write_report(result, rows, summary, report)
        if output == "table":
            console.print(f"report: {path}")
    if output == "json":
        data = {"scenario": sc.name, "end": summary["cluster"]["end"], "jobs": rows, **summary}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    render_table(console, rows, summary, sc.name)


def _federation(sc: Any, config_path: Path | None, stop: float | None, output: str) -> None:
    """Run a federation scenario (``pumice.sim.federation``) and print what happened where."""
    from pumice.federation.config import FederationConfigError, load_config
    from pumice.sim.federation import federation_summary, run_federation

    config = None
    if config_path is not None:
        try:
            config = load_config(config_path)
        except FederationConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            raise typer.Exit(2) from None
    if stop is not None:
        sc.until = stop
    result = run_federation(sc, config)
    summary = federation_summary(result)
    if output == "json":
        sys.stdout.write(json.dumps({"scenario": sc.name, **summary}, indent=2) + "\n")
        return
    render_federation(Console(width=None if sys.stdout.isatty() else 160), summary, sc.name)


def render_federation(console: Console, summary: dict[str, Any], title: str) -> None:
    rows = summary["jobs"]
    if len(rows) <= JOB_ROWS:
        t = Table(title=f"Jobs — {title}", title_justify="left")
        for col in ("JOB", "QUEUE", "CLUSTER", "PHASE", "SUBMITTED", "STARTED", "FINISHED", "MOVES", "WHY"):
            t.add_column(col, overflow="fold")
        for r in rows:
            why = r["reason"] if r["phase"] not in ("Completed", "Running") else ""
            t.add_row(f"{r['namespace']}/{r['name']}", r["queue"], r["cluster"] or "-", r["phase"],
                      format_seconds(r["submitted"]), format_seconds(r["started"]), format_seconds(r["finished"]),
                      str(r["moves"]), why)
        console.print(t)
    t = Table(title="Clusters", title_justify="left")
    for col in ("CLUSTER", "STATE", "NODES", "GPUS", "JOBS RUN", "GPU UTIL", "CPU UTIL", "COST"):
        t.add_column(col, justify="left" if col in ("CLUSTER", "STATE") else "right")
    for name, c in summary["clusters"].items():
        t.add_row(name, c["state"], str(c["nodes"]), f"{c['gpus']:g}", str(c["jobs_run"]), _pct(c["gpu_util"]),
                  _pct(c["cpu_util"]), f"{c['cost']:.2f}")
    console.print(t)
    t = Table(title="Queues", title_justify="left")
    for col in ("QUEUE", "JOBS", "STARTED", "FINISHED", "MEAN WAIT"):
        t.add_column(col, justify="left" if col == "QUEUE" else "right")
    for name, q in summary["queues"].items():
        t.add_row(name, str(q["jobs"]), str(q["started"]), str(q["finished"]), format_seconds(q["mean_wait"]))
    console.print(t)
    f = summary["federation"]
    t = Table(title="Federation", title_justify="left")
    t.add_column("METRIC")
    t.add_column("VALUE", justify="right")
    t.add_row("jobs", str(f["jobs"]))
    t.add_row("job phases", ", ".join(f"{k} {v}" for k, v in f["job_phases"].items()) or "-")
    t.add_row("cost", f"{f['cost']:.2f}")
    t.add_row("jobs moved (re-dispatched)", str(f["moves"]))
    t.add_row("times a job ran twice at once", str(f["overlaps"]))
    t.add_row("dispatch decisions", str(f["dispatch_decisions"]))
    t.add_row("simulated", f"{format_seconds(f['end'])} in {f['wall_seconds']:.2f}s wall")
    console.print(t)
    for err in f.get("errors", []):
        console.print(f"[yellow]refused: {err}")


def _compare(policies: str, trace_dir: Path, pods: str, nodes: str, limit: int | None, inflate: float, rate: int,
             seed: int, node_limit: int | None, output: str, report: Path | None, fail: Any) -> None:
    """``--compare``: the policies on the same arrivals, one table (and curves in the report)."""
    from pumice.sim import ScenarioError
    from pumice.sim.compare import PERCENTILES, compare_policies, write_compare_report

    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise fail("--compare: name at least one policy")
    console = Console(width=None if sys.stdout.isatty() else 160, stderr=output == "json")
    try:
        def tick(name: str, done: int, total: int) -> None:
            if sys.stderr.isatty():
                print(f"\r{name}: {done}/{total} pods", end="", file=sys.stderr, flush=True)

        results = compare_policies(trace_dir, names, pods=pods, nodes=nodes, limit=limit, inflate=inflate,
                                   seed=seed, rate=rate, node_limit=node_limit, progress=tick)
        if sys.stderr.isatty():
            print(file=sys.stderr)
    except ScenarioError as err:
        raise fail(str(err)) from None
    title = (f"openb {pods}: {nodes} nodes" + (f" (first {node_limit})" if node_limit else "")
             + f", pods until {inflate:g}x the GPUs, {rate} a session"
             + (f", first {limit} of the trace" if limit else ""))
    if report is not None:
        write_compare_report(results, report, title)
    if output == "json":
        sys.stdout.write(json.dumps({"title": title, "policies": [r.to_json() for r in results]}, indent=2) + "\n")
        return
    table = Table(title=f"{title}\nunallocated GPU (% of capacity) at arrived workload (% of GPU capacity)")
    table.add_column("policy")
    for pct in PERCENTILES:
        table.add_column(f"{pct}%", justify="right")
    for col in ("alloc. rate", "pods", "failed", "failed GPU pods", "seconds"):
        table.add_column(col, justify="right")
    for r in results:
        cells = ["" if (v := r.unallocated_at(p)) is None else f"{v * 100:.1f}" for p in PERCENTILES]
        table.add_row(r.name, *cells, f"{r.allocation_rate * 100:.1f}%", str(r.pods), str(r.failed),
                      str(r.failed_gpu), f"{r.seconds:.1f}")
    console.print(table)
    if report is not None:
        console.print(f"report: {report / 'index.html'}")
