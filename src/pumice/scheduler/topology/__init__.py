"""Network-topology-aware scheduling: the HyperNode tree, SubJobs and the topology allocate path."""

from pumice.scheduler.topology.allocate import allocate_for_job, allocate_job_turn, uses_topology_path
from pumice.scheduler.topology.context import TopologyContext, topology_of
from pumice.scheduler.topology.tree import CLUSTER_TOP, HyperNodeInfo, HyperNodeTree

__all__ = [
    "CLUSTER_TOP",
    "HyperNodeInfo",
    "HyperNodeTree",
    "TopologyContext",
    "allocate_for_job",
    "allocate_job_turn",
    "topology_of",
    "uses_topology_path",
]
