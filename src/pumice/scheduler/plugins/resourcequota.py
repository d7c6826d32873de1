"""resourcequota: a PodGroup is admitted (enqueue) only while its ``minResources`` fit every
ResourceQuota of its namespace (Volcano's resourcequota plugin).

Per quota, on the resource names its ``status.hard`` lists (exact names: ``cpu`` is not
``requests.cpu``): ``status.used`` + what this session already admitted in the namespace +
the job's ``minResources`` must not exceed ``status.hard``. Quantities compare exactly.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pumice.api.quantity import format_quantity, parse_quantity
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import JOB_ENQUEUEABLE, JOB_ENQUEUED, PERMIT, REJECT
from pumice.scheduler.framework.session import Session
from pumice.scheduler.model import JobInfo

ResourceList = dict[str, Fraction]


def _list(raw: Any) -> ResourceList:
    out: ResourceList = {}
    for name, value in (raw or {}).items():
        try:
            out[str(name)] = parse_quantity(value)
        except (ValueError, TypeError):
            continue  # the API server would have refused it; nothing to compare
    return out


def _add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Fraction(0)) + v
    return out


def _text(rl: ResourceList) -> str:
    def one(v: Fraction) -> str:
        return format_quantity(int(v * 1000), milli=True) if v.denominator != 1 else str(v.numerator)

    return "map[" + " ".join(f"{k}:{one(v)}" for k, v in sorted(rl.items())) + "]"


class ResourceQuotaPlugin(Plugin):
    name = "resourcequota"

    def on_session_open(self, ssn: Session) -> None:
        self.quotas = ssn.state.resource_quotas
        #: namespace -> minResources of the jobs this session admitted there
        self.pending: dict[str, ResourceList] = {}
        ssn.add(JOB_ENQUEUEABLE, self.name, self.enqueueable)
        ssn.add(JOB_ENQUEUED, self.name, self.enqueued)

    def _min_resources(self, job: JobInfo) -> ResourceList | None:
        raw = (job.pod_group.get("spec") or {}).get("minResources")
        return None if raw is None else _list(raw)

    def enqueueable(self, job: JobInfo) -> int:
        requests = self._min_resources(job)
        if requests is None:
            return PERMIT
        for quota in self.quotas.get(job.namespace, ()):
            status = quota.get("status") or {}
            hard = _list(status.get("hard"))
            used = _list(status.get("used"))
            requested = {k: v for k, v in requests.items() if k in hard}
            counted = _add(self.pending.get(job.namespace, {}), used)
            new_usage = {k: v for k, v in _add(counted, requested).items() if k in requested}
            exceeded = sorted(k for k, v in new_usage.items() if v > hard[k])
            if exceeded:
                name = (quota.get("metadata") or {}).get("name", "")
                job.pending_reason = (
                    f"resource quota insufficient ({job.namespace}/{name}), requested: "
                    f"{_text({k: requested[k] for k in exceeded})}, used: "
                    f"{_text({k: used[k] for k in exceeded if k in used})}, "
                    f"limited: {_text({k: hard[k] for k in exceeded})}"
                )
                return REJECT
        return PERMIT

    def enqueued(self, job: JobInfo) -> None:
        requests = self._min_resources(job)
        if requests is None or job.namespace not in self.quotas:
            return
        self.pending[job.namespace] = _add(self.pending.get(job.namespace, {}), requests)
