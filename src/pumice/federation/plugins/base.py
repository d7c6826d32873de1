"""The shape of a cluster-choice plugin: a filter, a score, and checked arguments.

``filter`` answers why a member cannot take the job (None: it can). ``score`` gives every kept member a raw
score from 0 to 100 (normalized by the plugin across the members, as kube-scheduler's NormalizeScore does);
the framework multiplies it by the plugin's ``weight`` argument. A plugin that has no filter (or no score)
simply keeps the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..config import FederationConfigError
from ..view import Evaluation, MemberView

__all__ = ["PLUGINS", "ClusterPlugin", "register"]

PLUGINS: dict[str, type[ClusterPlugin]] = {}


def register(cls: type[ClusterPlugin]) -> type[ClusterPlugin]:
    PLUGINS[cls.name] = cls
    return cls


class ClusterPlugin:
    name: ClassVar[str] = ""
    #: Arguments besides ``weight`` that the plugin reads, with their defaults.
    ARGUMENTS: ClassVar[Mapping[str, Any]] = {}
    has_filter: ClassVar[bool] = False
    has_score: ClassVar[bool] = False

    def __init__(self, arguments: Mapping[str, Any] | None = None, *, source: str = "") -> None:
        args = dict(arguments or {})
        unknown = sorted(set(args) - set(self.ARGUMENTS) - {"weight"})
        if unknown:
            known = ", ".join(sorted({"weight", *self.ARGUMENTS}))
            raise FederationConfigError(f"{source}: plugin {self.name}: unknown argument {unknown[0]!r} "
                                        f"(known: {known})")
        weight = args.pop("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise FederationConfigError(f"{source}: plugin {self.name}: weight must be a non-negative number")
        self.weight = float(weight)
        self.args = {**self.ARGUMENTS, **args}
        self.source = source

    def bad_argument(self, key: str, problem: str) -> FederationConfigError:
        return FederationConfigError(f"{self.source}: plugin {self.name}: argument {key}: {problem}")

    def filter(self, ev: Evaluation, member: MemberView) -> str | None:
        return None

    def score(self, ev: Evaluation, members: list[MemberView]) -> list[float]:
        return [0.0] * len(members)


def spread_linear(values: list[float], *, lower_is_better: bool) -> list[float]:
    """Values mapped onto 0..100 between their extremes (all 100 when they are equal)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        return [100.0] * len(values)
    if lower_is_better:
        return [100.0 * (hi - v) / (hi - lo) for v in values]
    return [100.0 * (v - lo) / (hi - lo) for v in values]
