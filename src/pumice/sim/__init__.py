"""Discrete-event simulation of a pumice cluster on a virtual clock: scenarios, traces, reports.

``load_path`` reads a scenario (or a directory of manifests), ``load_trace`` a recorded trace;
``run_scenario`` runs one and ``job_rows`` / ``summarize`` / ``write_report`` say what happened.
"""

from .engine import SimResult, fragmentation, run_scenario
from .errors import ScenarioError
from .metrics import job_rows, queue_share_series, summarize, utilization_series
from .recorder import JobRecord, PodRecord, Recorder
from .scenario import Action, Scenario, load_directory, load_path, load_scenario
from .trace import load_openb, load_trace

__all__ = [
    "Action",
    "JobRecord",
    "PodRecord",
    "Recorder",
    "Scenario",
    "ScenarioError",
    "SimResult",
    "fragmentation",
    "job_rows",
    "load_directory",
    "load_openb",
    "load_path",
    "load_scenario",
    "load_trace",
    "queue_share_series",
    "run_scenario",
    "summarize",
    "utilization_series",
]
