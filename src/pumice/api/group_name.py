"""Which PodGroup a pod belongs to: its group-name annotation, as Volcano's scheduler reads it.

Two annotation keys name the group (``scheduling/v1beta1/labels.go``): Kubernetes' ``scheduling.k8s.io/group-name``,
which wins, and Volcano's ``scheduling.volcano.sh/group-name``; an empty value names none. The group lives in
the pod's namespace, so the job key is ``<namespace>/<group>``. Writers (the job and PodGroup controllers) set
and test ``GROUP_NAME`` alone, as Volcano's controllers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GROUP_NAME", "GROUP_NAME_ANNOTATIONS", "VOLCANO_GROUP_NAME", "group_key", "group_name"]

GROUP_NAME = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
#: the keys a reader looks at, in order
GROUP_NAME_ANNOTATIONS = (GROUP_NAME, VOLCANO_GROUP_NAME)


def group_name(pod: Mapping[str, Any]) -> str:
    """The name of the PodGroup ``pod`` belongs to ("" if none)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key in GROUP_NAME_ANNOTATIONS:
        value = annotations.get(key)
        if value:
            return str(value)
    return ""


def group_key(pod: Mapping[str, Any]) -> str:
    """``<namespace>/<group>`` of the PodGroup ``pod`` belongs to ("" if none; no namespace means ``default``)."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    for key in GROUP_NAME_ANNOTATIONS:
        value = annotations.get(key)
        if value:
            return f"{meta.get('namespace') or 'default'}/{value}"
    return ""
