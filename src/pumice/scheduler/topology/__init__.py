"""Network-topology-aware scheduling: the HyperNode tree, SubJobs and the topology allocate path
(``topology.allocate``)."""

from pumice.scheduler.topology.context import TopologyContext, topology_of
from pumice.scheduler.topology.tree import CLUSTER_TOP, HyperNodeInfo, HyperNodeTree

__all__ = [
    "CLUSTER_TOP",
    "HyperNodeInfo",
    "HyperNodeTree",
    "TopologyContext",
    "topology_of",
]
