"""deviceshare: pods on single GPUs, not just on a node's GPU count (Volcano's deviceshare plugin).

The node table keeps every GPU of every node as a slot (``pumice.scheduler.gpus``); the predicate asks
whether a node's GPUs can hold the pod's request (a share of one GPU, whole idle GPUs, vGPU splits),
columnar over the candidate nodes. When a task is placed the slots pick its GPUs
(``deviceshare.SchedulePolicy``: Volcano's first fit for gpushare, ``binpack`` / ``spread`` for vGPU and
shares); the plugin writes Volcano's assignment annotations, sent with the bind.

Volcano's switches: ``deviceshare.GPUSharingEnable`` (``volcano.sh/gpu-memory``),
``deviceshare.GPUNumberEnable`` (``volcano.sh/gpu-number``), ``deviceshare.VGPUEnable`` (HAMi vGPU).
Whole GPUs and milli shares of ``nvidia.com/gpu`` nodes (``pumice.io/gpu-milli``, the openb trace) are
always checked per GPU while the plugin is on (a pumice addition: Volcano leaves them to the device plugin).
"""

from __future__ import annotations

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import PREDICATE
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.gpus import FAMILY_NAMES, GPUSHARE, MILLI, NVIDIA_GPU, VGPU, GpuRequest
from pumice.scheduler.model import TaskInfo

POLICIES = ("binpack", "spread", "")


class DeviceSharePlugin(Plugin):
    name = "deviceshare"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.sharing = arguments.get_bool("deviceshare.GPUSharingEnable", False)
        self.number = arguments.get_bool("deviceshare.GPUNumberEnable", False)
        self.vgpu = arguments.get_bool("deviceshare.VGPUEnable", False)
        self.policy = arguments.get_string("deviceshare.SchedulePolicy", "")
        if self.policy not in POLICIES:
            arguments.warn("deviceshare.SchedulePolicy", f"{self.policy!r} is not binpack or spread; using none")
            self.policy = ""
        if arguments.get_int("deviceshare.ScheduleWeight", 0) > 0:
            arguments.warn("deviceshare.ScheduleWeight", "the device score is not implemented in pumice; ignored")
        if self.sharing and self.number:
            arguments.warn("deviceshare.GPUNumberEnable",
                           "GPUSharingEnable and GPUNumberEnable are mutually exclusive in Volcano; both are on")

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.gpu_row = ssn.space.index.get(NVIDIA_GPU, -1)
        gpus = ssn.nodes.gpus
        if not gpus.any:
            return
        # gpushare picks the lowest index that fits (Volcano); the policy orders vGPU cards and shares. Without
        # a policy of its own it leaves fragmentation's best fit in place, whichever plugin opens first.
        if self.policy or "fragmentation" not in ssn.plugins:
            gpus.policy = self.policy or ("first" if not self.vgpu else "")
        ssn.add(PREDICATE, self.name, self)
        ssn.add_event_handler(self.on_allocate, self.on_deallocate)

    def handles(self, req: GpuRequest) -> bool:
        if req.family == VGPU:
            return self.vgpu
        if req.family == GPUSHARE:
            return self.sharing if req.share > 0 else self.number
        return req.family == MILLI

    # --- NodeFilter ------------------------------------------------------------------------------
    def static_checks(self, task: TaskInfo) -> list[tuple[str, np.ndarray]]:
        return []

    def dynamic_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        req = task.gpu
        if req is None or not self.handles(req):
            return []
        nodes = self.ssn.nodes
        extra = None
        if self._whole_gpus(req):
            # rows of a ladder hold replicas the slots do not: each took whole GPUs of its node
            extra = (view.used[self.gpu_row] - nodes.used[self.gpu_row, view.idx]) / 1000.0
        fits = nodes.gpus.fits(req, view.idx, extra)
        return [(f"{FAMILY_NAMES.get(req.family, 'GPU')}: no GPU of the node can hold the request", fits)]

    def _whole_gpus(self, req: GpuRequest) -> bool:
        """Whole ``nvidia.com/gpu`` GPUs: a node's answer follows from its row (idle GPUs minus the
        whole GPUs a hypothetical row adds), so replicas may share a ladder."""
        return req.family == MILLI and req.whole > 0 and self.gpu_row >= 0 and not req.use and not req.nouse

    def replica_safe(self, task: TaskInfo) -> bool:
        # a share depends on single GPUs, which the hypothetical rows of a ladder do not show
        req = task.gpu
        return req is None or not self.handles(req) or self._whole_gpus(req)

    # --- events ----------------------------------------------------------------------------------
    def on_allocate(self, task: TaskInfo) -> None:
        req = task.gpu
        if req is None or not task.gpu_ids or task.node < 0 or not self.handles(req):
            return
        ssn = self.ssn
        ssn.bind_annotations.setdefault(task.key, {}).update(  # numa-aware may add its CPU set
            ssn.nodes.gpus.annotations(req, task.node, task.gpu_ids, ssn.nodes.names[task.node], ssn.now))

    def on_deallocate(self, task: TaskInfo) -> None:
        self.ssn.bind_annotations.pop(task.key, None)
