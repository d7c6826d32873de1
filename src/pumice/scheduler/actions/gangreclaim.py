"""gangreclaim: a starving gang of a queue that may reclaim evicts the jobs of other, reclaimable
queues, bundle by bundle, inside one HyperNode domain (Volcano v1.15; see :mod:`.gang_eviction`)."""

from __future__ import annotations

from pumice.scheduler.actions.gang_eviction import GangEviction
from pumice.scheduler.actions.gangpreempt import gang_eviction_options
from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.points import GANG_RECLAIM
from pumice.scheduler.framework.session import Session


class GangReclaimAction(Action):
    name = "gangreclaim"

    def execute(self, ssn: Session) -> None:
        GangEviction(ssn, GANG_RECLAIM, gang_eviction_options(ssn, self.name)).execute()
