"""deviceshare: pods on single GPUs (shares, whole GPUs, vGPU splits), Volcano's assignment annotations."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.scheduler import build_cluster_state, load_conf, run_session
from pumice.scheduler.gpus import GPU_INDEX, GPU_MEMORY, GPU_MILLI, GPU_NUMBER, PREDICATE_TIME, USE_GPU_TYPE
from tests.builders import node, pod, podgroup, queue
from tests.scheduler.plugins.support import conf_text

DEVICESHARE = {"name": "deviceshare", "arguments": {"deviceshare.GPUSharingEnable": True}}
NUMBER = {"name": "deviceshare", "arguments": {"deviceshare.GPUNumberEnable": True}}


def gpu_node(name: str, gpus: int, **kw: Any) -> dict[str, Any]:
    obj = node(name, gpus=gpus, **kw)
    obj["status"]["allocatable"][GPU_MILLI] = str(1000 * gpus)
    return obj


def share_pod(name: str, milli: int, **kw: Any) -> dict[str, Any]:
    main = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m", GPU_MILLI: str(milli)}}}
    return pod(name, group=name, containers=[main], **kw)


def limits_pod(name: str, limits: dict[str, str], **kw: Any) -> dict[str, Any]:
    main = {"name": "main", "image": "busybox", "resources": {"requests": dict(limits), "limits": dict(limits)}}
    return pod(name, group=name, containers=[main], **kw)


def groups(*names: str) -> list[dict[str, Any]]:
    return [podgroup(n, queue="default", phase="Inqueue") for n in names]


def decide(objects: list[dict[str, Any]], *plugins: Any) -> Any:
    return run_session(objects, load_conf(conf_text(*plugins, "predicates", actions="allocate")))


def test_a_share_needs_room_on_one_gpu_not_on_the_node() -> None:
    # GPU 0 holds 600 milli; three pods of 600 wait: the node has 800 milli free in all, but only GPU 1 can take one
    objects = [gpu_node("n", 2), queue("default"), *groups("run", "a", "b", "c"),
               share_pod("run", 600, node="n", phase="Running", annotations={GPU_INDEX: "0"}),
               share_pod("a", 600), share_pod("b", 600), share_pod("c", 600)]
    out = decide(objects, "deviceshare")
    assert list(out.binds) == ["default/a"]
    assert out.pod_annotations["default/a"][GPU_INDEX] == "1"
    # without the plugin only the node's total counts: two of them would go
    assert len(decide(objects).binds) == 2


def test_whole_gpus_take_idle_ones_only() -> None:
    objects = [gpu_node("n", 4), queue("default"), *groups("s", "w"),
               share_pod("s", 300, node="n", phase="Running", annotations={GPU_INDEX: "1"}),
               pod("w", group="w", cpu="1", gpus=3)]
    out = decide(objects, "deviceshare")
    assert out.binds == {"default/w": "n"}
    assert out.pod_annotations["default/w"][GPU_INDEX] == "0,2,3"
    objects[-1] = pod("w", group="w", cpu="1", gpus=4)
    assert decide(objects, "deviceshare").binds == {}


def test_gpushare_memory_first_fit_and_annotations() -> None:
    n = node("n", capacity=True)
    for part in ("allocatable", "capacity"):
        n["status"][part].update({GPU_MEMORY: "16000", GPU_NUMBER: "2"})
    objects = [n, queue("default"), *groups("a", "b", "c"),
               limits_pod("a", {GPU_MEMORY: "6000"}), limits_pod("b", {GPU_MEMORY: "6000"}),
               limits_pod("c", {GPU_MEMORY: "3000"})]
    out = decide(objects, DEVICESHARE)
    assert out.binds == {"default/a": "n", "default/b": "n"}  # 8000 per card: c fits on neither card's 2000 left
    assert [out.pod_annotations[k][GPU_INDEX] for k in ("default/a", "default/b")] == ["0", "1"]
    assert PREDICATE_TIME in out.pod_annotations["default/a"]


def test_gpushare_number_needs_idle_cards() -> None:
    n = node("n", capacity=True)
    for part in ("allocatable", "capacity"):
        n["status"][part].update({GPU_MEMORY: "16000", GPU_NUMBER: "2"})
    objects = [n, queue("default"), *groups("busy", "w"),
               limits_pod("busy", {GPU_MEMORY: "1000"}, node="n", phase="Running", annotations={GPU_INDEX: "0"}),
               limits_pod("w", {GPU_NUMBER: "2"})]
    assert decide(objects, NUMBER).binds == {}
    objects[-1] = limits_pod("w", {GPU_NUMBER: "1"})
    out = decide(objects, NUMBER)
    assert out.pod_annotations["default/w"][GPU_INDEX] == "1"


def test_gpu_model_selection() -> None:
    objects = [gpu_node("t4", 1, labels={"nvidia.com/gpu.product": "Tesla-T4"}),
               gpu_node("a100", 1, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
               queue("default"), *groups("p"), share_pod("p", 500, annotations={USE_GPU_TYPE: "A100"})]
    assert decide(objects, "deviceshare").binds == {"default/p": "a100"}


def test_placements_reverted_give_their_gpus_back() -> None:
    state = build_cluster_state([gpu_node("n", 1), queue("default"), *groups("a"), share_pod("a", 700)])
    run_session(state, load_conf(conf_text("deviceshare", actions="allocate")), revert=True)
    assert state.nodes.gpus.used.tolist() == [[700.0]]  # committed: the bind keeps its share
    task = next(iter(state.jobs["default/a"].tasks.values()))
    assert task.gpu_ids == (0,)


@settings(max_examples=40, deadline=None)
@given(
    gpus=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    asks=st.lists(st.one_of(st.integers(50, 999).map(lambda m: ("milli", m)),
                            st.integers(1, 3).map(lambda k: ("whole", k))), min_size=1, max_size=14),
    running=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(50, 600)), max_size=4),
)
def test_never_more_than_1000_milli_on_one_gpu(gpus: list[int], asks: list[tuple[str, int]],
                                                running: list[tuple[int, int, int]]) -> None:
    objects: list[dict[str, Any]] = [gpu_node(f"n{i}", g, cpu="64") for i, g in enumerate(gpus)]
    objects.append(queue("default"))
    held: dict[tuple[str, int], float] = defaultdict(float)
    for k, (ni, gi, milli) in enumerate(running):
        if ni >= len(gpus) or gi >= gpus[ni] or held[(f"n{ni}", gi)] + milli > 1000:
            continue
        held[(f"n{ni}", gi)] += milli
        objects += [podgroup(f"r{k}", queue="default", phase="Running"),
                    share_pod(f"r{k}", milli, node=f"n{ni}", phase="Running", annotations={GPU_INDEX: str(gi)})]
    for k, (kind, amount) in enumerate(asks):
        objects.append(podgroup(f"p{k}", queue="default", phase="Inqueue"))
        objects.append(share_pod(f"p{k}", amount) if kind == "milli" else pod(f"p{k}", group=f"p{k}", cpu="1",
                                                                             gpus=amount))
    out = decide(objects, "deviceshare")
    by_key = {f"default/p{k}": ask for k, ask in enumerate(asks)}
    for key, node_name in out.binds.items():
        kind, amount = by_key[key]
        ids = [int(x) for x in out.pod_annotations[key][GPU_INDEX].split(",")]
        assert len(ids) == (1 if kind == "milli" else amount)
        for g in ids:
            assert 0 <= g < gpus[int(node_name[1:])]
            held[(node_name, g)] += amount if kind == "milli" else 1000
    assert all(v <= 1000 for v in held.values()), dict(held)


def vgpu_node(name: str, cards: list[tuple[int, int]]) -> dict[str, Any]:
    """A vGPU node: cards of (split count, memory MiB), registered as Volcano's vGPU device plugin does."""
    register = "".join(f"GPU-{name}-{i},{n},{mem},NVIDIA-A100,true,hami-core:" for i, (n, mem) in enumerate(cards))
    obj = node(name, capacity=True)
    for part in ("allocatable", "capacity"):
        obj["status"][part].update({"volcano.sh/vgpu-number": str(sum(n for n, _ in cards)),
                                    "volcano.sh/vgpu-memory": str(sum(m for _, m in cards)),
                                    "volcano.sh/vgpu-cores": str(100 * len(cards))})
    obj["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": register}
    return obj


def test_vgpu_containers_share_the_cards() -> None:
    vgpu = {"name": "deviceshare", "arguments": {"deviceshare.VGPUEnable": True}}
    half = {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "6000"}
    containers = [{"name": f"c{i}", "image": "busybox", "resources": {"limits": dict(half), "requests": dict(half)}}
                  for i in range(3)]
    # two cards of 10000 MiB: two containers of 6000 fit, three do not (each card holds one)
    objects = [vgpu_node("v", [(10, 10000), (10, 10000)]), queue("default"), *groups("p"),
               pod("p", group="p", containers=containers)]
    assert decide(objects, vgpu).binds == {}
    objects[-1] = pod("p", group="p", containers=containers[:2])
    out = decide(objects, vgpu)
    assert out.binds == {"default/p": "v"}
    assert out.pod_annotations["default/p"]["volcano.sh/vgpu-ids-new"].count("GPU-v-") == 2
