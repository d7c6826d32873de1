"""kube-apiserver's validation of RBAC objects (``pkg/apis/rbac/validation``): what makes a binding usable.

The embedded API server stores RBAC objects but authorizes nobody by them (its one user is an admin); the
checks keep a bundle that a real cluster would refuse from being accepted here.
"""

from __future__ import annotations

from typing import Any

from pumice.store import Invalid

__all__ = ["validate_rbac"]

Obj = dict[str, Any]
_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def validate_rbac(obj: Obj, old: Obj | None) -> None:
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    problems: list[str] = []
    if kind in ("Role", "ClusterRole"):
        for i, rule in enumerate(obj.get("rules") or []):
            if not (rule or {}).get("verbs"):
                problems.append(f"rules[{i}].verbs: Required value: verbs must contain at least one value")
            if not (rule or {}).get("nonResourceURLs") and (rule or {}).get("apiGroups") is None:
                problems.append(f"rules[{i}].apiGroups: Required value: resource rules must supply at least one "
                                "api group")
    else:
        ref = obj.get("roleRef")
        if not isinstance(ref, dict):
            problems.append("roleRef: Required value")
        else:
            allowed = ("Role", "ClusterRole") if kind == "RoleBinding" else ("ClusterRole",)
            if ref.get("apiGroup") != _GROUP:
                problems.append(f'roleRef.apiGroup: Unsupported value: "{ref.get("apiGroup") or ""}": supported '
                                f'values: "{_GROUP}"')
            if ref.get("kind") not in allowed:
                problems.append(f'roleRef.kind: Unsupported value: "{ref.get("kind") or ""}": supported values: '
                                + ", ".join(f'"{k}"' for k in allowed))
            if not ref.get("name"):
                problems.append("roleRef.name: Required value")
            if old is not None and old.get("roleRef") != ref:
                problems.append("roleRef: Invalid value: cannot change roleRef")
        for i, subject in enumerate(obj.get("subjects") or []):
            subject = subject or {}
            if subject.get("kind") not in _SUBJECT_KINDS:
                problems.append(f'subjects[{i}].kind: Unsupported value: "{subject.get("kind") or ""}": supported '
                                'values: "ServiceAccount", "User", "Group"')
            if not subject.get("name"):
                problems.append(f"subjects[{i}].name: Required value")
            if subject.get("kind") == "ServiceAccount" and kind == "ClusterRoleBinding" and not subject.get(
                    "namespace"):
                problems.append(f"subjects[{i}].namespace: Required value")
    if problems:
        raise Invalid(f'{kind}.{_GROUP} "{meta.get("name")}" is invalid: {"; ".join(problems)}')
