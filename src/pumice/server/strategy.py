"""What kube-apiserver's registry strategies do to a request body before it is stored (``PrepareForCreate``).

A client's ``status`` is not kept on create for kinds with a status subresource: the status is the
controllers' and kubelets' to write (through ``/status``). Nodes keep theirs (a kubelet registers its node
with its capacity), and a new Namespace is ``Active``. The store applies the other rules of a write itself;
this is the part that only requests from clients get. A Namespace's ``spec.finalizers`` gets ``kubernetes``: deleting
it makes it ``Terminating`` until the namespace controller has deleted what is in it.
"""

from __future__ import annotations

from typing import Any

from .resources import ApiResource

__all__ = ["prepare_for_create"]

#: Kinds that keep the status a create gives them.
_KEEP_STATUS = frozenset({("", "Node")})


def prepare_for_create(resource: ApiResource, body: dict[str, Any]) -> None:
    """Apply ``PrepareForCreate`` to ``body`` in place."""
    key = (resource.group, resource.kind)
    if key == ("", "Namespace"):
        body["status"] = {"phase": "Active"}
        spec = body.get("spec")
        if spec is None or isinstance(spec, dict):
            spec = body["spec"] = dict(spec or {})
            finalizers = spec.get("finalizers")
            if finalizers is None or (isinstance(finalizers, list) and "kubernetes" not in finalizers):
                spec["finalizers"] = [*(finalizers or []), "kubernetes"]  # the namespace controller's
    elif resource.has_status and "status" in body and key not in _KEEP_STATUS:
        del body["status"]
