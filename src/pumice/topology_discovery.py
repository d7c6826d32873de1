"""HyperNodes from node labels: Volcano's label discoverer (``source: label``) as a pure function.

Volcano's HyperNode controller can build the network topology from node labels
(``pkg/controllers/hypernode/discovery/label``). Its configuration names *topology types*, each a
list of node labels from the top of the network down to ``kubernetes.io/hostname``::

    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            fat-tree:
              - nodeLabel: example.com/fabric      # tier 3
              - nodeLabel: example.com/spine       # tier 2
              - nodeLabel: example.com/leaf        # tier 1
              - nodeLabel: kubernetes.io/hostname

The label just above the hostname is tier 1; nodes sharing its value form one HyperNode whose
members are those nodes (``exactMatch``); each higher label forms HyperNodes of the HyperNodes
below it. A node missing a level stops its chain there. Every HyperNode is labelled
``volcano.sh/network-topology-source: label`` and ``<label key>: <value>``, its ``tierName`` is the
label key, and (as in Volcano) one label key/value pair names one HyperNode across types.

The simpler form ``{example.com/ib-cluster: 2, example.com/leaf: 1}`` (node label -> tier) is
accepted too, as are a whole ``volcano-controller.conf`` document, one discovery source entry, or
its ``config`` alone.

Names differ from Volcano on purpose: Volcano appends five *random* characters
(``hypernode-<type>-tier<N>-x7k2q``) and re-uses a name once created; with no store to remember
names, pumice derives the five characters from a hash of the type, tier, label key and value, so the
same labels always give the same HyperNodes (``discover_hypernodes`` is deterministic).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pumice.api.reader import InputError, load_yaml, read_text_file

HOSTNAME_LABEL = "kubernetes.io/hostname"
SOURCE_LABEL = "volcano.sh/network-topology-source"
SOURCE = "label"
API_VERSION = "topology.volcano.sh/v1alpha1"
#: Volcano rejects longer topology type names (``networkTopologyTypeLength``).
MAX_TYPE_NAME = 20
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


class DiscoveryConfigError(ValueError):
    """The discovery configuration cannot be used; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class TopologyType:
    """One topology type: its node labels bottom-up (tier-1 label first) and their tiers."""

    name: str
    labels: tuple[str, ...]
    tiers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DiscoveryConfig:
    types: tuple[TopologyType, ...]


# --- configuration -----------------------------------------------------------------------------
def _from_types(types: Any) -> DiscoveryConfig:
    if not isinstance(types, dict) or not types:
        raise DiscoveryConfigError("networkTopologyTypes: expected a map of type name -> list of nodeLabel")
    out = []
    for name in sorted(types):
        levels = types[name]
        if len(str(name)) > MAX_TYPE_NAME:
            raise DiscoveryConfigError(f"networkTopologyTypes: type name {name!r} is longer than {MAX_TYPE_NAME}")
        if not isinstance(levels, list) or not levels:
            raise DiscoveryConfigError(f"networkTopologyTypes.{name}: expected a list of {{nodeLabel: ...}}")
        labels = []
        for level in levels:
            label = level.get("nodeLabel") if isinstance(level, dict) else None
            if not isinstance(label, str) or not label:
                raise DiscoveryConfigError(f"networkTopologyTypes.{name}: every entry needs a nodeLabel")
            labels.append(label)
        if len(set(labels)) != len(labels):
            raise DiscoveryConfigError(f"networkTopologyTypes.{name}: duplicate node labels")
        if labels[-1] != HOSTNAME_LABEL:
            raise DiscoveryConfigError(
                f"networkTopologyTypes.{name}: the last nodeLabel must be {HOSTNAME_LABEL} (labels go top -> bottom)")
        bottom_up = tuple(reversed(labels[:-1]))
        if not bottom_up:
            raise DiscoveryConfigError(f"networkTopologyTypes.{name}: no label above {HOSTNAME_LABEL}")
        out.append(TopologyType(str(name), bottom_up, tuple(range(1, len(bottom_up) + 1))))
    return DiscoveryConfig(tuple(out))


def _from_tiers(tiers: dict[str, Any]) -> DiscoveryConfig:
    """``{label: tier}``: one topology type (named ``label``)."""
    pairs = []
    for label, tier in tiers.items():
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 1:
            raise DiscoveryConfigError(f"{label}: tier must be a positive integer, got {tier!r}")
        if label == HOSTNAME_LABEL:
            continue
        pairs.append((tier, label))
    if not pairs:
        raise DiscoveryConfigError("no node label with a tier")
    pairs.sort()
    if len({t for t, _ in pairs}) != len(pairs):
        raise DiscoveryConfigError("two node labels have the same tier")
    return DiscoveryConfig((TopologyType(SOURCE, tuple(lb for _, lb in pairs), tuple(t for t, _ in pairs)),))


