"""The registry lists every plugin written under ``plugins/``, and every plugin has its own test file."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pumice.scheduler.plugins as plugins_package
from pumice.scheduler.conf import PLUGIN_FLAGS
from pumice.scheduler.framework.plugin import Plugin
from pumice.scheduler.framework.points import POINTS
from pumice.scheduler.registry import ACTIONS, PLUGINS

HERE = Path(__file__).parent


def test_every_plugin_class_is_registered_under_its_name() -> None:
    written = set()
    for info in pkgutil.iter_modules(plugins_package.__path__):
        module = importlib.import_module(f"{plugins_package.__name__}.{info.name}")
        written |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Plugin) and cls is not Plugin and cls.__module__ == module.__name__}
    assert written == set(PLUGINS.values())
    assert all(PLUGINS[cls.name] is cls for cls in written)
    assert all(ACTIONS[action.name] is action for action in ACTIONS.values())


def test_every_plugin_has_its_own_test_file() -> None:
    for cls in PLUGINS.values():
        module = cls.__module__.rsplit(".", 1)[-1]
        assert (HERE / f"test_{module}.py").is_file(), f"{cls.name}: tests/scheduler/plugins/test_{module}.py"


def test_the_configuration_accepts_the_flag_of_every_extension_point() -> None:
    assert {p.flag for p in POINTS if p.flag is not None} <= set(PLUGIN_FLAGS)
    assert len(PLUGIN_FLAGS) == len(set(PLUGIN_FLAGS))
