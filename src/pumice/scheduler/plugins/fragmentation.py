"""fragmentation: place a pod where it adds the least expected unusable GPU capacity (not Volcano's).

The idea of fragmentation gradient descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23),
written from the paper's description. For a pod shape ``m`` (a share of one GPU, or whole GPUs, with its
CPU), the *fragment* of a node is the free GPU capacity that shape cannot use there: all of it when the
shape does not fit the node, else the free part of every GPU too small for it (for whole GPUs: every
partly used GPU). A node's expected fragment weighs the shapes by how often they occur in the current
mix (the pods holding GPUs, plus the pods waiting in this session). A candidate node scores by how little
placing the pod raises its expected fragment (the *gradient*), on a fixed scale: 50 x
``fragmentation.weight`` where the fragment stays as it is, 0 / 100 where it rises / falls by the most GPU
capacity of one node. The GPUs of the chosen node are then taken best fit (the fullest that fits), the
choice that raises the fragment least for a share.

With the mix fixed for the session, a node's score is a function of that node alone: a NodeOrderFn whose
rows placement keeps and refreshes as nodes change, and whose replicas share a ladder (unlike a score
normalized over the candidates, which would couple every node to the others). Columnar: one pass over
(shapes x nodes x GPUs) arrays per call.
"""

from __future__ import annotations

import numpy as np

from pumice.api.arguments import Arguments
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import NODE_ORDER
from pumice.scheduler.framework.session import Session
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.gpus import MILLI, GpuRequest
from pumice.scheduler.model import TaskInfo, TaskStatus
from pumice.scheduler.resources import CPU

MAX_NODE_SCORE = 100.0
#: The most frequent shapes of the mix kept (the tail changes the expectation very little).
TOP_SHAPES = 16


