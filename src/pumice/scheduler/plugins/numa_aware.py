"""numa-aware: Guaranteed pods get whole CPUs aligned to NUMA nodes as the node's kubelet will give them
(Volcano's ``numa-aware`` plugin).

Nodes publish their NUMA layout and free CPUs as ``Numatopology`` objects (``nodeinfo.volcano.sh/v1alpha1``,
named after the node: Volcano's resource exporter; the simulated kubelet in pumice). For a Guaranteed pod:

* PredicateFn — a pod whose topology policy (``volcano.sh/numa-topology-policy``, from the Job task's
  ``topologyPolicy``) is not ``none`` fits only nodes that publish a Numatopology, whose CPU manager policy is
  ``static`` and whose topology manager policy equals the pod's; a pod without one is checked on the nodes
  whose CPU manager is ``static`` and whose topology manager policy is not ``none``. There the node's policy
  must be able to give each container its whole CPUs (``single-numa-node``: on one NUMA node;
  ``restricted``: on as few NUMA nodes as the request could ever need; ``best-effort``: preferred only), and
  the CPU set is computed (``pumice.api.numa``).
* BatchNodeOrderFn — fewer NUMA nodes spanned by that CPU set scores higher (normalized to 0..100,
  reversed), times ``weight`` (default 1); only for pods with a policy.

When a pod is placed, its CPUs are taken from the node's free set for the rest of the session and sent with
the bind as the ``pumice.io/cpuset`` annotation; until the node's Numatopology lists the pod in
``podAllocations``, later sessions keep those CPUs taken (Volcano's cache keeps them as "unassigned NUMA
pods"). The simulated kubelet honours the annotation when it can.

Columnar where it is over nodes: the policy checks are masks over all nodes; the NUMA search itself runs per
candidate node that declares NUMA and passed the masks, and only again on a node whose free CPUs changed since
(per request: columns of "fits" and "NUMA nodes spanned" over all nodes, refreshed from a per-node version),
never over nodes without a Numatopology; the score reads those columns.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from pumice.api.arguments import Arguments
from pumice.api.numa import (
    CPU_MANAGER_POLICY,
    CPUSET_ANNOTATION,
    POLICY_ANNOTATION,
    TOPOLOGY_MANAGER_POLICY,
    CpuTopology,
    assign_pod,
    format_cpuset,
    parse_cpuset,
    pod_containers,
    qos_class,
)
from pumice.api.quantity import milli_value
from pumice.scheduler.framework.placement import GroupTerms
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import BATCH_NODE_ORDER, PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import ALLOCATED_STATUS, TaskInfo

log = logging.getLogger(__name__)

MAX_NODE_SCORE = 100
_NO_POLICY = ("", "none")


@dataclass(slots=True)
class _NodeNuma:
    """One node's topology and the CPUs still free in this session."""

    topo: CpuTopology
    free: frozenset[int]
    reserved: frozenset[int]


@dataclass(slots=True)
class _Answers:
    """One request's answers per node, valid where ``seen`` equals the node's version."""

    seen: np.ndarray
    fits: np.ndarray
    #: NUMA nodes its CPUs span (0: none given)
    spans: np.ndarray
    cpus: dict[int, frozenset[int] | None]


@dataclass(frozen=True, slots=True)
class _Ask:
    """What a task asks of NUMA: its policy and (container, whole CPUs)."""

    policy: str
    containers: tuple[tuple[str, int], ...]


