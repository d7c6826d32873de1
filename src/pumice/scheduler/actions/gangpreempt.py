"""gangpreempt: a starving gang evicts lower-priority jobs of its own queue, bundle by bundle, inside
one HyperNode domain (Volcano v1.15; see :mod:`.gang_eviction`)."""

from __future__ import annotations

from pumice.scheduler.actions.gang_eviction import DEFAULT_MAX_DOMAINS, GangEviction, GangEvictionOptions
from pumice.scheduler.framework.plugin import Action
from pumice.scheduler.framework.points import GANG_PREEMPT
from pumice.scheduler.framework.session import Session


def gang_eviction_options(ssn: Session, action: str) -> GangEvictionOptions:
    """``maxDomains`` (8; not above 0: 8, with a warning) and ``allowWholeBundle`` (true)."""
    arguments = ssn.conf.action_args(action)
    max_domains = arguments.get_int("maxDomains", DEFAULT_MAX_DOMAINS)
    if max_domains <= 0:
        arguments.warn("maxDomains", f"{max_domains} is not above 0; using {DEFAULT_MAX_DOMAINS}")
        max_domains = DEFAULT_MAX_DOMAINS
    return GangEvictionOptions(max_domains, arguments.get_bool("allowWholeBundle", True))


class GangPreemptAction(Action):
    name = "gangpreempt"

    def execute(self, ssn: Session) -> None:
        GangEviction(ssn, GANG_PREEMPT, gang_eviction_options(ssn, self.name)).execute()
