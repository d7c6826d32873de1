"""GPU slots: a pod asking whole GPUs gets the first idle ones its request allows, in slot order, and
placing it accounts exactly those (the read of a node's few slots as Python values must agree with
the columnar definition of an idle GPU)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.api.gpus import GPU_MEMORY, GPU_NUMBER, MILLI, MODEL_LABELS, NVIDIA_GPU, UNHEALTHY_IDS, GpuRequest
from pumice.scheduler.gpus import GpuSlots

MODELS = ("A100", "V100", "")


@st.composite
def gpu_node(draw: st.DrawFn) -> dict[str, Any]:
    model = draw(st.sampled_from(MODELS))
    labels = {MODEL_LABELS[0]: model} if model else {}
    count = draw(st.integers(0, 8))
    if draw(st.booleans()):  # gpushare: per-GPU memory, some GPUs unhealthy
        bad = draw(st.sets(st.integers(0, max(count - 1, 0)), max_size=3))
        ann = {UNHEALTHY_IDS: ",".join(map(str, sorted(bad)))}
        status = {"capacity": {GPU_NUMBER: str(count), GPU_MEMORY: str(16_000 * count)}}
        return {"metadata": {"name": "n", "labels": labels, "annotations": ann}, "status": status}
    return {"metadata": {"name": "n", "labels": labels}, "status": {"allocatable": {NVIDIA_GPU: str(count)}}}


@settings(max_examples=300, deadline=None)
@given(st.lists(gpu_node(), min_size=1, max_size=6), st.data())
def test_whole_gpus_are_the_first_idle_allowed_slots_and_are_accounted(nodes: list[dict[str, Any]],
                                                                     data: st.DataObject) -> None:
    slots = GpuSlots(nodes)
    if not slots.any:
        return
    # pods already placed: some slots shared by one or two of them
    shared = data.draw(st.lists(st.sampled_from([0, 0, 1, 2]), min_size=slots.sharers.size,
                                max_size=slots.sharers.size))
    slots.sharers[:] = np.array(shared, dtype=float).reshape(slots.sharers.shape)
    j = data.draw(st.integers(0, len(nodes) - 1))
    use = data.draw(st.sampled_from([(), ("A100",)]))
    nouse = () if use else data.draw(st.sampled_from([(), ("V100",)]))
    req = GpuRequest(family=int(slots.family[j]), share=0.0, whole=data.draw(st.integers(1, 4)), use=use, nouse=nouse)

    allowed = slots.usable(req, j) & (slots.sharers[j] == 0)
    idle = np.flatnonzero(allowed)[: req.whole].tolist()
    want = tuple(idle) if len(idle) == req.whole else None
    got = slots.choose(req, j)
    assert got == want

    if got is not None:
        before = (slots.used.copy(), slots.cores.copy(), slots.sharers.copy())
        slots.add(j, req, got, cpu=1000.0)
        for g in range(slots.width):
            taken = g in got
            assert slots.used[j, g] == before[0][j, g] + (slots.capacity[j, g] if taken else 0.0)
            assert slots.cores[j, g] == before[1][j, g] + (100.0 if taken else 0.0)
            assert slots.sharers[j, g] == before[2][j, g] + (1 if taken else 0)
        assert slots.mix[req.kind] == 1 and slots.mix_cpu[req.kind] == 1000.0
        slots.remove(j, req, got, cpu=1000.0)  # what placing took, removing gives back
        assert (slots.used == before[0]).all() and (slots.sharers == before[2]).all()
        assert req.kind not in slots.mix


def test_a_milli_node_of_eight_gives_slots_in_order() -> None:
    slots = GpuSlots([{"metadata": {"name": "n"}, "status": {"allocatable": {NVIDIA_GPU: "8"}}}])
    assert int(slots.family[0]) == MILLI
    req = GpuRequest(family=MILLI, share=0.0, whole=3)
    taken = []
    for _ in range(2):
        ids = slots.choose(req, 0)
        assert ids is not None
        slots.add(0, req, ids)
        taken.append(ids)
    assert taken == [(0, 1, 2), (3, 4, 5)]
    assert slots.choose(req, 0) is None  # two idle GPUs left
