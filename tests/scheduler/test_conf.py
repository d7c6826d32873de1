"""Scheduler configuration: parsing, Volcano's defaulting, refusals."""

from __future__ import annotations

import logging

import pytest

from pumice.scheduler import ConfError, default_conf, load_conf
from pumice.scheduler.conf import PLUGIN_FLAGS


def test_built_in_default_is_the_shipped_volcano_conf_with_weights_that_hold() -> None:
    conf = default_conf()
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert conf.plugin("gang").enabled("enablePreemptable") is False
    assert conf.plugin("drf").enabled("enablePreemptable") is False
    assert conf.plugin("priority").enabled("enablePreemptable") is True
    # pumice's difference (README): admission by weighted share, nothing idle while jobs wait
    assert conf.plugin("proportion").arguments == {"weightedAdmission": True, "workConserving": True}


def test_unset_flags_default_to_true_except_hierarchy() -> None:
    conf = load_conf("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: false\n")
    gang = conf.plugin("gang")
    assert gang.enabled("enableJobReady") is False
    for flag in PLUGIN_FLAGS:
        if flag not in ("enableJobReady", "enableHierarchy"):
            assert gang.enabled(flag), flag
    assert gang.enabled("enableHierarchy") is False


def test_actions_string_is_split_and_trimmed() -> None:
    conf = load_conf('actions: " enqueue ,allocate,  backfill "\ntiers: []\n')
    assert conf.actions == ["enqueue", "allocate", "backfill"]


def test_arguments_and_action_configurations_are_kept() -> None:
    conf = load_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n      binpack.weight: 10\n"
        "configurations:\n- name: allocate\n  arguments:\n    predicateErrorCacheEnable: false\n"
    )
    assert conf.plugin("binpack").arguments == {"binpack.weight": 10}
    assert dict(conf.action_args("allocate")) == {"predicateErrorCacheEnable": False}
    assert conf.action_args("allocate").get_bool("predicateErrorCacheEnable", True) is False


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("actions: allocate, shuffle-all\ntiers: []\n", "unknown action 'shuffle-all'"),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n",
         "proportion and drf with hierarchy enabled conflicts"),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n",
         "tiers[0].plugins[0].enableJobReady: expected true or false"),
        ("actions: allocate\ntiers:\n- plugins:\n  - enableJobReady: true\n",
         "tiers[0].plugins[0]: expected a mapping with a 'name'"),
        ("actions: [allocate\n", "invalid YAML"),
    ],
)
def test_refusals_name_the_field(text: str, needle: str) -> None:
    with pytest.raises(ConfError) as err:
        load_conf(text, source="sched.conf")
    assert needle in str(err.value)
    assert str(err.value).startswith("sched.conf")
    assert "\n" not in str(err.value)


def test_an_unknown_plugin_is_kept_out_of_sessions_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pumice.scheduler"):
        text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: no-such-plugin\n"
        conf = load_conf(text, source="s.conf")
    assert [p.name for p in conf.tiers[0].plugins] == ["gang", "no-such-plugin"]
    assert "s.conf: tiers[0].plugins[1].name: unknown plugin 'no-such-plugin': sessions skip it" in caplog.text