def parse_discovery_config(data: Any) -> DiscoveryConfig:
    """Any of the accepted forms (see the module docstring) -> a configuration."""
    if isinstance(data, DiscoveryConfig):
        return data
    if isinstance(data, dict) and data.get("kind") == "ConfigMap":
        text = (data.get("data") or {}).get("volcano-controller.conf")
        if text is None:
            raise DiscoveryConfigError("ConfigMap has no volcano-controller.conf key")
        try:
            inner = load_yaml(text) if isinstance(text, str) else text
        except (InputError, yaml.YAMLError, ValueError) as err:
            raise DiscoveryConfigError(f"volcano-controller.conf: {err}") from None
        return parse_discovery_config(inner)
    if not isinstance(data, dict) or not data:
        raise DiscoveryConfigError("expected a mapping (networkTopologyDiscovery, networkTopologyTypes or label: tier)")
    if "networkTopologyDiscovery" in data:
        sources = data["networkTopologyDiscovery"] or []
        if not isinstance(sources, list):
            raise DiscoveryConfigError("networkTopologyDiscovery: expected a list of sources")
        for entry in sources:
            if isinstance(entry, dict) and entry.get("source") == SOURCE and entry.get("enabled", True) is not False:
                return parse_discovery_config(entry)
        raise DiscoveryConfigError("networkTopologyDiscovery: no enabled source 'label'")
    if "source" in data:
        if data["source"] != SOURCE:
            raise DiscoveryConfigError(f"source {data['source']!r}: only 'label' discovery works offline")
        return parse_discovery_config(data.get("config") or {})
    if "networkTopologyTypes" in data:
        return _from_types(data["networkTopologyTypes"])
    return _from_tiers(data)


def load_discovery_config(path: str | Path) -> DiscoveryConfig:
    """Read a YAML (or JSON) file holding any accepted form."""
    path = Path(path)
    try:
        data = load_yaml(read_text_file(path))
    except (OSError, yaml.YAMLError, ValueError) as err:
        raise DiscoveryConfigError(f"{path}: {err}") from None
    try:
        return parse_discovery_config(data)
    except DiscoveryConfigError as err:
        raise DiscoveryConfigError(f"{path}: {err}") from None


# --- discovery ----------------------------------------------------------------------------------
def _clean(name: str) -> str:
    """Volcano ``cleanString``: lower-case letters, digits, '.', '-'; anything else becomes '-'."""
    return "".join(c.lower() if c.isalpha() else c if c.isdigit() or c in ".-" else "-" for c in name)


def _suffix(*parts: str, salt: int = 0) -> str:
    digest = hashlib.sha256("\x00".join([*parts, str(salt)]).encode()).digest()
    value = int.from_bytes(digest[:8], "big")
    out = []
    for _ in range(5):
        value, r = divmod(value, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(out)


def hypernode_name(type_name: str, tier: int, key: str, value: str, salt: int = 0) -> str:
    """``hypernode-<type>-tier<N>-<5 chars>``: the characters hash type, tier, label key and value."""
    return f"hypernode-{_clean(type_name)}-tier{tier}-{_suffix(type_name, str(tier), key, value, salt=salt)}"


def _member(kind: str, name: str) -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def discover_hypernodes(nodes: Iterable[dict[str, Any]], config: Any) -> list[dict[str, Any]]:
    """HyperNode wire dicts for ``nodes`` (Node dicts) under ``config`` (any accepted form), sorted
    by (tier, name). Deterministic: the same labels give the same names, members and order."""
    conf = parse_discovery_config(config)
    # (label key, value) -> [type, tier, tierName, members]; first type to reach a pair owns it.
    found: dict[tuple[str, str], dict[str, Any]] = {}
    names: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    node_list = sorted(nodes, key=lambda n: (n.get("metadata") or {}).get("name", ""))

    def name_of(t: TopologyType, tier: int, key: str, value: str) -> str:
        pair = (key, value)
        name = names.get(pair)
        if name is None:
            salt = 0
            name = hypernode_name(t.name, tier, key, value)
            while name in used:  # a hash collision: deterministic, since pairs come in a fixed order
                salt += 1
                name = hypernode_name(t.name, tier, key, value, salt)
            used.add(name)
            names[pair] = name
        return name

    for t in conf.types:
        for node in node_list:
            meta = node.get("metadata") or {}
            labels = meta.get("labels") or {}
            member, member_kind = meta.get("name", ""), "Node"
            if not member:
                continue
            for key, tier in zip(t.labels, t.tiers, strict=True):
                value = labels.get(key)
                if value is None:
                    break
                name = name_of(t, tier, key, value)
                entry = found.setdefault((key, value), {"name": name, "tier": tier, "tierName": key,
                                                        "labels": {key: value}, "members": {}})
                entry["members"][member] = member_kind
                member, member_kind = name, "HyperNode"
    out: list[dict[str, Any]] = []
    for entry in found.values():
        out.append({
            "apiVersion": API_VERSION,
            "kind": "HyperNode",
            "metadata": {"name": entry["name"], "labels": {SOURCE_LABEL: SOURCE, **entry["labels"]}},
            "spec": {
                "tier": entry["tier"],
                "tierName": entry["tierName"],
                "members": [_member(kind, name) for name, kind in sorted(entry["members"].items())],
            },
        })
    out.sort(key=lambda h: (h["spec"]["tier"], h["metadata"]["name"]))
    return out


def with_discovered_hypernodes(objects: list[dict[str, Any]], config: Any) -> list[dict[str, Any]]:
    """``objects`` with HyperNodes discovered from its Nodes: earlier label-sourced HyperNodes are
    replaced (as Volcano's controller reconciles its source), manual ones kept unless renamed over."""
    discovered = discover_hypernodes([o for o in objects if o.get("kind") == "Node"], config)
    names = {h["metadata"]["name"] for h in discovered}
    kept = []
    for obj in objects:
        if obj.get("kind") == "HyperNode":
            meta = obj.get("metadata") or {}
            if (meta.get("labels") or {}).get(SOURCE_LABEL) == SOURCE or meta.get("name") in names:
                continue
        kept.append(obj)
    return kept + discovered