class NumaAwarePlugin(Plugin):
    name = "numa-aware"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int("weight", 1)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        n = len(ssn.nodes)
        self.numa: dict[int, _NodeNuma] = {}
        self.has_topo = np.zeros(n, dtype=bool)
        self.static = np.zeros(n, dtype=bool)
        self.tm_policy = np.full(n, "", dtype=object)
        allocated: dict[int, set[str]] = {}
        topologies: dict[tuple[tuple[int, tuple[int, int, int]], ...], CpuTopology] = {}
        for obj in ssn.state.numatopologies:
            meta = obj.get("metadata") or {}
            j = ssn.nodes.index.get(str(meta.get("name")))
            if j is None:
                continue
            spec = obj.get("spec") or {}
            try:
                topo = CpuTopology.from_spec(spec.get("cpuDetail") or {})
                # nodes of one make share one topology object: searches on equal free CPUs are shared
                topo = topologies.setdefault(tuple(sorted(topo.detail.items())), topo)
                cpu = (spec.get("numares") or {}).get("cpu") or {}
                free = parse_cpuset(cpu.get("allocatable") or "")
                reserved = topo.reserved(_milli((spec.get("resReserved") or {}).get("cpu")))
            except (ValueError, TypeError, AttributeError) as err:
                log.warning("Numatopology %s: %s; the node is taken as publishing none", meta.get("name"), err)
                continue
            policies = spec.get("policies") or {}
            self.has_topo[j] = True
            self.static[j] = policies.get(CPU_MANAGER_POLICY) == "static"
            self.tm_policy[j] = str(policies.get(TOPOLOGY_MANAGER_POLICY) or "")
            self.numa[j] = _NodeNuma(topo, free, reserved)
            allocated[j] = {key for a in spec.get("podAllocations") or []
                            for key in (str(a.get("uid") or ""), f"{a.get('namespace')}/{a.get('name')}")}
        # pods bound with a CPU set the node has not reported yet keep it taken (Volcano's UnassignedNumaPods)
        for j, node in self.numa.items():
            for t in ssn.nodes.tasks[j].values():
                text = ((t.pod.get("metadata") or {}).get("annotations") or {}).get(CPUSET_ANNOTATION)
                if text and t.status & ALLOCATED_STATUS and t.uid not in allocated[j] and t.key not in allocated[j]:
                    try:
                        node.free = node.free - parse_cpuset(text)
                    except ValueError:
                        continue
        self.checked = self.has_topo & self.static & ~np.isin(self.tm_policy, _NO_POLICY)
        self.any_checked = bool(self.checked.any())
        #: nodes with free CPUs (Volcano: "cpu allocatable map is empty" otherwise)
        self.any_free = np.zeros(n, dtype=bool)
        for j, numa in self.numa.items():
            self.any_free[j] = bool(numa.free)
        self.inputs = tuple((j, self.tm_policy[j], bool(self.static[j]), numa.free, numa.reserved)
                            for j, numa in sorted(self.numa.items()))
        self.asks: dict[str, _Ask | None] = {}
        #: per node, bumped whenever its free CPUs change
        self.version = np.zeros(n, dtype=np.int64)
        #: per request: its answers on each node (see ``_Answers``)
        self.answers: dict[_Ask, _Answers] = {}
        #: (topology, policy, request) -> available CPUs -> (CPUs given or None, NUMA nodes they span): this
        #: session's searches (the topologies live as long as the session)
        self.searched: dict[tuple[int, str, _Ask], dict[frozenset[int], tuple[frozenset[int] | None, int]]] = {}
        #: pod key -> (node, CPUs) of what this session placed
        self.held: dict[str, tuple[int, frozenset[int]]] = {}
        ssn.add(PREDICATE, self.name, self)
        ssn.add(BATCH_NODE_ORDER, self.name, self.batch_score)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    # --- what a task asks ------------------------------------------------------------------------------------
    def ask(self, task: TaskInfo) -> _Ask | None:
        """None for a pod this plugin leaves alone (not Guaranteed)."""
        if task.key in self.asks:
            return self.asks[task.key]
        pod = task.pod
        ask = None
        policy = str(((pod.get("metadata") or {}).get("annotations") or {}).get(POLICY_ANNOTATION, ""))
        # without a policy only nodes that check every Guaranteed pod matter: no QoS reading when none does
        if (policy not in _NO_POLICY or self.any_checked) and qos_class(pod) == "Guaranteed":
            ask = _Ask(policy, tuple(pod_containers(pod)))
        self.asks[task.key] = ask
        return ask

    def _applies(self, ask: _Ask | None) -> bool:
        return ask is not None and (ask.policy not in _NO_POLICY or self.any_checked)

    def refresh(self, ask: _Ask, nodes: np.ndarray) -> _Answers:
        """The request's answers, searched again on those of ``nodes`` whose free CPUs changed since (a node
        given twice may be searched twice: harmless)."""
        ans = self.answers.get(ask)
        if ans is None:
            n = len(self.version)
            ans = self.answers[ask] = _Answers(np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool),
                                               np.zeros(n, dtype=np.int64), {})
        stale = nodes[ans.seen[nodes] != self.version[nodes]]
        for j in stale.tolist():
            node = self.numa[j]
            found = self._search(j, ask, node.free - node.reserved)
            ans.cpus[j] = found[0]
            ans.fits[j] = found[0] is not None
            ans.spans[j] = found[1]
            ans.seen[j] = self.version[j]
        return ans

    def assignment(self, j: int, ask: _Ask) -> frozenset[int] | None:
        """The CPUs the node's policy gives the task on node ``j`` now, or None if it cannot."""
        return self.refresh(ask, np.array([j])).cpus[j]

    # --- NodeFilter ------------------------------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        return []  # Numatopologies change without the node table: everything is checked per session

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        ask = self.ask(task)
        if not self._applies(ask):
            return []
        assert ask is not None
        idx = view.idx
        checks: list[tuple[str, np.ndarray]] = []
        fits = np.ones(len(idx), dtype=bool)
        if ask.policy in _NO_POLICY:
            search = self.checked[idx]
        else:
            has = self.has_topo[idx]
            static = self.static[idx]
            same = self.tm_policy[idx] == ask.policy
            free = self.any_free[idx]
            # rows of a ladder hold replicas placed before this one (replica_safe): their CPUs are taken first
            levels = view.task_count - self.ssn.nodes.task_count[idx]
            later = np.flatnonzero(levels > 0)
            for r in later[(has & static & same)[later]].tolist():
                free[r], fits[r] = self._after(int(idx[r]), ask, int(levels[r]))
            checks += [("numa info is empty", has), ("cpu manager policy isn't static", static),
                       (f"task topology policy[{ask.policy}] is different with node's", same),
                       ("cpu allocatable map is empty", free)]
            search = has & static & same & free
            search[later] = False
        if search.any():
            nodes = idx[search]
            fits[search] = self.refresh(ask, nodes).fits[nodes]
        checks.append(("container cannot be assigned by numa", fits))
        return checks

    def _search(self, j: int, ask: _Ask, available: frozenset[int],
                done: dict[frozenset[int], tuple[frozenset[int] | None, int]] | None = None
                ) -> tuple[frozenset[int] | None, int]:
        """The CPUs node ``j``'s policy gives the request out of ``available`` (None: it cannot), and the NUMA
        nodes they span. The search depends on the topology, the policy, the CPUs and the request only: kept in
        ``done`` (:meth:`_searches`), shared by the nodes of one topology."""
        if done is None:
            done = self._searches(j, ask)
        found = done.get(available)
        if found is None:
            topo = self.numa[j].topo
            cpus, _ = assign_pod(topo, str(self.tm_policy[j]), available, list(ask.containers))
            found = done[available] = (cpus, topo.numa_count(cpus) if cpus else 0)
        return found

    def _searches(self, j: int, ask: _Ask) -> dict[frozenset[int], tuple[frozenset[int] | None, int]]:
        """The searches done for the request on node ``j``'s topology and policy, by available CPUs."""
        key = (id(self.numa[j].topo), str(self.tm_policy[j]), ask)
        found = self.searched.get(key)
        if found is None:
            found = self.searched[key] = {}
        return found

    def _after(self, j: int, ask: _Ask, level: int) -> tuple[bool, bool]:
        """(some CPU free, the request fits) on node ``j`` once ``level`` more replicas of ``ask`` took their
        CPUs there, each as :meth:`on_allocate` would take them."""
        node = self.numa[j]
        done = self._searches(j, ask)
        free = node.free
        for _ in range(level):
            cpus, _ = self._search(j, ask, free - node.reserved, done)
            if cpus is None or not free:
                return bool(free), False
            free = free - cpus
        if not free:
            return False, False
        return True, self._search(j, ask, free - node.reserved, done)[0] is not None

    def replica_safe(self, task: TaskInfo) -> bool:
        """The answer on a node reads that node's free CPUs, which change only with placements there (rows
        are refreshed from the node change log); the hypothetical rows of a ladder take the CPUs of the
        replicas they hold first (:meth:`_after`): safe for a pod with a policy."""
        ask = self.ask(task)
        return not self._applies(ask) or (ask is not None and ask.policy not in _NO_POLICY and self.weight != 0)

    def placement_inputs(self) -> object:
        """What placement caches kept across sessions depend on beyond the node table: each NUMA node's
        policies and free CPUs at session open (a Numatopology changes without the Node)."""
        return self.inputs

    # --- GroupTermsOffer --------------------------------------------------------------------------------------
    def terms_key(self, task: TaskInfo) -> object:
        """``single-numa-node`` with at most one container asking for whole CPUs: every node that fits gives
        them on one NUMA node (or gives none), so the score is one number for all candidates: a term of a
        single group, and replicas may share a ladder."""
        ask = self.ask(task)
        if ask is None or ask.policy != "single-numa-node" or not self.weight:
            return None
        asking = sum(1 for _, cpus in ask.containers if cpus > 0)
        if asking > 1:
            return None
        return ("numa-aware", 0.0 if asking else float(MAX_NODE_SCORE * self.weight))

    def group_terms(self, task: TaskInfo) -> GroupTerms | None:
        key = self.terms_key(task)
        if key is None:
            return None
        assert isinstance(key, tuple)
        term = np.array([key[1]])
        return GroupTerms(np.zeros(len(self.version), dtype=np.int64), lambda: term, key=key,
                          terms_of=lambda groups: [key[1]] * len(groups), rise=lambda: 0.0, constant=True)

    # --- BatchNodeOrderFn ------------------------------------------------------------------------------------
    def batch_score(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        ask = self.ask(task)
        if ask is None or ask.policy in _NO_POLICY or not self.weight:
            return None
        counts = np.zeros(len(idx), dtype=np.int64)
        has = self.has_topo[idx]
        if has.any():
            nodes = idx[has]
            counts[has] = self.refresh(ask, nodes).spans[nodes]
        top = int(counts.max(initial=0))
        if top == 0:
            scores = np.full(len(idx), MAX_NODE_SCORE, dtype=np.int64)
        else:
            scores = MAX_NODE_SCORE - MAX_NODE_SCORE * counts // top
        out: np.ndarray = (scores * self.weight).astype(float)
        return out

    # --- events ----------------------------------------------------------------------------------------------
    def on_allocate(self, task: TaskInfo) -> None:
        j = task.node
        ask = self.ask(task)
        if j not in self.numa or ask is None or task.key in self.held:
            return
        if ask.policy in _NO_POLICY and not self.checked[j]:
            return
        if ask.policy not in _NO_POLICY and not (self.static[j] and self.tm_policy[j] == ask.policy):
            return
        cpus = self.assignment(j, ask)
        if not cpus:
            return
        node = self.numa[j]
        node.free = node.free - cpus
        self.version[j] += 1
        self.any_free[j] = bool(node.free)
        self.held[task.key] = (j, cpus)
        self.ssn.bind_annotations.setdefault(task.key, {})[CPUSET_ANNOTATION] = format_cpuset(cpus)

    def on_deallocate(self, task: TaskInfo) -> None:
        held = self.held.pop(task.key, None)
        if held is None:
            return
        j, cpus = held
        node = self.numa[j]
        node.free = node.free | cpus
        self.version[j] += 1
        self.any_free[j] = bool(node.free)
        notes = self.ssn.bind_annotations.get(task.key)
        if notes is not None:
            notes.pop(CPUSET_ANNOTATION, None)
            if not notes:
                del self.ssn.bind_annotations[task.key]


def _milli(value: Any) -> int:
    return 0 if value is None else milli_value(value)
