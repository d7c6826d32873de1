"""The load-aware descheduler: evict pods from nodes whose measured usage is high, so that they go elsewhere.

Volcano's descheduler (``volcano-sh/descheduler``, its ``LoadAware`` balance plugin with the
``DefaultEvictor``) every ``deschedulingInterval`` (10m in its installer) sorts the nodes by their real
usage: nodes under every ``thresholds`` percentage (cpu 30, memory 30) are *underutilized*, nodes over some
``targetThresholds`` percentage (cpu 80, memory 85) are *overutilized*; pods leave overutilized nodes while
they are still over and the underutilized nodes have room up to their targets. pumice makes that choice
with the rescheduling plugin's :func:`~pumice.scheduler.plugins.rescheduling.low_node_utilization`, fed the
nodes' measured usage (a :class:`pumice.node_metrics.MetricsSource`) as a percentage of allocatable.

What may go (the DefaultEvictor's rules, and two guarantees):

- Running pods only; never a DaemonSet's pod, a mirror (static) pod, a pod being deleted, a pod in an
  excluded namespace (``kube-system``), nor one whose priority is at or over ``priorityThreshold`` (10000);
- never a PodDisruptionBudget below what it must keep (the ``pdb`` plugin's budget arithmetic);
- never a running gang below its ``minAvailable`` (the ``gang`` plugin's victim rule: a job gives up a pod
  only while it has more ready pods than its minimum); a job of ``minAvailable`` 1 is no gang: its pods move
  one by one like any other.

A node without fresh metrics (5 minutes) is neither under- nor overutilized. Evictions delete the pod
through the store, as the scheduler's own evictions do, each with a ``Descheduled`` event on the pod.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pumice.clock import Clock
from pumice.events import EventRecorder
from pumice.node_metrics import FRESHNESS, MetricsSource, NodeMetrics
from pumice.store import Store, StoreError

__all__ = ["DEFAULT_INTERVAL", "Descheduler", "DeschedulerPolicy", "PolicyError", "choose", "parse_policy"]

log = logging.getLogger("pumice.descheduler")

#: Volcano's installer runs the descheduler every 10 minutes.
DEFAULT_INTERVAL = 600.0
#: Kubernetes' system-critical priorities start here (``evictSystemCriticalPods: false``).
SYSTEM_CRITICAL = 2_000_000_000
_READ = ("nodes", "pods", "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh",
         "priorityclasses.scheduling.k8s.io", "poddisruptionbudgets.policy")
_CONF = "actions: ''\ntiers:\n- plugins:\n  - name: gang\n  - name: pdb\n"


class PolicyError(ValueError):
    """A descheduler policy that cannot be used (one line naming the field)."""


@dataclass(frozen=True)
class DeschedulerPolicy:
    """Volcano's default ``LoadAware`` + ``DefaultEvictor`` configuration."""

    #: Percent (cpu, memory) under which a node is underutilized (NaN: not compared).
    thresholds: tuple[float, float] = (30.0, 30.0)
    #: Percent (cpu, memory) over which a node is overutilized (NaN: not compared).
    target_thresholds: tuple[float, float] = (80.0, 85.0)
    interval: float = DEFAULT_INTERVAL
    #: Pods at or over this priority stay (the DefaultEvictor's ``priorityThreshold.value``).
    priority_threshold: int = 10000
    excluded_namespaces: frozenset[str] = field(default_factory=lambda: frozenset({"kube-system"}))


def _percent_pair(raw: Any, where: str, default: tuple[float, float]) -> tuple[float, float]:
    if raw is None:
        return default
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{where}: expected a map of cpu/memory to a percentage")
    out = [math.nan, math.nan]
    for name, value in raw.items():
        if name not in ("cpu", "memory"):
            raise PolicyError(f"{where}.{name}: load-aware descheduling measures cpu and memory only")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            raise PolicyError(f"{where}.{name}: expected a percentage 0..100, got {value!r}")
        out[0 if name == "cpu" else 1] = float(value)
    return out[0], out[1]


