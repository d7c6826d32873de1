"""Volcano's agent configuration: the ConfigMap ``volcano-system/volcano-agent-configuration``.

Its key ``colocation-config`` holds JSON: ``globalConfig`` for every node, ``nodesConfig`` (each with a label
``selector``) overriding it for the nodes they select (the last that matches wins). Of it the co-location agent
(:mod:`pumice.nodes.colocation`) reads ``overSubscriptionConfig`` (``enable``, ``overSubscriptionTypes``) and
``evictingConfig`` (the four watermarks); the other sections (CPU and memory QoS, CPU burst, network QoS, CPU
throttling) act on a real node's kernel, which a simulated node does not have: they are accepted and not applied.
A configuration that does not parse or validate is reported in the log and the defaults kept, as Volcano's agent
keeps its previous configuration.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pumice.api.labels import SelectorError, label_selector
from pumice.store import Store, StoreError

__all__ = ["CONFIGMAP", "CONFIG_KEY", "NAMESPACE", "AgentConfig", "NodeColocation", "read_agent_config"]

log = logging.getLogger(__name__)

NAMESPACE = "volcano-system"
CONFIGMAP = "volcano-agent-configuration"
CONFIG_KEY = "colocation-config"
_WATERMARKS = {"evictingCPUHighWatermark": "cpu_high", "evictingMemoryHighWatermark": "memory_high",
               "evictingCPULowWatermark": "cpu_low", "evictingMemoryLowWatermark": "memory_low"}


@dataclass(frozen=True, slots=True)
class NodeColocation:
    """What the agent does on one node (Volcano's defaults)."""

    oversubscription: bool = True
    cpu: bool = True  # overSubscriptionTypes
    memory: bool = True
    cpu_high: int = 80
    memory_high: int = 60
    cpu_low: int = 30
    memory_low: int = 30


DEFAULT = NodeColocation()


def _merge(base: NodeColocation, section: Any, where: str) -> NodeColocation:
    if section is None:
        return base
    if not isinstance(section, Mapping):
        raise ValueError(f"{where}: expected an object")
    changes: dict[str, Any] = {}
    over = section.get("overSubscriptionConfig")
    if over is not None:
        if not isinstance(over, Mapping):
            raise ValueError(f"{where}.overSubscriptionConfig: expected an object")
        enable = over.get("enable")
        if enable is not None:
            if not isinstance(enable, bool):
                raise ValueError(f"{where}.overSubscriptionConfig.enable: expected true or false")
            changes["oversubscription"] = enable
        types = over.get("overSubscriptionTypes")
        if types is not None:
            if not isinstance(types, str):
                raise ValueError(f"{where}.overSubscriptionConfig.overSubscriptionTypes: expected a string")
            named = {t.strip() for t in types.split(",") if t.strip()}
            bad = named - {"cpu", "memory"}
            if bad:
                raise ValueError(f"{where}.overSubscriptionConfig.overSubscriptionTypes: {', '.join(sorted(bad))} "
                                 "is not supported, only cpu and memory")
            changes["cpu"], changes["memory"] = "cpu" in named, "memory" in named
    evicting = section.get("evictingConfig")
    if evicting is not None:
        if not isinstance(evicting, Mapping):
            raise ValueError(f"{where}.evictingConfig: expected an object")
        for key, attr in _WATERMARKS.items():
            value = evicting.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{where}.evictingConfig.{key}: must be a positive number")
            changes[attr] = value
    merged = replace(base, **changes)
    if merged.cpu_low > merged.cpu_high:
        raise ValueError(f"{where}.evictingConfig: cpu evicting low watermark is higher than high watermark")
    if merged.memory_low > merged.memory_high:
        raise ValueError(f"{where}.evictingConfig: memory evicting low watermark is higher than high watermark")
    return merged


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """The parsed ConfigMap: the global settings and the per-selector overrides, in order."""

    global_: NodeColocation = DEFAULT
    nodes: tuple[tuple[Any, Any], ...] = ()  # (compiled selector, section)

    def for_node(self, node: Mapping[str, Any]) -> NodeColocation:
        labels = (node.get("metadata") or {}).get("labels") or {}
        chosen = None
        for selector, section in self.nodes:
            if selector.matches(labels):
                chosen = section  # the last match wins
        if chosen is None:
            return self.global_
        try:
            return _merge(self.global_, chosen, f"{CONFIGMAP}: nodesConfig")
        except ValueError as err:
            log.warning("%s; the global configuration is kept for node %s", err,
                        (node.get("metadata") or {}).get("name"))
            return self.global_


def parse_agent_config(text: str) -> AgentConfig:
    """Parse ``colocation-config``; ``ValueError`` says which field is wrong."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{CONFIGMAP}/{CONFIG_KEY}: not JSON: {err}") from None
    if not isinstance(doc, Mapping):
        raise ValueError(f"{CONFIGMAP}/{CONFIG_KEY}: expected an object")
    glob = _merge(DEFAULT, doc.get("globalConfig"), "globalConfig")
    nodes = []
    for i, entry in enumerate(doc.get("nodesConfig") or []):
        if not isinstance(entry, Mapping):
            raise ValueError(f"nodesConfig[{i}]: expected an object")
        try:
            selector = label_selector(entry.get("selector"))
        except SelectorError as err:
            raise ValueError(f"nodesConfig[{i}].selector: {err}") from None
        _merge(glob, entry, f"nodesConfig[{i}]")  # checked now, merged per node
        nodes.append((selector, entry))
    return AgentConfig(glob, tuple(nodes))


class AgentConfigReader:
    """Reads the ConfigMap from a store when asked, parsing it again only when its resourceVersion moved."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._version: object = None
        self._config = AgentConfig()

    def read(self) -> AgentConfig:
        try:
            cm = self.store.get("configmaps", NAMESPACE, CONFIGMAP, copy=False)
        except StoreError:
            self._version = None
            self._config = AgentConfig()
            return self._config
        version = (cm.get("metadata") or {}).get("resourceVersion")
        if version is not None and version == self._version:
            return self._config
        self._version = version
        text = (cm.get("data") or {}).get(CONFIG_KEY)
        if text is None:
            self._config = AgentConfig()
            return self._config
        try:
            self._config = parse_agent_config(str(text))
        except ValueError as err:
            log.warning("configmap %s/%s: %s; the previous configuration is kept", NAMESPACE, CONFIGMAP, err)
        return self._config


def read_agent_config(store: Store) -> AgentConfig:
    """The agent configuration in ``store`` (Volcano's defaults when there is none)."""
    return AgentConfigReader(store).read()
