"""overcommit: admit jobs while the cluster's idle resources, scaled by a factor, can hold them."""

from __future__ import annotations

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import JOB_ENQUEUEABLE, JOB_ENQUEUED, PERMIT, REJECT
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.usage import opening_usage
from pumice.scheduler.model import JobInfo
from pumice.scheduler.resources import fits_requested

DEFAULT_FACTOR = 1.2


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        factor = arguments.get_float("overcommit-factor", DEFAULT_FACTOR)
        if factor < 1.0:
            arguments.warn("overcommit-factor", f"{factor:g} is below 1; using the default {DEFAULT_FACTOR:g}")
            factor = DEFAULT_FACTOR
        self.factor = factor

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        #: The cluster's resources times the factor, less what is used.
        self.idle: np.ndarray = ssn.total_resource * self.factor - ssn.nodes.used.sum(axis=1)
        #: What admitted jobs hold in the cluster before their pods run.
        self.inqueue: np.ndarray = ssn.space.zeros()
        for usage in opening_usage(ssn).values():
            self.inqueue += usage.inqueue
        ssn.add(JOB_ENQUEUEABLE, self.name, self.enqueueable)
        ssn.add(JOB_ENQUEUED, self.name, self.enqueued)

    def enqueueable(self, job: JobInfo) -> int:
        if job.min_resources is None:
            return PERMIT
        if fits_requested(self.inqueue + job.min_resources, self.idle, job.min_resources):
            return PERMIT
        space = self.ssn.space
        admitted = space.describe(self.inqueue) if self.inqueue.any() else "no other job"
        job.pending_reason = (
            f"resource in cluster is overused: the job needs {space.describe(job.min_resources)}, "
            f"{self.factor:g} x the idle resources is {space.describe(self.idle)} and {admitted} is already admitted"
        )
        return REJECT

    def enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue = self.inqueue + job.min_resources
