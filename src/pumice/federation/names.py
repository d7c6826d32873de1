"""Resource names, labels and annotations of the federation, in one place (all documented in docs/federation.md)."""

from __future__ import annotations

from pumice.api.resources import JOBS, QUEUES

__all__ = [
    "CLUSTERS",
    "CLUSTER_AFFINITY",
    "CLUSTER_LABEL",
    "CLUSTER_SELECTOR",
    "CLUSTER_TOLERATIONS",
    "CONFIGMAPS",
    "DECISION",
    "DEPENDS_ON",
    "DISPATCH",
    "FENCE_ACK",
    "FENCE_NAME",
    "FENCE_NAMESPACE",
    "GPU_MODEL_LABEL",
    "HOST_UID",
    "HYPERNODES",
    "JOBS",
    "MANAGED_LABEL",
    "NAMESPACES",
    "NODES",
    "PART_OF",
    "PLACEMENT",
    "PODS",
    "PRIORITYCLASSES",
    "PROVIDER_LABEL",
    "QUEUES",
    "REDISPATCH",
    "REGION_AFFINITY",
    "REGION_LABEL",
    "SPLIT",
    "SPREAD_GROUP",
    "ZONE_AFFINITY",
    "ZONE_LABEL",
]

CLUSTERS = "clusters.federation.pumice.io"
PODS = "pods"
NAMESPACES = "namespaces"
CONFIGMAPS = "configmaps"
PRIORITYCLASSES = "priorityclasses.scheduling.k8s.io"
NODES = "nodes"
HYPERNODES = "hypernodes.topology.volcano.sh"

# --- on the host's Jobs ---------------------------------------------------------------------------------
#: Label: the member a job runs in (``a_b`` for a job split over members a and b).
CLUSTER_LABEL = "federation.pumice.io/cluster"
#: Annotation (JSON): where the federation placed the job — dispatch number and parts (see ``placement.py``).
PLACEMENT = "federation.pumice.io/placement"
#: Annotation (JSON): the last cluster choice — every member kept or rejected, why, and the scores.
DECISION = "federation.pumice.io/decision"
#: Annotation: a label selector (kubectl syntax) the member's Cluster labels must match.
CLUSTER_SELECTOR = "federation.pumice.io/cluster-selector"
#: Annotation (JSON/YAML): ``{clusterNames, exclude, labelSelector, preferred: [{weight, clusterNames,
#: labelSelector}]}``.
CLUSTER_AFFINITY = "federation.pumice.io/cluster-affinity"
#: Annotation (JSON/YAML list of tolerations): member taints the job tolerates.
CLUSTER_TOLERATIONS = "federation.pumice.io/cluster-tolerations"
#: Annotation: preferred regions / zones, most preferred first (``eu-west,us-east``).
REGION_AFFINITY = "federation.pumice.io/region-affinity"
ZONE_AFFINITY = "federation.pumice.io/zone-affinity"
#: Annotation: jobs of one spread group are spread over regions (or what the locality plugin spreads by).
SPREAD_GROUP = "federation.pumice.io/spread-group"
#: Annotation: other jobs (``name`` or ``namespace/name``, comma-separated) that must complete first.
DEPENDS_ON = "federation.pumice.io/depends-on"
#: Annotation: ``by-task`` lets a job too large for any one member be split by task over several.
SPLIT = "federation.pumice.io/split"
#: Annotation: ``never`` keeps a job on its member when the member is lost (no re-dispatch).
REDISPATCH = "federation.pumice.io/redispatch"

# --- on the members' copies -----------------------------------------------------------------------------
#: Label ``"true"`` on every Job the federation created in a member.
MANAGED_LABEL = "federation.pumice.io/managed"
#: Annotation: uid of the host's Job the copy belongs to.
HOST_UID = "federation.pumice.io/host-uid"
#: Annotation: ``namespace/name`` of the host's Job (parts of a split job are named differently).
PART_OF = "federation.pumice.io/part-of"
#: Annotation: the host Job's dispatch number this copy was made for (older copies are stale).
DISPATCH = "federation.pumice.io/dispatch"

# --- fencing (a lease the federation renews in each member) ---------------------------------------------
FENCE_NAMESPACE = "pumice-system"
FENCE_NAME = "pumice-federation-fence"
#: Annotation the member's fence agent puts on the lease: it is there and fences at this duration.
FENCE_ACK = "federation.pumice.io/fence-agent"

# --- on the members' nodes and Cluster objects ----------------------------------------------------------
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
PROVIDER_LABEL = "federation.pumice.io/provider"
#: The node label naming a node's GPU model (NVIDIA GPU feature discovery's).
GPU_MODEL_LABEL = "nvidia.com/gpu.product"
