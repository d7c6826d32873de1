"""Every scheduler configuration Volcano ships (its Helm chart) and every one its user guides show
loads and runs a session (copies in ``data/volcano_confs``, each naming its source on line 1).

A configuration naming a plugin or action pumice does not have yet is an expected failure naming
it; it runs as soon as the name is registered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.scheduler import ACTIONS, PLUGINS, ConfError, load_conf, run_session
from tests.builders import node, pod, podgroup, queue

CONFS = sorted((Path(__file__).parent / "data" / "volcano_confs").glob("*.conf"))
#: Guide text that is not a configuration as written: Volcano's guide elides part of it with
#: "..." (a YAML document end marker), which pumice refuses instead of dropping what follows.
ELIDED = {"guide-use_vnpu-2.conf"}


def _missing(conf: Path) -> str | None:
    doc = yaml.safe_load(conf.read_text())
    for a in (x.strip() for x in str(doc.get("actions", "")).split(",")):
        if a and a not in ACTIONS:
            return f"action {a!r} is not implemented yet"
    for tier in doc.get("tiers") or []:
        for p in tier.get("plugins") or []:
            if p["name"] not in PLUGINS:
                return f"plugin {p['name']!r} is not implemented yet"
    return None


def _params() -> list[Any]:
    out = []
    for conf in CONFS:
        if conf.name in ELIDED:
            continue
        missing = _missing(conf)
        marks = [pytest.mark.xfail(reason=missing, strict=True)] if missing else []
        out.append(pytest.param(conf, id=conf.stem, marks=marks))
    return out


def _cluster() -> list[dict[str, Any]]:
    """Two labelled GPU nodes, a queue bound to their node group, and a gang of two pods."""
    group = {"volcano.sh/nodegroup-name": "ng1"}
    affinity = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["ng1"]}}
    return [
        node("n1", cpu="8", memory="16Gi", gpus=4, labels=group),
        node("n2", cpu="8", memory="16Gi", gpus=4, labels=group),
        queue("default", weight=1, affinity=affinity),
        podgroup("job", queue="default", min_member=2),
        pod("job-0", group="job", cpu="2", memory="2Gi", gpus=1),
        pod("job-1", group="job", cpu="2", memory="2Gi", gpus=1),
    ]


def test_the_shipped_and_guide_configurations_are_all_here() -> None:
    names = {c.name for c in CONFS}
    assert {"helm-volcano-scheduler.conf", "helm-volcano-scheduler-ci.conf", "helm-agent-scheduler.conf"} <= names
    assert len(names) >= 25
    for conf in CONFS:
        assert conf.read_text().startswith("# source: volcano-sh/volcano@"), conf.name


@pytest.mark.parametrize("path", _params())
def test_configuration_loads_and_schedules(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = load_conf(path.read_text(), str(path.name))
    assert not [r for r in caplog.records if "unknown plugin" in r.getMessage()]
    outcome = run_session(_cluster(), conf)
    assert set(outcome.binds) == {"default/job-0", "default/job-1"}


def test_an_elided_guide_configuration_is_refused_with_the_line() -> None:
    path = next(c for c in CONFS if c.name in ELIDED)
    with pytest.raises(ConfError, match=r"guide-use_vnpu-2.conf: invalid YAML at line \d+"):
        load_conf(path.read_text(), path.name)
