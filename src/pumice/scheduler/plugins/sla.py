"""sla: jobs that waited longer than their allowed waiting time are admitted and pipelined first."""

from __future__ import annotations

import re

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import ABSTAIN, JOB_ENQUEUEABLE, JOB_ORDER, JOB_PIPELINED, PERMIT
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo

ARGUMENT = "sla-waiting-time"
#: PodGroup annotations, in the order Volcano reads them.
ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` (``1h30m``, ``90s``, ``1.5h``, ``-2m``) in seconds; None if it
    is not a duration."""
    rest = text
    sign = -1.0 if rest.startswith("-") else 1.0
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        return None
    total, pos = 0.0, 0
    while pos < len(rest):
        m = _PART.match(rest, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def waiting_time(text: str) -> float | None:
    """A valid SLA waiting time: a duration above zero (Volcano ignores others)."""
    value = parse_duration(text)
    return value if value is not None and value > 0 else None


class SlaPlugin(Plugin):
    name = "sla"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: The global waiting time, for jobs without their own annotation.
        self.default: float | None = None
        if ARGUMENT in arguments:
            text = arguments.get_string(ARGUMENT, "")
            self.default = waiting_time(text)
            if self.default is None and text:
                arguments.warn(ARGUMENT, f"{text!r} is not a duration above zero (like 1h30m); it is ignored")

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.add(JOB_ORDER, self.name, self.job_order)
        ssn.add(JOB_ENQUEUEABLE, self.name, self.permit_when_overdue)
        ssn.add(JOB_PIPELINED, self.name, self.permit_when_overdue)

    def waiting_time(self, job: JobInfo) -> float | None:
        ann = (job.pod_group.get("metadata") or {}).get("annotations") or {}
        for key in ANNOTATIONS:
            if key in ann:
                value = waiting_time(str(ann[key]))
                if value is not None:
                    return value
        return self.default

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Jobs with a waiting time first, the earliest deadline first."""
        lw, rw = self.waiting_time(left), self.waiting_time(right)
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

    def permit_when_overdue(self, job: JobInfo) -> int:
        wt = self.waiting_time(job)
        if wt is None:
            return ABSTAIN
        return PERMIT if self.ssn.now - job.creation >= wt else ABSTAIN
