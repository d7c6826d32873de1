"""GPUs one by one: what a node publishes of each of its GPUs, and what a pod asks of them.

Three ways a node publishes its GPUs, each with the pod requests that go with it:

- *milli* (pumice, the openb trace, kube's device plugin): ``nvidia.com/gpu`` N whole GPUs of 1000 milli
  each. A pod asks ``nvidia.com/gpu`` (whole GPUs) or ``pumice.io/gpu-milli`` below 1000 (a share of one GPU).
- *gpushare* (Volcano's ``deviceshare.GPUSharingEnable`` / ``GPUNumberEnable``): capacity
  ``volcano.sh/gpu-memory`` over ``volcano.sh/gpu-number`` cards; a pod's limits ask
  ``volcano.sh/gpu-memory`` (on one card) or ``volcano.sh/gpu-number`` (idle cards).
- *vgpu* (Volcano's HAMi vGPU, ``deviceshare.VGPUEnable``): node annotation ``volcano.sh/node-vgpu-register``
  (per card: uuid, split count, memory MiB, type, health, mode); limits ``volcano.sh/vgpu-number``,
  ``vgpu-memory``, ``vgpu-memory-percentage``, ``vgpu-cores``.

This module reads them (wire format in, plain values out); the scheduler keeps the slots
(``pumice.scheduler.gpus``) and the simulated kubelet accounts what runs on each GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pumice.api.quantity import int_value, milli_value

NVIDIA_GPU = "nvidia.com/gpu"
GPU_MILLI = "pumice.io/gpu-milli"
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
UNHEALTHY_IDS = "volcano.sh/gpu-unhealthy-ids"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_PERCENT = "volcano.sh/vgpu-memory-percentage"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
VGPU_NODE = "volcano.sh/vgpu-node"
BIND_PHASE = "volcano.sh/bind-phase"
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
#: Node labels naming the GPU model (the first one present wins).
MODEL_LABELS = ("nvidia.com/gpu.product", "pumice.io/gpu-model")
MILLI_PER_GPU = 1000.0

NONE, MILLI, GPUSHARE, VGPU = 0, 1, 2, 3
FAMILY_NAMES = {MILLI: "GPU", GPUSHARE: "GpuShare", VGPU: "vGPU"}


@dataclass(frozen=True, slots=True)
class VgpuAsk:
    """One container's vGPU request (Volcano's ContainerDeviceRequest)."""

    nums: int
    memory: int
    #: Percentage of each card's memory; 101: not given (the memory in MiB counts).
    percent: int
    cores: int


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a pod asks of a node's GPUs."""

    family: int
    #: Per-GPU amount of a share (milli, or MiB for gpushare); 0 for whole GPUs.
    share: float
    #: Whole (idle) GPUs asked.
    whole: int
    vgpu: tuple[VgpuAsk, ...] = ()
    #: ``nvidia.com/use-gputype`` / ``nouse-gputype``: GPU models allowed / refused (upper case).
    use: tuple[str, ...] = ()
    nouse: tuple[str, ...] = ()

    @property
    def kind(self) -> tuple[float, int]:
        """(share, whole): the shape of the request for fragmentation statistics."""
        return (self.share, self.whole)


def _qty(value: Any) -> int:
    try:
        return int(int_value(value))
    except (ValueError, TypeError):
        return 0


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get("containers") or [])


def _types(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip().upper() for t in (text or "").split(",") if t.strip())


