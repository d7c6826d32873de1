"""sla: jobs that waited longer than their allowed waiting time are admitted and pipelined first."""

from __future__ import annotations

import re

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import ABSTAIN, PERMIT, Session
from pumice.scheduler.model import JobInfo

ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    """A Go duration (``1h30m``, ``90s``, ``3m``) in seconds; None if it is not one."""
    text = str(text).strip()
    if not text:
        return None
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


@register_plugin
class SlaPlugin(Plugin):
    name = "sla"

    def on_session_open(self, ssn: Session) -> None:
        default = parse_duration(str(self.arguments.get("sla-waiting-time") or ""))

        def waiting_time(job: JobInfo) -> float | None:
            ann = (job.pod_group.get("metadata") or {}).get("annotations") or {}
            for key in ANNOTATIONS:
                if key in ann:
                    value = parse_duration(ann[key])
                    if value is not None:
                        return value
            return default

        def job_order(left: JobInfo, right: JobInfo) -> int:
            lw, rw = waiting_time(left), waiting_time(right)
            if lw is None and rw is None:
                return 0
            if lw is None:
                return 1
            if rw is None:
                return -1
            ld, rd = left.creation + lw, right.creation + rw
            if ld == rd:
                return 0
            return -1 if ld < rd else 1

        def permit_when_overdue(job: JobInfo) -> int:
            wt = waiting_time(job)
            if wt is None:
                return ABSTAIN
            return PERMIT if ssn.now - job.creation >= wt else ABSTAIN

        ssn.add("job_order", self.name, job_order)
        ssn.add("job_enqueueable", self.name, permit_when_overdue)
        ssn.add("job_pipelined", self.name, permit_when_overdue)
