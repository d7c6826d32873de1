"""Cluster-choice plugins, registered by name (``PLUGINS``); ``federation.yaml`` enables them in tiers."""

from . import affinity, cost, gang, hardware, loadbalance, locality, taints, topology  # noqa: F401 (registration)
from .base import PLUGINS, ClusterPlugin, register

__all__ = ["PLUGINS", "ClusterPlugin", "register"]
