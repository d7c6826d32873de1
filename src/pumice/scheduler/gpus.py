"""Every GPU of every node as a slot in (nodes x GPUs) arrays (what a pod asks of them: ``pumice.api.gpus``).

The GPUs a placed pod holds are its ``gpu_ids`` (from Volcano's ``volcano.sh/gpu-index`` / ``vgpu-ids-new``
annotations once bound, chosen by :meth:`GpuSlots.choose` when the scheduler places it). Feasibility is
columnar: one NumPy expression over the candidate nodes' slots.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pumice.api.gpus import (
    BIND_PHASE,
    FAMILY_NAMES,
    GPU_INDEX,
    GPU_MEMORY,
    GPU_MILLI,
    GPU_NUMBER,
    GPUSHARE,
    MILLI,
    MILLI_PER_GPU,
    MODEL_LABELS,
    NONE,
    NOUSE_GPU_TYPE,
    NVIDIA_GPU,
    PREDICATE_TIME,
    UNHEALTHY_IDS,
    USE_GPU_TYPE,
    VGPU,
    VGPU_CORES,
    VGPU_IDS,
    VGPU_MEMORY,
    VGPU_NODE,
    VGPU_NUMBER,
    VGPU_PERCENT,
    VGPU_REGISTER,
    GpuRequest,
    VgpuAsk,
    assigned_ids,
    assigned_vgpu,
    gpu_request,
    node_gpus,
)

__all__ = [
    "BIND_PHASE", "FAMILY_NAMES", "GPUSHARE", "GPU_INDEX", "GPU_MEMORY", "GPU_MILLI", "GPU_NUMBER", "MILLI",
    "MILLI_PER_GPU", "MODEL_LABELS", "NONE", "NOUSE_GPU_TYPE", "NVIDIA_GPU", "PREDICATE_TIME",
    "UNHEALTHY_IDS", "USE_GPU_TYPE", "VGPU", "VGPU_CORES", "VGPU_IDS", "VGPU_MEMORY", "VGPU_NODE",
    "VGPU_NUMBER", "VGPU_PERCENT", "VGPU_REGISTER", "GpuRequest", "GpuSlots", "VgpuAsk", "assigned_ids",
    "assigned_vgpu", "gpu_request", "node_gpus",
]


class GpuSlots:
    """Every GPU of every node: arrays of shape (nodes, most GPUs on a node)."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        parsed = [node_gpus(nd) for nd in nodes]
        n = len(nodes)
        width = max((len(g) for _, g in parsed), default=0)
        self.family = np.array([f for f, _ in parsed], dtype=np.int8)
        self.capacity = np.zeros((n, width))
        self.used = np.zeros((n, width))
        self.cores = np.zeros((n, width))
        self.sharers = np.zeros((n, width))
        self.split = np.zeros((n, width))
        self.healthy = np.zeros((n, width), dtype=bool)
        #: Upper-case GPU model/type per slot ("" unknown); the uuids of vGPU cards.
        self.types: list[list[str]] = []
        self.uuids: list[list[str]] = []
        for j, (_, gpus) in enumerate(parsed):
            for g, (cap, split, _, _, healthy) in enumerate(gpus):
                self.capacity[j, g] = cap
                self.split[j, g] = split
                self.healthy[j, g] = healthy
            self.types.append([t.upper() for _, _, _, t, _ in gpus])
            self.uuids.append([u for _, _, u, _, _ in gpus])
        self.width = width
        self.valid = self.healthy & (self.capacity > 0)
        #: ``valid`` as Python lists, one per node: choosing a pod's whole GPUs reads a node's few slots
        #: (a NumPy expression on eight values costs more than the loop)
        self.valid_rows: list[list[bool]] = self.valid.tolist()
        #: How many placed pods hold each (share, whole) request shape: the running mix.
        self.mix: Counter[tuple[float, int]] = Counter()
        #: Σ CPU (milli) of those pods, per shape.
        self.mix_cpu: dict[tuple[float, int], float] = {}
        #: How the GPUs of a node are chosen for a new placement: ``first`` (Volcano's gpushare: lowest
        #: index that fits), ``binpack`` (the fullest that fits), ``spread`` (the least shared).
        self.policy = "first"
        self._type_masks: dict[tuple[tuple[str, ...], tuple[str, ...]], np.ndarray] = {}

    @property
    def any(self) -> bool:
        return self.width > 0

    def free(self, idx: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.where(self.valid[idx], self.capacity[idx] - self.used[idx], 0.0)
        return out

    def type_mask(self, req: GpuRequest) -> np.ndarray:
        """Slots whose model the request's ``use-gputype`` / ``nouse-gputype`` allow (all nodes)."""
        key = (req.use, req.nouse)
        found = self._type_masks.get(key)
        if found is None:
            found = np.ones(self.valid.shape, dtype=bool)
            for j, types in enumerate(self.types):
                for g, t in enumerate(types):
                    if req.use:
                        found[j, g] = any(u in t for u in req.use)
                    elif req.nouse:
                        found[j, g] = not any(u in t for u in req.nouse)
            self._type_masks[key] = found
        return found

    def usable(self, req: GpuRequest, rows: Any) -> np.ndarray:
        """The healthy slots of node(s) ``rows`` whose model the request allows (read-only: may be a view)."""
        valid: np.ndarray = self.valid[rows]
        return valid & self.type_mask(req)[rows] if req.use or req.nouse else valid

    # --- feasibility (columnar) ---------------------------------------------------------------
    def fits(self, req: GpuRequest, idx: np.ndarray, extra_whole: np.ndarray | None = None) -> np.ndarray:
        """Per node of ``idx``: can its GPUs hold the request now? ``extra_whole``: whole GPUs the rows of
        a hypothetical view hold beyond the real ones (replicas a ladder stacks on a node)."""
        ok = self.usable(req, idx)
        family = self.family[idx] == req.family
        out: np.ndarray
        if req.family == VGPU:
            out = family & self._vgpu_fits(req, idx, ok)
        elif req.whole:
            idle = (ok & (self.sharers[idx] == 0)).sum(axis=1)
            if extra_whole is not None:
                idle = idle - extra_whole
            out = family & (idle >= req.whole)
        else:
            room = self.capacity[idx] - self.used[idx]
            out = family & (ok & (room >= req.share)).any(axis=1)
        return out

    def _vgpu_cards(self, ask: VgpuAsk, idx: np.ndarray, ok: np.ndarray) -> np.ndarray:
        cap = self.capacity[idx]
        need = np.floor(cap * ask.percent / 100.0) if ask.percent != 101 else np.full(cap.shape, float(ask.memory))
        cores = self.cores[idx]
        card = ok & (self.sharers[idx] < self.split[idx]) & (cap - self.used[idx] >= need)
        card &= cores + ask.cores <= 100
        if ask.cores == 100:
            card &= self.sharers[idx] == 0
        if ask.cores == 0:
            card &= cores < 100
        out: np.ndarray = card
        return out

    def _vgpu_fits(self, req: GpuRequest, idx: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """Each container on its own, columnar; a pod of several vGPU containers is then walked container
        after container on the nodes that passed (Volcano's tentative allocation)."""
        out = np.ones(len(idx), dtype=bool)
        for ask in req.vgpu:
            out &= self._vgpu_cards(ask, idx, ok).sum(axis=1) >= ask.nums
        if len(req.vgpu) > 1:  # containers share the cards: the exact walk on the nodes left
            for i in np.flatnonzero(out).tolist():
                out[i] = self._choose_vgpu(req, int(idx[i]), ok[i]) is not None
        return out

    # --- placement -----------------------------------------------------------------------------
    def _order(self, j: int, room: np.ndarray) -> list[int]:
        gs = range(self.width)
        if self.policy == "binpack":
            return sorted(gs, key=lambda g: (room[g], g))
        if self.policy == "spread":
            return sorted(gs, key=lambda g: (self.sharers[j, g], g))
        return list(gs)

    def choose(self, req: GpuRequest, j: int) -> tuple[int, ...] | None:
        """The GPUs of node ``j`` a new placement of ``req`` takes, or None when they cannot hold it."""
        if self.family[j] != req.family:
            return None
        if req.whole and req.family != VGPU:  # the first idle GPUs, in slot order
            ok = self.valid_rows[j] if not (req.use or req.nouse) else self.usable(req, j).tolist()
            sharers = self.sharers[j].tolist()
            idle: list[int] = []
            for g in range(self.width):
                if ok[g] and sharers[g] == 0:
                    idle.append(g)
                    if len(idle) == req.whole:
                        return tuple(idle)
            return None
        ok = self.usable(req, j)
        if req.family == VGPU:
            return self._choose_vgpu(req, j, ok)
        room = self.capacity[j] - self.used[j]
        for g in self._order(j, np.where(ok, room, np.inf)):
            if ok[g] and room[g] >= req.share:
                return (g,)
        return None

    def _choose_vgpu(self, req: GpuRequest, j: int, ok: np.ndarray) -> tuple[int, ...] | None:
        """Containers one after the other, each on cards still free after the ones before (Volcano)."""
        used, cores, sharers = self.used[j].copy(), self.cores[j].copy(), self.sharers[j].copy()
        chosen: list[int] = []
        cap = self.capacity[j]
        for ask in req.vgpu:
            got = 0
            order = (sorted(range(self.width), key=lambda g: (-used[g], g)) if self.policy == "binpack"
                     else sorted(range(self.width), key=lambda g: (sharers[g], g)) if self.policy == "spread"
                     else list(range(self.width - 1, -1, -1)))
            for g in order:
                need = math.floor(cap[g] * ask.percent / 100.0) if ask.percent != 101 else ask.memory
                if not ok[g] or sharers[g] >= self.split[j, g] or cap[g] - used[g] < need:
                    continue
                if cores[g] + ask.cores > 100 or (ask.cores == 100 and sharers[g] > 0) or (
                        cores[g] == 100 and ask.cores == 0):
                    continue
                used[g] += need
                cores[g] += ask.cores
                sharers[g] += 1
                chosen.append(g)
                got += 1
                if got == ask.nums:
                    break
            if got < ask.nums:
                return None
        return tuple(chosen)

    def amounts(self, req: GpuRequest, j: int, ids: tuple[int, ...]) -> list[tuple[int, float, float]]:
        """(slot, memory, cores) each GPU of ``ids`` takes for ``req`` on node ``j``."""
        if req.family == VGPU:
            out = []
            k = 0
            for ask in req.vgpu:
                for _ in range(ask.nums):
                    if k >= len(ids):
                        break
                    g = ids[k]
                    mem = (math.floor(self.capacity[j, g] * ask.percent / 100.0) if ask.percent != 101
                           else ask.memory)
                    out.append((g, float(mem), float(ask.cores)))
                    k += 1
            return out
        if req.whole:
            return [(g, float(self.capacity[j, g]), 100.0) for g in ids]
        return [(g, req.share, 0.0) for g in ids]

    def add(self, j: int, req: GpuRequest, ids: tuple[int, ...], cpu: float = 0.0) -> None:
        if req.whole and req.family != VGPU:  # amounts(), inline: once per placed GPU pod
            for g in ids:
                if 0 <= g < self.width:
                    self.used[j, g] += self.capacity[j, g]
                    self.cores[j, g] += 100.0
                    self.sharers[j, g] += 1
        else:
            for g, mem, core in self.amounts(req, j, ids):
                if 0 <= g < self.width:
                    self.used[j, g] += mem
                    self.cores[j, g] += core
                    self.sharers[j, g] += 1
        kind = req.kind
        self.mix[kind] += 1
        self.mix_cpu[kind] = self.mix_cpu.get(kind, 0.0) + cpu

    def remove(self, j: int, req: GpuRequest, ids: tuple[int, ...], cpu: float = 0.0) -> None:
        for g, mem, cores in self.amounts(req, j, ids):
            if 0 <= g < self.width:
                self.used[j, g] -= mem
                self.cores[j, g] -= cores
                self.sharers[j, g] -= 1
        self.mix[req.kind] -= 1
        self.mix_cpu[req.kind] = self.mix_cpu.get(req.kind, 0.0) - cpu
        if self.mix[req.kind] <= 0:
            del self.mix[req.kind]
            self.mix_cpu.pop(req.kind, None)

    def vgpu_ids_of(self, j: int, devices: list[tuple[str, int, int]]) -> tuple[int, ...]:
        uuids = self.uuids[j] if j < len(self.uuids) else []
        return tuple(uuids.index(u) for u, _, _ in devices if u in uuids)

    def annotations(self, req: GpuRequest, j: int, ids: tuple[int, ...], node: str, now: float) -> dict[str, str]:
        """Volcano's assignment annotations for a placement (written on the pod before its bind)."""
        stamp = str(int(now * 1e9))
        if req.family == VGPU:
            per_container = []
            k = 0
            amounts = self.amounts(req, j, ids)
            for ask in req.vgpu:
                devs = amounts[k : k + ask.nums]
                k += ask.nums
                per_container.append("".join(f"{self.uuids[j][g]},NVIDIA,{int(m)},{int(c)}:" for g, m, c in devs))
            text = ";".join(per_container) + ";"
            return {VGPU_IDS: text, "volcano.sh/devices-to-allocate": text, VGPU_NODE: node,
                    "volcano.sh/vgpu-time": str(int(now)), BIND_PHASE: "allocating"}
        return {PREDICATE_TIME: stamp, GPU_INDEX: ",".join(str(g) for g in ids)}
