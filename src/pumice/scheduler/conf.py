"""``volcano-scheduler.conf``: actions, tiers of plugins with their ``enable*`` flags, arguments."""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import yaml

from pumice.api.arguments import Arguments
from pumice.api.reader import InputError, load_yaml
from pumice.node_metrics import MetricsConf, MetricsConfError, parse_metrics_conf
from pumice.scheduler.framework.points import POINT_FLAGS
from pumice.scheduler.volcano_names import VOLCANO_ACTIONS, VOLCANO_PLUGINS

log = logging.getLogger("pumice.scheduler")

#: Volcano's per-plugin switches that are not the flag of an extension point pumice evaluates:
#: ``enableHierarchy`` (drf, capacity) and the flags of points no pumice plugin uses yet.
OTHER_FLAGS: tuple[str, ...] = (
    "enableHierarchy",
    "enabledClusterOrder",
    "enableBestNode",
    "enableTargetJob",
    "enableReservedNodes",
)

#: Every per-plugin switch a configuration may set, literally as Volcano spells them
#: (``enable``/``enabled`` mixed): the extension points' flags, then the others.
PLUGIN_FLAGS: tuple[str, ...] = (*POINT_FLAGS, *OTHER_FLAGS)

#: Flags that Volcano does not default to true (``ApplyPluginConfDefaults`` leaves them nil/false).
_FLAGS_DEFAULT_FALSE = frozenset({"enableHierarchy"})

#: The configuration Volcano ships (Helm chart ``volcano-scheduler.conf``).
DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

#: pumice's default (``pumice up``, ``pumice run``, ``pumice sim`` and ``pumice schedule`` without
#: ``--config``): Volcano's shipped configuration with queue weights that hold under contention —
#: enqueue admits by weighted share and allocate leaves nothing idle while jobs wait (proportion's
#: ``weightedAdmission`` and ``workConserving``, pumice's own arguments; a deliberate difference from
#: Volcano listed in the README). A configuration given explicitly is used as written.
PUMICE_DEFAULT_CONF = DEFAULT_CONF.replace(
    "  - name: proportion\n",
    "  - name: proportion\n    arguments: {weightedAdmission: true, workConserving: true}\n",
)


class ConfError(ValueError):
    """A scheduler configuration that Volcano would refuse."""


@dataclass
class PluginOption:
    name: str
    flags: dict[str, bool]
    arguments: dict[str, Any] = field(default_factory=dict)
    #: The arguments as plugins read them (Volcano's rules; warnings once per configuration).
    args: Arguments = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.args = Arguments(f"plugin {self.name}", self.arguments)

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, True)


@dataclass
class Tier:
    plugins: list[PluginOption]


@dataclass
class SchedulerConf:
    actions: list[str]
    tiers: list[Tier]
    #: Per-action arguments (``configurations: [{name: preempt, arguments: {...}}]``).
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``metrics`` section (where node usage comes from; ``pumice.node_metrics``), None when absent.
    metrics: MetricsConf | None = None
    _enabled: dict[str | None, list[list[PluginOption]]] = field(default_factory=dict, repr=False, compare=False)
    _action_args: dict[str, Arguments] = field(default_factory=dict, repr=False, compare=False)

    def enabled_options(self, flag: str | None) -> list[list[PluginOption]]:
        """Per tier, the plugin options whose ``flag`` is on (all with None); sessions ask every cycle."""
        found = self._enabled.get(flag)
        if found is None:
            found = self._enabled[flag] = [[opt for opt in tier.plugins if flag is None or opt.enabled(flag)]
                                           for tier in self.tiers]
        return found

    def names_any(self, names: Collection[str]) -> bool:
        """Whether any tier has a plugin of ``names``."""
        return any(p.name in names for tier in self.tiers for p in tier.plugins)

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for p in tier.plugins:
                if p.name == name:
                    return p
        return None

    def action_args(self, action: str) -> Arguments:
        """The action's ``configurations`` arguments as actions read them."""
        found = self._action_args.get(action)
        if found is None:
            found = self._action_args[action] = Arguments(f"action {action}", self.configurations.get(action))
        return found


