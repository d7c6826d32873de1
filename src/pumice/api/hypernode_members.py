"""What a HyperNode's members select: nodes (``type: Node``) and child HyperNodes (``type: HyperNode``).

The one implementation the scheduler's HyperNode tree and the dashboard's topology view share, with Volcano's
rules (``GetMembers`` and ``exactMatchMember`` in ``pkg/scheduler/api/hyper_node_info.go``):

- a ``Node`` member selects by ``exactMatch`` (the name, node or not), ``regexMatch`` (every node whose name
  the pattern finds, unanchored) and ``labelMatch`` (a ``metav1.LabelSelector``), the union of what is set;
  an empty exact name, a pattern that does not compile or a malformed label selector selects nothing at all,
  and a ``labelMatch`` with neither labels nor expressions adds nothing;
- a ``HyperNode`` member names its child by ``exactMatch`` only (a regex or label selector names none);
- a member of any other type selects nothing (Volcano logs it); a member without a type is a ``Node`` one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pumice.api.labels import Selector, SelectorError, label_selector

__all__ = ["HYPERNODE", "NODE", "NodeMembers", "child_hypernode", "member_type", "node_members"]

NODE = "Node"
HYPERNODE = "HyperNode"


def member_type(member: Mapping[str, Any]) -> str:
    """``Node`` (also when unset), ``HyperNode``, or whatever else the member says (it then selects nothing)."""
    kind = member.get("type")
    return NODE if kind is None or kind == "" else str(kind)


def _selector(member: Mapping[str, Any]) -> Mapping[str, Any]:
    selector = member.get("selector")
    return selector if isinstance(selector, Mapping) else {}


def child_hypernode(member: Mapping[str, Any]) -> str:
    """The HyperNode a ``type: HyperNode`` member names ("" for none, and for any other member)."""
    if member_type(member) != HYPERNODE:
        return ""
    exact = _selector(member).get("exactMatch")
    name = exact.get("name") if isinstance(exact, Mapping) else None
    return name if isinstance(name, str) else ""


@dataclass(frozen=True, slots=True)
class NodeMembers:
    """The nodes one ``type: Node`` member selects, compiled.

    ``name`` is its exact name ("" if none): a member even when no such node exists (the scheduler can only use
    the nodes it has; the dashboard shows the others as missing). ``nothing`` is set when the member selects no
    node at all, with the reason in ``error`` when it is malformed.
    """

    name: str = ""
    pattern: re.Pattern[str] | None = None
    labels: Selector | None = None
    nothing: bool = False
    error: str = ""

    @property
    def by_name_only(self) -> bool:
        """Whether the member selects exactly one name (the usual member: no scan of the nodes needed)."""
        return not self.nothing and self.pattern is None and self.labels is None

    def select(self, names: Sequence[str], labels: Sequence[Mapping[str, str] | None],
               index: Mapping[str, int]) -> set[int]:
        """The positions of the selected nodes among ``names`` (with their ``labels``; ``index``: name ->
        position)."""
        if self.nothing:
            return set()
        picked: set[int] = set()
        if self.name:
            j = index.get(self.name)
            if j is not None:
                picked.add(j)
        pattern = self.pattern
        if pattern is not None:
            picked.update(j for j, name in enumerate(names) if pattern.search(name))
        selector = self.labels
        if selector is not None:
            picked.update(j for j, node_labels in enumerate(labels) if selector.matches(node_labels))
        return picked


_NOTHING = NodeMembers(nothing=True)


def node_members(member: Mapping[str, Any]) -> NodeMembers:
    """Compile what a member selects among the nodes (nothing for a member that is not of type ``Node``)."""
    if member_type(member) != NODE:
        return _NOTHING
    selector = _selector(member)
    name = ""
    exact = selector.get("exactMatch")
    if exact is not None:
        exact_name = exact.get("name") if isinstance(exact, Mapping) else None
        if not exact_name or not isinstance(exact_name, str):
            return _NOTHING  # Volcano: an empty exact name selects nothing, whatever else is set
        name = exact_name
    pattern = None
    regex = selector.get("regexMatch")
    if regex is not None:
        text = regex.get("pattern") if isinstance(regex, Mapping) else None
        try:
            pattern = re.compile(text if isinstance(text, str) else "")
        except re.error as err:
            return NodeMembers(nothing=True, error=f"regexMatch {text!r} does not compile: {err}")
    labels = None
    match = selector.get("labelMatch")
    if isinstance(match, Mapping) and (match.get("matchLabels") or match.get("matchExpressions")):
        try:
            labels = label_selector(match)
        except SelectorError as err:
            return NodeMembers(nothing=True, error=f"labelMatch: {err}")
    return NodeMembers(name, pattern, labels)
