"""overcommit: admit jobs while the cluster's idle resources, scaled by a factor, can hold them."""

from __future__ import annotations

from pumice.scheduler.framework.plugin import Plugin, register_plugin
from pumice.scheduler.framework.session import PERMIT, REJECT, Session
from pumice.scheduler.framework.usage import opening_usage
from pumice.scheduler.model import JobInfo
from pumice.scheduler.resources import fits_requested

DEFAULT_FACTOR = 1.2


@register_plugin
class OvercommitPlugin(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        factor = float(self.arguments.get("overcommit-factor") or DEFAULT_FACTOR)
        if factor < 1.0:
            factor = DEFAULT_FACTOR
        space = ssn.space
        idle = ssn.total_resource * factor - ssn.nodes.used.sum(axis=1)
        inqueue = space.zeros()
        for usage in opening_usage(ssn).values():
            inqueue += usage.inqueue

        def enqueueable(job: JobInfo) -> int:
            if job.min_resources is None:
                return PERMIT
            if fits_requested(inqueue + job.min_resources, idle, job.min_resources):
                return PERMIT
            admitted = space.describe(inqueue) if inqueue.any() else "no other job"
            job.pending_reason = (
                f"resource in cluster is overused: the job needs {space.describe(job.min_resources)}, "
                f"{factor:g} x the idle resources is {space.describe(idle)} and {admitted} is already admitted"
            )
            return REJECT

        def enqueued(job: JobInfo) -> None:
            nonlocal inqueue
            if job.min_resources is not None:
                inqueue = inqueue + job.min_resources

        ssn.add("job_enqueueable", self.name, enqueueable)
        ssn.add("job_enqueued", self.name, enqueued)
