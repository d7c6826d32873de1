"""A tiny cluster for controller tests: admitted store, controllers, scheduler and a fake kubelet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pumice.admission import admitted_memory_store
from pumice.api import load_file
from pumice.clock import VirtualClock, rfc3339, to_datetime
from pumice.controllers import ControllerManager, Mirror
from pumice.scheduler.loop import SchedulerLoop
from pumice.store import DEFAULT_RESOURCES

Obj = dict[str, Any]
JOBS = "jobs.batch.volcano.sh"
PODGROUPS = "podgroups.scheduling.volcano.sh"
QUEUES = "queues.scheduling.volcano.sh"
RESOURCE_BY_TYPE = {(i.api_version, i.kind): i.name for i in DEFAULT_RESOURCES}


class FakeKubelet:
    """Bound pods start on the next sync; they end after ``run_for(pod)`` seconds with ``exit_code(pod)``."""

    def __init__(self, store: Any, clock: VirtualClock, run_for: Callable[[Obj], float],
                 exit_code: Callable[[Obj], int]) -> None:
        self.store, self.clock, self.run_for, self.exit_code = store, clock, run_for, exit_code
        self.pods = Mirror(store, "pods")
        self.started: dict[tuple[str, str], float] = {}

    def sync(self) -> None:
        self.pods.drain()
        now = self.clock.now()
        for (ns, name), pod in sorted(self.pods.objects.items()):
            phase = (pod.get("status") or {}).get("phase")
            if pod["metadata"].get("deletionTimestamp") or not pod["spec"].get("nodeName"):
                continue
            container = pod["spec"]["containers"][0]["name"]
            if phase == "Pending":
                self.started[(ns, name)] = now
                status = {"phase": "Running", "startTime": rfc3339(now), "containerStatuses": [
                    {"name": container, "ready": True, "restartCount": 0, "state": {"running": {}}}]}
            elif phase == "Running" and now >= self.started.get((ns, name), now) + self.run_for(pod):
                code = self.exit_code(pod)
                status = {"phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": [
                    {"name": container, "ready": False, "restartCount": 0,
                     "state": {"terminated": {"exitCode": code}}}]}
            else:
                continue
            self.pods.put(self.store.patch("pods", ns, name, {"status": status}, subresource="status"))


class Cluster:
    """``step()`` is one scheduling period: controllers, a scheduler cycle, controllers, kubelet, controllers."""

    def __init__(self, nodes: dict[str, int] | None = None, *, run_for: Callable[[Obj], float] = lambda p: 10.0,
                 exit_code: Callable[[Obj], int] = lambda p: 0) -> None:
        self.clock = VirtualClock()
        self.store = admitted_memory_store(clock=lambda: to_datetime(self.clock.now()))
        for name, cpu in (nodes or {"n0": 8, "n1": 8, "n2": 8}).items():
            self.store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                        "status": {"allocatable": {"cpu": str(cpu), "memory": "16Gi", "pods": "110"},
                                                   "capacity": {"cpu": str(cpu), "memory": "16Gi", "pods": "110"},
                                                   "conditions": [{"type": "Ready", "status": "True"}]}})
        self.manager = ControllerManager(self.store, self.clock)
        self.scheduler = SchedulerLoop(self.store)
        self.kubelet = FakeKubelet(self.store, self.clock, run_for, exit_code)
        self.bind_history: list[dict[str, str]] = []

    def apply(self, source: Path | list[Obj]) -> list[Obj]:
        objects = [o.to_dict() for o in load_file(source)] if isinstance(source, Path) else source
        created = [self.store.create(RESOURCE_BY_TYPE[(o["apiVersion"], o["kind"])], o) for o in objects]
        self.manager.sync()
        return created

    def step(self, seconds: float = 1.0) -> None:
        self.manager.sync()
        outcome = self.scheduler.run_once()
        self.bind_history.append(dict(outcome.binds))
        self.manager.sync()
        self.kubelet.sync()
        self.manager.sync()
        self.clock.advance_to(self.clock.now() + seconds)

    def run_until(self, done: Callable[[], bool], limit: int = 2000, on_step: Callable[[], None] | None = None) -> int:
        for n in range(limit):
            if done():
                return n
            self.step()
            if on_step is not None:
                on_step()
        raise AssertionError(f"condition not reached in {limit} steps")

    # --- reading ---------------------------------------------------------------------------------------

    def job(self, name: str, ns: str = "default") -> Obj:
        return self.store.get(JOBS, ns, name)

    def phase(self, name: str, ns: str = "default") -> str:
        return str(((self.job(name, ns).get("status") or {}).get("state") or {}).get("phase") or "")

    def pods(self, job: str, ns: str = "default") -> list[Obj]:
        return self.store.list("pods", ns, label_selector=f"volcano.sh/job-name={job}")[0]

    def podgroups(self, ns: str = "default") -> list[Obj]:
        return self.store.list(PODGROUPS, ns)[0]


def command(name: str, action: str, kind: str, target: str, ns: str = "default", uid: str = "uid") -> Obj:
    """A Command as vcctl writes it (the Command CRD requires the target's uid; the controllers go by name)."""
    api = "batch.volcano.sh/v1alpha1" if kind == "Job" else "scheduling.volcano.sh/v1beta1"
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": name, "namespace": ns},
            "action": action, "target": {"apiVersion": api, "kind": kind, "name": target, "uid": uid}}
