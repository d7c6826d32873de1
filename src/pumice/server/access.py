"""Access reviews for the single admin user: ``kubectl auth can-i`` and ``kubectl auth whoami``.

pumice has one user, the holder of the token, who may do everything (as ``system:masters`` on a cluster). The
review kinds kubectl sends are answered so: ``SelfSubjectAccessReview`` (``can-i VERB RESOURCE``) is allowed,
``SelfSubjectRulesReview`` (``can-i --list``) lists every verb on every resource, ``SelfSubjectReview``
(``whoami``) names the user. They are not stored, as on kube-apiserver: a review is created and answered.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ADMIN_GROUPS", "ADMIN_USER", "REVIEW_GROUPS", "answer_review", "review_discovery"]

ADMIN_USER = "pumice-admin"
ADMIN_GROUPS = ("system:masters", "system:authenticated")
_REASON = "pumice serves a single user, allowed everything"

#: group -> version -> [(plural, kind, namespaced)]: the review resources served (``create`` only).
REVIEW_GROUPS: dict[str, dict[str, list[tuple[str, str, bool]]]] = {
    "authorization.k8s.io": {"v1": [
        ("selfsubjectaccessreviews", "SelfSubjectAccessReview", False),
        ("selfsubjectrulesreviews", "SelfSubjectRulesReview", False),
        ("subjectaccessreviews", "SubjectAccessReview", False),
        ("localsubjectaccessreviews", "LocalSubjectAccessReview", True),
    ]},
    "authentication.k8s.io": {"v1": [("selfsubjectreviews", "SelfSubjectReview", False)]},
}


def review_discovery(group: str, version: str) -> list[dict[str, Any]] | None:
    """The ``APIResource`` entries of a review group-version (None if it is not one)."""
    resources = REVIEW_GROUPS.get(group, {}).get(version)
    if resources is None:
        return None
    return [{"name": plural, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["create"]}
            for plural, kind, namespaced in resources]


def answer_review(group: str, version: str, plural: str, body: Any) -> dict[str, Any] | None:
    """The created review (its ``status`` filled in), or None if ``plural`` is not a review resource."""
    known = {p: k for p, k, _ in REVIEW_GROUPS.get(group, {}).get(version, [])}
    kind = known.get(plural)
    if kind is None:
        return None
    review = dict(body) if isinstance(body, dict) else {}
    review.setdefault("apiVersion", f"{group}/{version}")
    review.setdefault("kind", kind)
    review["metadata"] = {"creationTimestamp": None}
    if kind == "SelfSubjectReview":
        review["status"] = {"userInfo": {"username": ADMIN_USER, "groups": list(ADMIN_GROUPS)}}
    elif kind == "SelfSubjectRulesReview":
        review["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        review["status"] = {"allowed": True, "reason": _REASON}
    return review