def gpu_request(pod: dict[str, Any]) -> GpuRequest | None:
    """The pod's GPU request, or None when it asks for no GPU."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    use, nouse = _types(ann.get(USE_GPU_TYPE)), _types(ann.get(NOUSE_GPU_TYPE))
    containers = _containers(pod)
    limits = [((c.get("resources") or {}).get("limits") or {}) for c in containers]
    requests = [((c.get("resources") or {}).get("requests") or {}) for c in containers]
    asks: list[VgpuAsk] = []
    for lim, req in zip(limits, requests, strict=True):
        if VGPU_NUMBER in lim or VGPU_MEMORY in lim:
            nums = _qty(lim[VGPU_NUMBER]) if VGPU_NUMBER in lim else 1
            mem = _qty(lim.get(VGPU_MEMORY, req.get(VGPU_MEMORY, 0)))
            pct = _qty(lim.get(VGPU_PERCENT, req.get(VGPU_PERCENT, 101)))
            if pct == 101 and mem == 0:
                pct = 100
            asks.append(VgpuAsk(nums, mem, pct, _qty(lim.get(VGPU_CORES, req.get(VGPU_CORES, 0)))))
    if asks:
        return GpuRequest(VGPU, 0.0, 0, tuple(asks), use, nouse)
    memory = sum(_qty(lim.get(GPU_MEMORY, 0)) for lim in limits)
    if memory > 0:
        return GpuRequest(GPUSHARE, float(memory), 0, (), use, nouse)
    number = sum(_qty(lim.get(GPU_NUMBER, 0)) for lim in limits)
    if number > 0:
        return GpuRequest(GPUSHARE, 0.0, number, (), use, nouse)
    whole = sum(float(milli_value(r[NVIDIA_GPU])) for r in requests if NVIDIA_GPU in r) / 1000.0
    if whole > 0:
        return GpuRequest(MILLI, 0.0, math.ceil(whole), (), use, nouse)
    milli = sum(float(milli_value(r[GPU_MILLI])) / 1000.0 for r in requests if GPU_MILLI in r)
    if milli <= 0:
        return None
    if milli >= MILLI_PER_GPU:
        return GpuRequest(MILLI, 0.0, math.ceil(milli / MILLI_PER_GPU), (), use, nouse)
    return GpuRequest(MILLI, milli, 0, (), use, nouse)


def assigned_ids(pod: dict[str, Any]) -> tuple[int, ...] | None:
    """The GPU indices a bound pod's annotations give it (``volcano.sh/gpu-index``), or None."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(GPU_INDEX)
    if not text:
        return None
    try:
        return tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        return None


def assigned_vgpu(pod: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(uuid, memory, cores) per device of ``volcano.sh/vgpu-ids-new`` (all containers)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(VGPU_IDS) or ""
    out = []
    for container in str(text).split(";"):
        for dev in container.split(":"):
            parts = dev.split(",")
            if len(parts) >= 4 and parts[0]:
                out.append((parts[0], _qty(parts[2]), _qty(parts[3])))
    return out


def node_gpus(node: dict[str, Any]) -> tuple[int, list[tuple[float, float, str, str, bool]]]:
    """(family, per GPU: (capacity, split limit, uuid, type, healthy)) of a node."""
    meta = node.get("metadata") or {}
    ann = meta.get("annotations") or {}
    status = node.get("status") or {}
    alloc = status.get("allocatable") or {}
    cap = status.get("capacity") or alloc
    labels = meta.get("labels") or {}
    model = next((labels[k] for k in MODEL_LABELS if k in labels), "")
    register = ann.get(VGPU_REGISTER)
    if register and all(_qty(alloc.get(k, cap.get(k, 0))) > 0 for k in (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES)):
        gpus = []
        for entry in str(register).split(":"):
            items = entry.split(",")
            if len(items) >= 6:
                gpus.append((float(_qty(items[2])), float(_qty(items[1])), items[0], items[3],
                             items[4].strip().lower() == "true"))
        if gpus:
            return VGPU, gpus
    if GPU_MEMORY in cap and _qty(cap.get(GPU_NUMBER, 0)) > 0:
        number = _qty(cap[GPU_NUMBER])
        per = float(_qty(cap[GPU_MEMORY]) // number)
        bad = {int(x) for x in str(ann.get(UNHEALTHY_IDS, "")).split(",") if x.strip().isdigit()}
        return GPUSHARE, [(per, math.inf, "", model, i not in bad) for i in range(number)]
    count = int(float(milli_value(alloc.get(NVIDIA_GPU, 0))) // 1000)
    if count > 0:
        return MILLI, [(MILLI_PER_GPU, math.inf, "", model, True) for _ in range(count)]
    return NONE, []


