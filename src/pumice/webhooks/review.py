"""``AdmissionReview`` in and out (``admission.k8s.io/v1`` and ``v1beta1``), and JSON patches of defaults.

The API server POSTs an ``AdmissionReview`` whose ``request`` names the operation, the resource and the
objects; the answer is the same kind and version with a ``response``: ``allowed``, and for a mutating
webhook the changes as a base64 RFC 6902 JSON patch; for a refusal a ``status`` whose ``message`` the API
server prefixes with ``admission webhook "NAME" denied the request:`` (as Volcano's webhooks answer).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from pumice.api.reader import load_json

__all__ = ["REVIEW_VERSIONS", "Review", "ReviewError", "allow", "deny", "json_patch", "parse_review"]

Obj = dict[str, Any]
#: The ``AdmissionReview`` versions served (``admissionReviewVersions`` of the configurations).
REVIEW_VERSIONS = ("v1", "v1beta1")


class ReviewError(ValueError):
    """The body is not an AdmissionReview this server can answer."""


@dataclass(frozen=True, slots=True)
class Review:
    """The parts of an ``AdmissionRequest`` the webhooks read."""

    api_version: str
    uid: str
    operation: str
    resource: str
    namespace: str
    name: str
    object: Obj | None
    old_object: Obj | None


def parse_review(body: bytes) -> Review:
    try:
        doc = load_json(body)
    except ValueError as err:  # not JSON, or nested too deeply (pumice.api.reader's limit)
        raise ReviewError(f"the body is not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionReview":
        raise ReviewError("the body is not an AdmissionReview")
    api_version = str(doc.get("apiVersion") or "")
    if api_version not in {f"admission.k8s.io/{v}" for v in REVIEW_VERSIONS}:
        raise ReviewError(f"unsupported AdmissionReview version {api_version!r}")
    request = doc.get("request")
    if not isinstance(request, dict) or not request.get("uid"):
        raise ReviewError("the AdmissionReview has no request uid")
    resource = request.get("resource") or {}
    if not isinstance(resource, dict):
        raise ReviewError("request.resource: expected an object")
    obj, old = request.get("object"), request.get("oldObject")
    return Review(
        api_version=api_version,
        uid=str(request["uid"]),
        operation=str(request.get("operation") or ""),
        resource=str(resource.get("resource") or ""),
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
        object=obj if isinstance(obj, dict) else None,
        old_object=old if isinstance(old, dict) else None,
    )


def _answer(review: Review | None, response: Obj) -> Obj:
    api_version = review.api_version if review is not None else "admission.k8s.io/v1"
    response["uid"] = review.uid if review is not None else ""
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def allow(review: Review, patch: list[Obj] | None = None) -> Obj:
    """Admit, with ``patch`` (JSON patch operations) when there is one."""
    response: Obj = {"allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return _answer(review, response)


def deny(review: Review | None, message: str) -> Obj:
    """Refuse with ``message`` (no code: the API server answers the client 400, as for Volcano's refusals)."""
    return _answer(review, {"allowed": False, "status": {"message": message}})


# ---------------------------------------------------------------------------- JSON patch


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def json_patch(old: Any, new: Any, path: str = "") -> list[Obj]:
    """RFC 6902 operations turning ``old`` into ``new``: per key for mappings, per index for lists of the
    same length, a whole replacement otherwise."""
    if old == new and type(old) is type(new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[Obj] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            where = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": where, "value": value})
            else:
                ops.extend(json_patch(old[key], value, where))
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [op for index, (a, b) in enumerate(zip(old, new, strict=True))
                for op in json_patch(a, b, f"{path}/{index}")]
    return [{"op": "replace", "path": path, "value": new}]