def parse_policy(doc: Any, source: str = "descheduler policy", interval: float = DEFAULT_INTERVAL
                 ) -> DeschedulerPolicy:
    """A Volcano ``DeschedulerPolicy`` (``descheduler/v1alpha2``) with one profile enabling ``LoadAware``."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "DeschedulerPolicy":
        raise PolicyError(f"{source}: expected kind DeschedulerPolicy")
    profiles = doc.get("profiles") or []
    if not isinstance(profiles, list) or len(profiles) != 1 or not isinstance(profiles[0], Mapping):
        raise PolicyError(f"{source}: profiles: expected exactly one profile")
    profile = profiles[0]
    enabled = (((profile.get("plugins") or {}).get("balance") or {}).get("enabled")) or []
    if list(enabled) != ["LoadAware"]:
        raise PolicyError(f"{source}: profiles[0].plugins.balance.enabled: pumice runs LoadAware only, got {enabled!r}")
    base = DeschedulerPolicy(interval=interval)
    thresholds, targets = base.thresholds, base.target_thresholds
    priority, excluded = base.priority_threshold, base.excluded_namespaces
    for i, item in enumerate(profile.get("pluginConfig") or []):
        where = f"{source}: profiles[0].pluginConfig[{i}]"
        name = item.get("name") if isinstance(item, Mapping) else None
        args = item.get("args") or {} if isinstance(item, Mapping) else {}
        if name == "LoadAware":
            known = {"thresholds", "targetThresholds", "evictableNamespaces", "metrics", "duration", "nodeFit",
                     "numberOfNodes", "useDeviationThresholds"}
            unknown = sorted(set(args) - known)
            if unknown:
                raise PolicyError(f"{where}.args.{unknown[0]}: not supported by pumice's LoadAware")
            thresholds = _percent_pair(args.get("thresholds"), f"{where}.args.thresholds", thresholds)
            targets = _percent_pair(args.get("targetThresholds"), f"{where}.args.targetThresholds", targets)
            namespaces = args.get("evictableNamespaces") or {}
            if namespaces:
                if set(namespaces) - {"exclude"}:
                    raise PolicyError(f"{where}.args.evictableNamespaces: only 'exclude' is supported")
                excluded = frozenset(str(n) for n in namespaces.get("exclude") or [])
            if args.get("useDeviationThresholds"):
                raise PolicyError(f"{where}.args.useDeviationThresholds: not supported by pumice")
        elif name == "DefaultEvictor":
            value = ((args.get("priorityThreshold") or {}).get("value"))
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise PolicyError(f"{where}.args.priorityThreshold.value: expected an integer, got {value!r}")
                priority = value
        else:
            raise PolicyError(f"{where}.name: unknown plugin {name!r} (pumice: LoadAware, DefaultEvictor)")
    for i, (low, high) in enumerate(zip(thresholds, targets, strict=True)):
        if not math.isnan(low) and not math.isnan(high) and low > high:
            raise PolicyError(f"{source}: thresholds.{('cpu', 'memory')[i]} ({low:g}) is over its targetThreshold "
                              f"({high:g})")
    return DeschedulerPolicy(thresholds, targets, interval, priority, excluded)


def choose(objects: Iterable[dict[str, Any]], now: float, metrics: Mapping[str, NodeMetrics],
           policy: DeschedulerPolicy | None = None, scheduler_names: Iterable[str] = ("volcano",)
           ) -> list[tuple[str, str]]:
    """Which pods of ``objects`` (nodes, pods, PodGroups, budgets...) to evict, and from which node.

    lowNodeUtilization picks victims; budgets and gangs then say which may go. When one may not, it is left
    out and the choice is made again without it (another pod of the node may go instead), until every
    victim chosen may go.
    """
    from pumice.scheduler import build_cluster_state, load_conf, open_session
    from pumice.scheduler.model import TaskInfo, TaskStatus
    from pumice.scheduler.plugins.gang import GangPlugin
    from pumice.scheduler.plugins.pdb import PdbPlugin
    from pumice.scheduler.plugins.rescheduling import Thresholds, eviction_order, low_node_utilization
    from pumice.scheduler.resources import CPU, MEMORY

    policy = policy or DeschedulerPolicy()
    state = build_cluster_state(objects, scheduler_names)
    nodes = state.nodes
    n = len(nodes)
    if n == 0:
        return []
    rows = [nodes.space.index[CPU], nodes.space.index[MEMORY]]
    alloc = nodes.allocatable[rows]
    measured = np.zeros((2, n))
    fresh = np.zeros(n, dtype=bool)
    for j, name in enumerate(nodes.names):  # once per run (every interval), not per pod
        m = metrics.get(name)
        if m is not None and now - m.timestamp <= FRESHNESS:
            measured[:, j] = (m.cpu, m.memory)
            fresh[j] = True
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(alloc > 0, measured * 100.0 / alloc, 0.0)
    candidates: list[list[TaskInfo]] = []
    requests: dict[str, np.ndarray] = {}
    for j, tasks in enumerate(nodes.tasks):
        ok = [t for t in tasks.values() if fresh[j] and t.status == TaskStatus.RUNNING and _evictable(t.pod, policy)]
        for t in ok:
            requests[t.uid] = t.resreq[rows]
        candidates.append(eviction_order(ok) if ok else ok)
    thresholds = Thresholds(np.array(policy.thresholds), np.array(policy.target_thresholds))
    schedulable = ~nodes.unschedulable & fresh
    victims = low_node_utilization(util, alloc, schedulable, candidates, requests, thresholds)
    if not victims:
        return []
    ssn = open_session(state, load_conf(_CONF, source="descheduler"), now)
    try:
        pdb, gang = ssn.plugins["pdb"], ssn.plugins["gang"]
        assert isinstance(pdb, PdbPlugin) and isinstance(gang, GangPlugin)
        while victims:
            kept = pdb.keep_budgets(victims)
            in_gang = [t for t in kept if _gang(t)]
            may_go = {id(t) for t in gang.victims(in_gang[0], in_gang)[0]} if in_gang else set()
            allowed = {id(t) for t in kept if not _gang(t) or id(t) in may_go}
            refused = {id(t) for t in victims if id(t) not in allowed}
            if not refused:
                break
            candidates = [[t for t in c if id(t) not in refused] for c in candidates]
            victims = low_node_utilization(util, alloc, schedulable, candidates, requests, thresholds)
        return [(t.key, nodes.names[t.node]) for t in victims]
    finally:
        ssn.dispose()


def _gang(task: Any) -> bool:
    """A gang: a job that needs at least two pods together (a job of minAvailable 1 is a set of single
    pods, each free to move, as older Volcano's gang plugin let ``MinAvailable == 1`` jobs be preempted)."""
    return task.job is not None and task.job.min_available > 1


def _evictable(pod: Mapping[str, Any], policy: DeschedulerPolicy) -> bool:
    """The DefaultEvictor's rules (see the module doc)."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") or (meta.get("namespace") or "default") in policy.excluded_namespaces:
        return False
    if any(ref.get("kind") == "DaemonSet" for ref in meta.get("ownerReferences") or []):
        return False
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    priority = (pod.get("spec") or {}).get("priority")
    return priority is None or int(priority) < min(policy.priority_threshold, SYSTEM_CRITICAL)


class Descheduler:
    """Evicts pods from overutilized nodes every ``policy.interval`` (clock seconds); ``sync()`` when due."""

    def __init__(self, store: Store, clock: Clock, source: MetricsSource, policy: DeschedulerPolicy | None = None,
                 *, events: EventRecorder | None = None, scheduler_names: Iterable[str] = ("volcano",)) -> None:
        self.store = store
        self.clock = clock
        self.source = source
        self.policy = policy or DeschedulerPolicy()
        self.recorder = events if events is not None else EventRecorder(store, "descheduler", clock=clock)
        self.scheduler_names = tuple(scheduler_names)
        self._last = -math.inf
        #: every pod evicted so far (``namespace/name``), in order
        self.evicted: list[str] = []

    def next_wakeup(self) -> float:
        return self._last + self.policy.interval

    def sync(self) -> bool:
        """Run once if the interval has passed; True if anything was evicted."""
        now = self.clock.now()
        if now < self.next_wakeup():
            return False
        self._last = now
        return bool(self.run_once())

    def _objects(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for resource in _READ:
            with contextlib.suppress(StoreError):  # a server without PDBs or PodGroups: none of them
                out += self.store.list(resource, copy=False)[0]
        return out

    def plan(self, now: float, metrics: Mapping[str, NodeMetrics]) -> list[tuple[str, str]]:
        """The (pod key, node) to evict now, given these metrics (nothing is written)."""
        return choose(self._objects(), now, metrics, self.policy, self.scheduler_names)

    def run_once(self) -> list[str]:
        """Measure, choose and evict; the pods evicted (``namespace/name``)."""
        now = self.clock.now()
        metrics = self.source.node_metrics(now)
        if not metrics:
            log.info("descheduler: no node metrics: nothing to do")
            return []
        done: list[str] = []
        pods = {f"{(p.get('metadata') or {}).get('namespace') or 'default'}/{p['metadata']['name']}": p
                for p in self.store.list("pods", copy=False)[0]}
        for key, node in self.plan(now, metrics):
            ns, name = key.split("/", 1)
            m = metrics.get(node)
            try:
                self.store.delete("pods", ns, name, copy=False)
            except StoreError as err:
                log.info("descheduler: %s not evicted: %s", key, err)
                continue
            done.append(key)
            pod = pods.get(key)
            if pod is not None and m is not None:
                self.recorder.event(pod, "Normal", "Descheduled",
                                    f"pod evicted from {node} node by the load-aware descheduler (node usage cpu "
                                    f"{m.cpu / 1000:.2f} cores, memory {m.memory / 2**30:.2f}Gi)")
        if done:
            log.info("descheduler: evicted %d pod(s): %s", len(done), ", ".join(done))
        self.evicted += done
        return done
