"""What the job controller would create for VolcanoJobs, without a store: for one-shot sessions.

``pumice schedule`` takes files literally; a VolcanoJob in them is turned into the PodGroup and the
pods its controller creates once the PodGroup is admitted (a Job that is not admitted yet has no
pods in Volcano — here the session's enqueue decides admission, and allocate places the pods).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["expand_jobs"]

JOB_API = "batch.volcano.sh/v1alpha1"


def expand_jobs(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(objects with every Job replaced by its PodGroup and pods, the keys of the Jobs expanded)."""
    if not any(obj.get("kind") == "Job" and obj.get("apiVersion") == JOB_API for obj in objects):
        return list(objects), []  # one pass (a large dry run has none)
    priorities = {
        (o.get("metadata") or {}).get("name", ""): int(o.get("value") or 0)
        for o in objects if o.get("kind") == "PriorityClass"
    }
    out: list[dict[str, Any]] = []
    expanded: list[str] = []
    for obj in objects:
        if obj.get("kind") != "Job" or obj.get("apiVersion") != JOB_API:
            out.append(obj)
            continue
        # here: the job controller's modules (and the Job model) only for a file that has Jobs
        from pumice.api import apply_defaults, parse_object

        from .job_build import build_pod, build_podgroup, tasks_of
        from .job_plugins import PluginError

        job = apply_defaults(parse_object(copy.deepcopy(obj))).to_dict()
        meta = job.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        # a stable uid keeps the PodGroup name (<job>-<uid>) reproducible from run to run
        meta.setdefault("uid", f"{meta['namespace']}-{meta.get('name', '')}")
        out.append(build_podgroup(job, priorities))
        try:
            pods = [build_pod(job, task, index, version=0, retry_count=0)
                    for task in tasks_of(job) for index in range(int(task.get("replicas") or 0))]
        except PluginError:
            pods = []  # a plugin refuses the job's pods (e.g. a Ray job without its head): Volcano creates none
        out += pods
        expanded.append(f"{meta['namespace']}/{meta.get('name', '')}")
    return out, expanded
