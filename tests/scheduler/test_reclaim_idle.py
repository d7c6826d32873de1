"""Reclaim counts the node's idle resources (issue 11 item 4): victims are needed only for what
the node does not already have free."""

from __future__ import annotations

import pytest

from pumice.scheduler import load_conf, run_session
from tests.builders import node, pod, podgroup, queue


def conf(plugin: str) -> str:
    return f"""
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: {plugin}
  - name: nodeorder
"""


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_reclaim_evicts_only_what_the_idle_part_lacks(plugin: str) -> None:
    """8 CPUs: queue1 runs 5 one-CPU pods (3 CPUs idle) and deserves 2; queue2 deserves 6 and waits
    for a 6-CPU pod. Three victims and the idle 3 CPUs make room: three are evicted, not none."""
    objs = [node("n1", cpu="8", memory="64Gi"),
            queue("queue1", weight=1, deserved={"cpu": "2", "memory": "16Gi"}),
            queue("queue2", weight=3, deserved={"cpu": "6", "memory": "48Gi"})]
    for i in range(5):
        objs += [podgroup(f"a{i}", queue="queue1", phase="Running"),
                 pod(f"a{i}", group=f"a{i}", cpu="1", memory="1Gi", node="n1", phase="Running")]
    objs += [podgroup("big", queue="queue2", phase="Inqueue"), pod("big", group="big", cpu="6", memory="1Gi",
                                                                    phase="Pending")]
    out = run_session(objs, load_conf(conf(plugin)))
    assert len(out.evictions) == 3, (out.evictions, [j.reason for j in out.jobs])
    assert out.pipelined == {"default/big": "n1"}