class FragmentationPlugin(Plugin):
    name = "fragmentation"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int("fragmentation.weight", 1)
        if self.weight < 0:
            arguments.warn("fragmentation.weight", f"{self.weight} is negative; using 1")
            self.weight = 1
        self.mix: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def on_session_open(self, ssn: Session) -> None:
        gpus = ssn.nodes.gpus
        self.mix = None
        if self.weight == 0 or not (gpus.family == MILLI).any():
            return
        self.ssn = ssn
        gpus.policy = "binpack"
        self.cpu_row = ssn.space.index[CPU]
        # the pods waiting in this session join the running mix
        waiting: dict[tuple[float, int], list[float]] = {}
        for job in ssn.waiting:
            if job.count(TaskStatus.PENDING):
                for t in job.tasks.values():
                    if t.status == TaskStatus.PENDING and t.gpu is not None and t.gpu.family == MILLI:
                        entry = waiting.setdefault(t.gpu.kind, [0.0, 0.0])
                        entry[0] += 1
                        entry[1] += float(t.resreq[self.cpu_row])
        #: The mix as the session opened: placements within the session change it by a pod or two, and a
        #: fixed mix keeps a node's score a function of that node alone (rows and ladders reuse it).
        self.mix = self.shapes(waiting)
        if not len(self.mix[3]):
            return
        mine = gpus.valid & (gpus.family == MILLI)[:, None]
        #: The most GPU capacity of one node: a rise of that much scores 0, a fall of that much 100.
        self.scale = max(float(np.where(mine, gpus.capacity, 0.0).sum(axis=1).max()), 1.0)
        ssn.add(NODE_ORDER, self.name, self)

    def shapes(self, waiting: dict[tuple[float, int], list[float]]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(share, whole, cpu, weight) of the most frequent shapes of the mix, weights summing to 1."""
        gpus = self.ssn.nodes.gpus
        counts: dict[tuple[float, int], list[float]] = {k: [float(v), gpus.mix_cpu.get(k, 0.0)]
                                                        for k, v in gpus.mix.items()}
        for k, (n, cpu) in waiting.items():
            entry = counts.setdefault(k, [0.0, 0.0])
            entry[0] += n
            entry[1] += cpu
        top = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_SHAPES]
        if not top:
            return np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
        share = np.array([k[0] for k, _ in top])
        whole = np.array([k[1] for k, _ in top], dtype=float)
        count = np.array([v[0] for _, v in top])
        cpu = np.array([v[1] for _, v in top]) / np.maximum(count, 1.0)
        return share, whole, cpu, count / count.sum()

    def placement_inputs(self) -> object:
        """Scores read the mix of this session beyond the node table: rows kept from a session with
        another mix are recomputed."""
        if self.mix is None:
            return None
        return self.weight, tuple(tuple(a.tolist()) for a in self.mix)

    # --- NodeOrderFn -------------------------------------------------------------------------------------
    def static_score(self, task: TaskInfo) -> np.ndarray | None:
        return None

    def dynamic_score(self, task: TaskInfo, view: NodeView) -> np.ndarray | None:
        """``weight`` x 100 x (scale - rise) / (2 x scale): 50 where the pod leaves the node's expected
        fragment as it is, more where it lowers it. The rows of a ladder view hold replicas placed
        before this one (by the slot policy, best fit): they are placed here too."""
        if self.mix is None:
            return None
        nodes = self.ssn.nodes
        gpus = nodes.gpus
        req = task.gpu if task.gpu is not None and task.gpu.family == MILLI else None
        idx = view.idx
        milli = (gpus.family[idx] == MILLI)[:, None]
        free = np.where(milli, gpus.free(idx), 0.0)
        cap = np.where(milli & gpus.valid[idx], gpus.capacity[idx], 0.0)
        if req is not None:
            levels = view.task_count - nodes.task_count[idx]
            for level in range(1, int(levels.max(initial=0)) + 1):
                rows = levels >= level
                free[rows] = place(free[rows], cap[rows], req)
        cpu_free = view.idle[self.cpu_row]
        share, whole, cpu, weight = self.mix
        before = expected_fragment(free, cap, cpu_free, share, whole, cpu, weight)
        after_free = place(free, cap, req) if req is not None else free
        after = expected_fragment(after_free, cap, cpu_free - float(task.resreq[self.cpu_row]), share, whole, cpu,
                                  weight)
        out: np.ndarray = (self.scale - (after - before)) * (MAX_NODE_SCORE * self.weight / (2.0 * self.scale))
        return out


def place(free: np.ndarray, cap: np.ndarray, req: GpuRequest) -> np.ndarray:
    """Free GPU capacity after placing ``req`` on each node (rows), best fit for a share, the first
    idle GPUs for whole ones; a node where it does not fit is left as it is."""
    out = free.copy()
    rows = np.arange(len(free))
    if req.whole:
        idle = (free >= cap) & (cap > 0)
        take = idle & (np.cumsum(idle, axis=1) <= req.whole)
        ok = idle.sum(axis=1) >= req.whole
        out[ok] = np.where(take[ok], 0.0, out[ok])
        return out
    room = np.where(free >= req.share, free, np.inf)
    g = room.argmin(axis=1)
    ok = np.isfinite(room[rows, g])
    out[rows[ok], g[ok]] -= req.share
    return out


def expected_fragment(free: np.ndarray, cap: np.ndarray, cpu_free: np.ndarray, share: np.ndarray,
                      whole: np.ndarray, cpu: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per node (rows of ``free``): Σ over shapes of weight x the free GPU capacity the shape cannot use."""
    free_t = np.ascontiguousarray(free.T)  # (G, k): sums over a node's GPUs add whole rows
    cap_t = np.ascontiguousarray(cap.T)
    total = free_t.sum(axis=0)  # (k,)
    idle = (free_t >= cap_t) & (cap_t > 0)
    n_idle = idle.sum(axis=0)
    partly = total - (free_t * idle).sum(axis=0)
    best = free_t.max(axis=0) if len(free_t) else np.zeros(len(total))
    cpu_ok = cpu_free[None, :] >= cpu[:, None]  # (M, k)
    is_whole = whole > 0
    fits_whole = (n_idle[None, :] >= whole[:, None]) & cpu_ok
    # shares: does some GPU have room (the freest one), and the free capacity of the GPUs too small for it
    fits_share = (best[None, :] >= share[:, None]) & cpu_ok
    frag_share = (free_t[None, :, :] * (free_t[None, :, :] < share[:, None, None])).sum(axis=1)  # (M, k)
    frag = np.where(is_whole[:, None], np.where(fits_whole, partly[None, :], total[None, :]),
                    np.where(fits_share, frag_share, total[None, :]))
    out: np.ndarray = weight @ frag
    return out
