"""The event recorder: Kubernetes' Event fields, repeats folded into one Event, failures never raised."""

from __future__ import annotations

from pumice.clock import VirtualClock
from pumice.events import EventRecorder
from pumice.store import MemoryStore
from tests.builders import pod as make_pod


def test_event_names_the_object_and_repeats_fold_into_one() -> None:
    store, clock = MemoryStore(), VirtualClock(1_000.0)
    pod = store.create("pods", make_pod("p", namespace="ns", scheduler=None))
    rec = EventRecorder(store, "volcano", clock=clock)
    rec.event(pod, "Warning", "FailedScheduling", "0/3 nodes are available")
    clock.advance_to(1_030.0)
    rec.event(pod, "Warning", "FailedScheduling", "0/3 nodes are available")
    rec.event(pod, "Normal", "Scheduled", "Successfully assigned ns/p to n1")
    events, _ = store.list("events", "ns")
    assert len(events) == 2
    failed = next(e for e in events if e["reason"] == "FailedScheduling")
    assert failed["count"] == 2
    assert failed["involvedObject"] == {"kind": "Pod", "namespace": "ns", "name": "p",
                                        "uid": pod["metadata"]["uid"], "apiVersion": "v1",
                                        "resourceVersion": pod["metadata"]["resourceVersion"]}
    assert failed["firstTimestamp"] < failed["lastTimestamp"]
    assert failed["source"] == {"component": "volcano"} and failed["type"] == "Warning"


def test_a_deleted_event_is_written_again_and_a_closed_store_is_not_an_error() -> None:
    store = MemoryStore()
    pod = store.create("pods", make_pod("p", namespace="ns", scheduler=None))
    rec = EventRecorder(store, "volcano", clock=VirtualClock(0.0))
    rec.event(pod, "Normal", "Scheduled", "here")
    (event,), _ = store.list("events", "ns")
    store.delete("events", "ns", event["metadata"]["name"])
    rec.event(pod, "Normal", "Scheduled", "here")
    assert [e["count"] for e in store.list("events", "ns")[0]] == [1]
    store.close()
    rec.event(pod, "Normal", "Scheduled", "again")  # logged, not raised