def parse_conf(text: str, *, source: str = "scheduler configuration", known_actions: Collection[str] | None = None,
               known_plugins: Collection[str] | None = None) -> SchedulerConf:
    """Parse and default a configuration. An unknown action is an error, as in Volcano. A plugin of
    Volcano's that ``known_plugins`` lacks is skipped by every session (Volcano skips a plugin it has
    no builder for), with a warning that it has no effect; any other unknown plugin name is an error."""
    try:
        data = load_yaml(text)
    except InputError as err:
        raise ConfError(f"{source}: {err}") from None
    except (yaml.YAMLError, ValueError) as err:
        mark = err.problem_mark if isinstance(err, yaml.MarkedYAMLError) else None
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = err.problem if isinstance(err, yaml.MarkedYAMLError) else err
        raise ConfError(f"{source}: invalid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ConfError(f"{source}: expected a mapping with 'actions' and 'tiers'")
    raw_actions = data.get("actions", "")
    if isinstance(raw_actions, list):
        raw_actions = ",".join(str(a) for a in raw_actions)
    if not isinstance(raw_actions, str):
        raise ConfError(f"{source}: actions: expected a comma-separated string")
    actions = [a.strip() for a in raw_actions.split(",") if a.strip()]
    if known_actions is not None:
        for a in actions:
            if a not in known_actions:
                what = f"Volcano's action {a!r} is not built into pumice yet" if a in VOLCANO_ACTIONS else (
                    f"unknown action {a!r}")
                raise ConfError(f"{source}: actions: {what} (known: {', '.join(sorted(known_actions))})")
    tiers: list[Tier] = []
    raw_tiers = data.get("tiers") or []
    if not isinstance(raw_tiers, list):
        raise ConfError(f"{source}: tiers: expected a list")
    for ti, raw_tier in enumerate(raw_tiers):
        if not isinstance(raw_tier, dict) or not isinstance(raw_tier.get("plugins") or [], list):
            raise ConfError(f"{source}: tiers[{ti}]: expected a mapping with a 'plugins' list")
        plugins = []
        for pi, raw in enumerate(raw_tier.get("plugins") or []):
            where = f"{source}: tiers[{ti}].plugins[{pi}]"
            if not isinstance(raw, dict) or not raw.get("name"):
                raise ConfError(f"{where}: expected a mapping with a 'name'")
            name = str(raw["name"])
            if known_plugins is not None and name not in known_plugins:
                if name not in VOLCANO_PLUGINS:
                    known = ", ".join(sorted(known_plugins))
                    raise ConfError(f"{where}.name: unknown plugin {name!r} (known: {known})")
                log.warning("%s.name: Volcano's plugin %r is not built into pumice yet: it has no effect", where, name)
            flags: dict[str, bool] = {}
            for flag in PLUGIN_FLAGS:
                value = raw.get(flag)
                if value is None:
                    flags[flag] = flag not in _FLAGS_DEFAULT_FALSE
                elif isinstance(value, bool):
                    flags[flag] = value
                else:
                    raise ConfError(f"{where}.{flag}: expected true or false, got {value!r}")
            unknown = set(raw) - set(PLUGIN_FLAGS) - {"name", "arguments"}
            if unknown:
                raise ConfError(f"{where}: unknown field {sorted(unknown)[0]!r}")
            args = raw.get("arguments") or {}
            if not isinstance(args, dict):
                raise ConfError(f"{where}.arguments: expected a mapping")
            plugins.append(PluginOption(name, flags, dict(args)))
        tiers.append(Tier(plugins))
    for tier in tiers:
        names = {p.name: p for p in tier.plugins}
        drf = names.get("drf")
        if drf is not None and drf.flags.get("enableHierarchy") and "proportion" in names:
            raise ConfError(f"{source}: proportion and drf with hierarchy enabled conflicts")
    configurations: dict[str, dict[str, Any]] = {}
    for ci, raw in enumerate(data.get("configurations") or []):
        if not isinstance(raw, dict) or not raw.get("name"):
            raise ConfError(f"{source}: configurations[{ci}]: expected a mapping with a 'name'")
        configurations[str(raw["name"])] = dict(raw.get("arguments") or {})
    try:
        metrics = parse_metrics_conf(data.get("metrics"), source)
    except MetricsConfError as err:
        raise ConfError(str(err)) from None
    return SchedulerConf(actions, tiers, configurations, metrics)


def default_conf() -> SchedulerConf:
    """pumice's default configuration (``PUMICE_DEFAULT_CONF``)."""
    return parse_conf(PUMICE_DEFAULT_CONF, source="built-in default")
