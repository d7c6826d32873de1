"""``federation.yaml``: timings, policies and the cluster-choice plugins in tiers (like volcano-scheduler.conf).

Every key is checked: an unknown key, plugin, flag or value is a ``FederationConfigError`` naming the file
and the field. Durations are seconds or Go durations (``5s``, ``3m``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pumice.nodes import parse_duration

from . import names

__all__ = [
    "DEFAULT_CONFIG",
    "FederationConfig",
    "FederationConfigError",
    "PluginConfig",
    "default_config",
    "load_config",
    "parse_config",
]

#: The configuration used when none is given (docs/federation.md explains each choice).
DEFAULT_CONFIG = """\
dispatchPeriod: 1s
probePeriod: 5s
gracePeriod: 3m
leaseDuration: 2m
redispatch: failover
unfenced: wait
maxRedispatches: 3
reservationTimeout: 5m
pendingTimeout: 10m
queues: proportion
split:
  maxParts: 4
tiers:
- plugins:
  - name: clusteraffinity
  - name: tainttoleration
  - name: hardware
  - name: gang
  - name: network-topology
  - name: locality
- plugins:
  - name: cost
- plugins:
  - name: loadbalance
"""

_TOP_KEYS = {"dispatchPeriod", "probePeriod", "gracePeriod", "leaseDuration", "redispatch", "unfenced",
             "maxRedispatches", "reservationTimeout", "pendingTimeout", "queues", "split", "tiers", "gpuModelLabel"}
_PLUGIN_KEYS = {"name", "enableFilter", "enableScore", "arguments"}


class FederationConfigError(ValueError):
    """A federation configuration that cannot be used (one line: source, field, problem)."""


@dataclass
class PluginConfig:
    name: str
    filter: bool = True
    score: bool = True
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class FederationConfig:
    dispatch_period: float = 1.0
    probe_period: float = 5.0
    grace_period: float = 180.0
    lease_duration: float = 120.0
    #: ``failover``: a lost member's unfinished jobs go elsewhere; ``none``: they wait for it.
    redispatch: str = "failover"
    #: For a member without a fence agent: ``wait`` until it answers again, or ``force`` after the grace period.
    unfenced: str = "wait"
    max_redispatches: int = 3
    reservation_timeout: float = 300.0
    #: A copy that has not started in its member after this long is taken back and dispatched elsewhere
    #: (0: never).
    pending_timeout: float = 600.0
    #: ``proportion`` (weights, flat, Volcano's default) or ``capacity`` (deserved/capability, hierarchy).
    queues: str = "proportion"
    max_parts: int = 4
    gpu_model_label: str = names.GPU_MODEL_LABEL
    tiers: list[list[PluginConfig]] = field(default_factory=list)
    source: str = "federation configuration"

    def plugins(self) -> list[PluginConfig]:
        return [p for tier in self.tiers for p in tier]


def _error(source: str, where: str, problem: str) -> FederationConfigError:
    return FederationConfigError(f"{source}: {where}: {problem}" if where else f"{source}: {problem}")


def _seconds(data: Mapping[str, Any], key: str, default: float, source: str) -> float:
    if key not in data:
        return default
    try:
        value = parse_duration(data[key])
    except ValueError as err:
        raise _error(source, key, str(err)) from None
    if value <= 0:
        raise _error(source, key, "must be positive")
    return value


def _choice(data: Mapping[str, Any], key: str, default: str, allowed: tuple[str, ...], source: str) -> str:
    value = data.get(key, default)
    if value not in allowed:
        raise _error(source, key, f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def parse_config(text: str, *, source: str = "federation configuration",
                 known_plugins: set[str] | None = None) -> FederationConfig:
    """Read a configuration; ``known_plugins`` (default: the registered ones) checks plugin names."""
    if known_plugins is None:
        from .plugins import PLUGINS

        known_plugins = set(PLUGINS)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise _error(source, where, f"not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _error(source, "", "expected a mapping (dispatchPeriod, tiers, ...)")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _error(source, unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
    cfg = FederationConfig(source=source)
    cfg.dispatch_period = _seconds(data, "dispatchPeriod", cfg.dispatch_period, source)
    cfg.probe_period = _seconds(data, "probePeriod", cfg.probe_period, source)
    cfg.grace_period = _seconds(data, "gracePeriod", cfg.grace_period, source)
    cfg.lease_duration = _seconds(data, "leaseDuration", cfg.lease_duration, source)
    cfg.reservation_timeout = _seconds(data, "reservationTimeout", cfg.reservation_timeout, source)
    cfg.pending_timeout = 0.0 if data.get("pendingTimeout") in (0, "0") else _seconds(
        data, "pendingTimeout", cfg.pending_timeout, source)
    if cfg.grace_period < 1.2 * cfg.lease_duration:
        raise _error(source, "gracePeriod", f"must be at least 1.2 x leaseDuration ({cfg.lease_duration:g}s): a "
                                            "member must have fenced its jobs before they run elsewhere")
    if cfg.probe_period >= cfg.lease_duration:
        raise _error(source, "probePeriod", f"must be shorter than leaseDuration ({cfg.lease_duration:g}s)")
    cfg.redispatch = _choice(data, "redispatch", cfg.redispatch, ("failover", "none"), source)
    cfg.unfenced = _choice(data, "unfenced", cfg.unfenced, ("wait", "force"), source)
    cfg.queues = _choice(data, "queues", cfg.queues, ("proportion", "capacity"), source)
    mr = data.get("maxRedispatches", cfg.max_redispatches)
    if not isinstance(mr, int) or isinstance(mr, bool) or mr < 0:
        raise _error(source, "maxRedispatches", f"must be a non-negative integer, got {mr!r}")
    cfg.max_redispatches = mr
    label = data.get("gpuModelLabel", cfg.gpu_model_label)
    if not isinstance(label, str) or not label:
        raise _error(source, "gpuModelLabel", "must be a node label key")
    cfg.gpu_model_label = label
    split = data.get("split") or {}
    if not isinstance(split, Mapping) or set(split) - {"maxParts"}:
        raise _error(source, "split", "expected {maxParts: N}")
    parts = split.get("maxParts", cfg.max_parts)
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise _error(source, "split.maxParts", f"must be a positive integer, got {parts!r}")
    cfg.max_parts = parts
    raw_tiers = data.get("tiers")
    if raw_tiers is None:
        raw_tiers = yaml.safe_load(DEFAULT_CONFIG)["tiers"]
    if not isinstance(raw_tiers, list) or not raw_tiers:
        raise _error(source, "tiers", "expected a non-empty list of {plugins: [...]}")
    seen: set[str] = set()
    for ti, raw_tier in enumerate(raw_tiers):
        if not isinstance(raw_tier, Mapping) or set(raw_tier) != {"plugins"} or not isinstance(
                raw_tier["plugins"], list):
            raise _error(source, f"tiers[{ti}]", "expected a mapping with a 'plugins' list")
        tier: list[PluginConfig] = []
        for pi, raw in enumerate(raw_tier["plugins"]):
            where = f"tiers[{ti}].plugins[{pi}]"
            if not isinstance(raw, Mapping) or not raw.get("name"):
                raise _error(source, where, "expected a mapping with a 'name'")
            name = str(raw["name"])
            if name not in known_plugins:
                raise _error(source, f"{where}.name", f"unknown plugin {name!r} (known: "
                                                      f"{', '.join(sorted(known_plugins))})")
            if name in seen:
                raise _error(source, f"{where}.name", f"plugin {name!r} is configured twice")
            seen.add(name)
            bad = sorted(set(raw) - _PLUGIN_KEYS)
            if bad:
                raise _error(source, f"{where}.{bad[0]}", f"unknown field (use {', '.join(sorted(_PLUGIN_KEYS))})")
            flags = {}
            for flag in ("enableFilter", "enableScore"):
                value = raw.get(flag, True)
                if not isinstance(value, bool):
                    raise _error(source, f"{where}.{flag}", f"expected true or false, got {value!r}")
                flags[flag] = value
            args = raw.get("arguments") or {}
            if not isinstance(args, Mapping):
                raise _error(source, f"{where}.arguments", "expected a mapping")
            tier.append(PluginConfig(name, flags["enableFilter"], flags["enableScore"], dict(args)))
        cfg.tiers.append(tier)
    return cfg


def default_config() -> FederationConfig:
    return parse_config(DEFAULT_CONFIG, source="built-in default")


def load_config(path: Path | str) -> FederationConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise FederationConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    return parse_config(text, source=str(path))
