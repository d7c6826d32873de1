"""Taking a job back from a member that went away, and sending it elsewhere — never running it twice at once.

A placed, unfinished job is taken back when one of its parts' member:

* is deleted (its Cluster object removed from the host),
* has been unreachable for ``gracePeriod`` since the federation's last contact,
* no longer has the job's copy (deleted there, or stopped by the member's fence agent), or
* carries a ``NoExecute`` taint the job does not tolerate.

With ``redispatch: failover`` (and unless the job says ``redispatch: never``) the placement is marked
``moving`` and every part is removed: deleted where the member answers, and counted as gone where it does not
only once the member's fence agent has certainly stopped it (it acknowledged the lease, and ``gracePeriod``
> ``leaseDuration`` has passed since the last renewal) — or, for a member without a fence agent, never
(``unfenced: wait``, the default) or after the grace period (``unfenced: force``, at the operator's risk).
When every part is gone the job waits on the host to be dispatched again, the lost members in its history;
after ``maxRedispatches`` moves it fails instead.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pumice.scheduler.plugins.matching import untolerated
from pumice.store import StoreError

from .propagate import delete_part
from .records import JobRecord

if TYPE_CHECKING:
    from .federation import Federation

__all__ = ["check_members_lost"]


def _problem(fed: Federation, record: JobRecord, cluster: str, name: str) -> tuple[str, str]:
    """Why ``record``'s part in ``cluster`` must be taken back, and the kind (``lost``/``unstarted``); ("", "")
    if it may stay."""
    member = fed.members.get(cluster)
    now = fed.clock.now()
    if member is None or member.deleted:
        return f"cluster {cluster} was removed from the federation", "lost"
    if not member.reachable:
        since = member.unreachable_since if member.unreachable_since is not None else fed.started
        if now - since >= fed.config.grace_period:
            why = member.error or "no answer"
            return f"cluster {cluster} has been unreachable for {now - since:.0f}s ({why})", "lost"
        return "", ""
    ns = record.key[0]
    copy = member.job(ns, name)
    if copy is None:
        return f"its copy in cluster {cluster} is gone", "lost"
    demand = record.demand(fed.priorities())
    bad = untolerated(member.view.taints, list(demand.tolerations), ("NoExecute",))
    if bad:
        return f"cluster {cluster} has taint {bad[0].get('key')}:NoExecute the job does not tolerate", "lost"
    timeout = fed.config.pending_timeout
    placed_at = record.placement.at
    if timeout and placed_at and now - placed_at >= timeout and _unstarted(copy):
        return (f"it waited {now - placed_at:.0f}s in cluster {cluster} without starting "
                f"(pendingTimeout {timeout:g}s)"), "unstarted"
    return "", ""


def _unstarted(copy: dict) -> bool:
    status = copy.get("status") or {}
    phase = str((status.get("state") or {}).get("phase") or "Pending")
    started = sum(int(status.get(k) or 0) for k in ("running", "succeeded", "failed"))
    return phase == "Pending" and started < int(status.get("minAvailable") or 1)


def _taken_back(fed: Federation, record: JobRecord, cluster: str, name: str) -> bool:
    """Remove one part; True once it certainly runs no more."""
    member = fed.members.get(cluster)
    ns = record.key[0]
    now = fed.clock.now()
    if member is not None and member.reachable:
        if member.job(ns, name) is not None or member.live_pods.get((ns, name)):
            try:
                deleted = delete_part(member.store(), ns, name)
            except StoreError as err:
                member.disconnect(str(err))
                return False
            if deleted is not None:
                member.forget(deleted)
        return member.gone(ns, name)
    last = member.last_ok if member is not None and member.last_ok is not None else fed.started
    if now - last < fed.config.grace_period:
        return False
    fenced = member is not None and member.fenced
    return fenced or fed.config.unfenced == "force"


def _intact(fed: Federation, record: JobRecord) -> bool:
    for part in record.placement.parts:
        member = fed.members.get(part.cluster)
        if member is None or not member.reachable or member.job(record.key[0], part.name) is None:
            return False
    return True


def check_members_lost(fed: Federation) -> bool:
    """One pass over the placed jobs; True if anything was written."""
    wrote = False
    for record in list(fed.records.values()):
        placement = record.placement
        if not placement.placed or record.terminal or record.deleting or record.problem:
            continue
        reason, kind = "", ""
        for part in placement.parts:
            reason, kind = _problem(fed, record, part.cluster, part.name)
            if reason:
                break
        if placement.moving and not reason and _intact(fed, record):
            # every member answers again with every copy in place, before any was stopped: it stays
            fed.write_placement(record, dataclasses.replace(placement, moving="", kind=""))
            fed.event(record, "Normal", "ClusterBack", "its clusters answer again: the job stays where it runs")
            fed.refresh_status(record)
            wrote = True
            continue
        if not reason and not placement.moving:
            continue
        reason = placement.moving or reason
        if not placement.moving:
            demand = record.demand(fed.priorities())
            if kind == "lost" and (fed.config.redispatch == "none" or not demand.redispatch):
                why = "redispatch is off" if demand.redispatch else "the job says redispatch: never"
                wrote |= fed.wait(record, "ClusterLost", f"{reason}; it stays there ({why})",
                                  phase=record.phase or "Pending")
                continue
            fed.write_placement(record, dataclasses.replace(placement, moving=reason, kind=kind))
            what = "ClusterLost" if kind == "lost" else "NotStarted"
            fed.event(record, "Warning", what, f"{reason}: taking the job back to run it elsewhere")
            wrote = True
        if all([_taken_back(fed, record, p.cluster, p.name) for p in placement.parts]):  # act on every part
            clusters = [p.cluster for p in placement.parts]
            unstarted = record.placement.kind == "unstarted"
            fed.release(record)
            after = dataclasses.replace(record.placement, parts=[], moving="", kind="",
                                        history=[*placement.history, *clusters],
                                        lost=placement.lost + (0 if unstarted else 1),
                                        returned=[*placement.returned, *clusters] if unstarted else placement.returned)
            fed.write_placement(record, after)
            if after.lost > fed.config.max_redispatches:
                fed.wait(record, "TooManyRedispatches", f"{reason}; taken back {after.lost} times "
                                                        f"(maxRedispatches {fed.config.max_redispatches})",
                         phase="Failed")
            else:
                fed.wait(record, "Redispatching", f"{reason}; waiting to be dispatched again")
                fed.event(record, "Normal", "Redispatching", f"{reason}; every copy is stopped")
            wrote = True
        else:
            wrote |= fed.wait(record, "Redispatching", f"{reason}; waiting until its copies are stopped",
                              phase=record.phase or "Pending")
    return wrote
