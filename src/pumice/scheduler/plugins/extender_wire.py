"""The JSON an HTTP extender of Volcano receives: Go's encoding of the scheduler's ``TaskInfo``,
``NodeInfo``, ``JobInfo`` and ``QueueInfo`` (exported field names, no tags), the part an extender
reads, and the POST that carries it (one connection per extender, kept alive, with a timeout)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from pumice.scheduler.model import JobInfo, QueueInfo, TaskInfo

if TYPE_CHECKING:
    import http.client

    from pumice.scheduler.framework.session import Session

#: Volcano reads at most 10 MB of an answer.
MAX_BODY = 10 << 20


class ExtenderError(Exception):
    """The extender could not be reached, timed out, answered non-200 or with malformed JSON."""


def resource(ssn: Session, vec: np.ndarray) -> dict[str, Any]:
    """``api.Resource``: milli-CPU, memory bytes, scalars (milli-units)."""
    names = ssn.space.names
    scalars = {names[i]: float(vec[i]) for i in range(2, len(names)) if vec[i]}
    return {"MilliCPU": float(vec[0]), "Memory": float(vec[1]), "ScalarResources": scalars or None,
            "MaxTaskNum": 0}


def task_info(ssn: Session, task: TaskInfo) -> dict[str, Any]:
    return {
        "UID": task.uid, "Job": task.job.uid if task.job is not None else "", "Name": task.name,
        "Namespace": task.namespace, "TaskRole": task.role, "Resreq": resource(ssn, task.resreq),
        "InitResreq": resource(ssn, task.init_resreq), "NodeName": task.node_name, "Status": task.status,
        "Priority": task.priority, "Preemptable": task.preemptable, "Pod": task.pod,
    }


def node_info(ssn: Session, j: int) -> dict[str, Any]:
    nodes = ssn.nodes
    obj = nodes.objects[j]
    alloc = nodes.allocatable[:, j]
    capacity = (obj.get("status") or {}).get("capacity")
    return {
        "Name": nodes.names[j], "Node": obj,
        "Idle": resource(ssn, alloc - nodes.used[:, j]), "Used": resource(ssn, nodes.used[:, j]),
        "Releasing": resource(ssn, nodes.releasing[:, j]), "Pipelined": resource(ssn, nodes.pipelined[:, j]),
        "Allocatable": resource(ssn, alloc),
        "Capability": resource(ssn, ssn.space.vector(capacity)) if capacity else resource(ssn, alloc),
    }


def job_info(ssn: Session, job: JobInfo) -> dict[str, Any]:
    return {
        "UID": job.uid, "Name": job.name, "Namespace": job.namespace, "Queue": job.queue,
        "Priority": job.priority, "MinAvailable": job.min_available, "PodGroup": job.pod_group,
        "Tasks": {uid: task_info(ssn, t) for uid, t in job.tasks.items()},
    }


def queue_info(queue: QueueInfo) -> dict[str, Any]:
    return {"UID": queue.uid, "Name": queue.name, "Weight": queue.weight, "Queue": queue.queue}


class Client:
    """POSTs JSON to ``<urlPrefix>/<verb>`` and reads the JSON answer."""

    def __init__(self, url_prefix: str, timeout: float) -> None:
        self.prefix = url_prefix.rstrip("/")
        parts = urlsplit(self.prefix)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"extender.urlPrefix {url_prefix!r} is not an http(s) URL")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base_path = parts.path
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        import http.client  # here: http.client pulls in ssl (30 ms), which a session without extenders never needs

        if self._conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def post(self, verb: str, body: object, want_answer: bool = True) -> Any:
        import http.client

        data = json.dumps(body, separators=(",", ":"), default=str).encode()
        path = f"{self.base_path}/{verb}"
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                payload = resp.read(MAX_BODY + 1)
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as err:
                self.close()  # a kept-alive connection the extender closed: once more on a new one
                if attempt:
                    raise ExtenderError(f"failed {verb} with extender at URL {self.prefix}/{verb}: {err}") from err
                continue
            except (OSError, http.client.HTTPException) as err:
                self.close()
                raise ExtenderError(f"failed {verb} with extender at URL {self.prefix}/{verb}: {err}") from err
            if resp.status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {self.prefix}/{verb}, code {resp.status}")
            if not want_answer:
                return None
            if len(payload) > MAX_BODY:
                raise ExtenderError(f"the answer of {verb} is over 10 MB")
            try:
                return json.loads(payload or b"null")
            except ValueError as err:
                raise ExtenderError(f"the answer of {verb} is not JSON: {err}") from err
        raise AssertionError("unreachable")  # pragma: no cover
