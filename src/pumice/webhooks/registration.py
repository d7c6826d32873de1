"""Mutating/ValidatingWebhookConfigurations of the webhooks, and their registration with the API server.

One configuration per webhook, as Volcano's chart declares them (``templates/webhooks.yaml``):
``failurePolicy: Fail``, ``matchPolicy: Equivalent``, ``timeoutSeconds: 10``, the install namespace and
``kube-system`` left out. The server registers them itself, as Volcano's webhook manager does: a missing
configuration is created; an existing one (from ``deploy/``, or a previous run) gets this server's
``clientConfig`` — where to call it and the CA bundle of its freshly made certificate — and keeps whatever
else an administrator set (rules, selectors, timeouts, failure policy).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pumice.client import ApiError, KubeClient, Resource

from .admit import Webhook
from .review import REVIEW_VERSIONS

__all__ = [
    "CONFIG_PREFIX",
    "MUTATING",
    "VALIDATING",
    "Endpoint",
    "configuration",
    "configurations",
    "register",
    "unregister",
]

Obj = dict[str, Any]
#: Configuration names are ``pumice-admission-<path with dashes>`` (``pumice-admission-jobs-mutate``).
CONFIG_PREFIX = "pumice-admission"
MUTATING = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                    "MutatingWebhookConfiguration", False)
VALIDATING = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                      "ValidatingWebhookConfiguration", False)
TIMEOUT_SECONDS = 10


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the API server calls the webhooks: a base URL, or a Service in the cluster."""

    url: str | None = None
    service_namespace: str | None = None
    service_name: str | None = None
    service_port: int = 443

    def __post_init__(self) -> None:
        if (self.url is None) == (self.service_name is None):
            raise ValueError("a webhook endpoint is either a URL or a Service, not both or neither")
        if self.url is not None and urlsplit(self.url).scheme != "https":
            raise ValueError(f"webhook URL {self.url!r}: the API server calls webhooks over https only")
        if self.service_name is not None and not self.service_namespace:
            raise ValueError("a webhook Service needs its namespace")

    @classmethod
    def service(cls, namespace: str, name: str, port: int = 443) -> Endpoint:
        return cls(service_namespace=namespace, service_name=name, service_port=port)

    def client_config(self, path: str, ca_bundle: bytes | None) -> Obj:
        if self.url is not None:
            config: Obj = {"url": self.url.rstrip("/") + path}
        else:
            config = {"service": {"namespace": self.service_namespace, "name": self.service_name, "path": path,
                                  "port": self.service_port}}
        if ca_bundle:
            config["caBundle"] = base64.b64encode(ca_bundle).decode()
        return config

    def excluded_namespaces(self) -> list[str]:
        """Namespaces the webhooks leave alone, as Volcano's chart: the install namespace and ``kube-system``."""
        return list(dict.fromkeys([*([self.service_namespace] if self.service_namespace else []), "kube-system"]))

    def hosts(self) -> list[str]:
        """The names the API server calls the webhooks by (the serving certificate's SANs)."""
        if self.url is not None:
            return [str(urlsplit(self.url).hostname)]
        name, namespace = self.service_name, self.service_namespace
        return [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local", f"{name}.{namespace}",
                str(name)]


def configuration(
    hook: Webhook,
    endpoint: Endpoint,
    ca_bundle: bytes | None = None,
    *,
    failure_policy: str = "Fail",
    exclude_namespaces: Sequence[str] | None = None,
) -> Obj:
    """The Mutating/ValidatingWebhookConfiguration of one webhook (``exclude_namespaces``: by default the
    endpoint's :meth:`~Endpoint.excluded_namespaces`)."""
    if exclude_namespaces is None:
        exclude_namespaces = endpoint.excluded_namespaces()
    webhook: Obj = {
        "name": hook.name,
        "admissionReviewVersions": list(REVIEW_VERSIONS),
        "clientConfig": endpoint.client_config(hook.path, ca_bundle),
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exclude_namespaces)},
        ]} if exclude_namespaces else {},
        "objectSelector": {},
        "rules": [hook.rule()],
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS,
    }
    if hook.mutating:
        webhook["reinvocationPolicy"] = "Never"
    resource = MUTATING if hook.mutating else VALIDATING
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": config_name(hook), "labels": {"app.kubernetes.io/part-of": "pumice"}},
        "webhooks": [webhook],
    }


def config_name(hook: Webhook) -> str:
    return CONFIG_PREFIX + hook.path.replace("/", "-")


def configurations(
    hooks: Iterable[Webhook],
    endpoint: Endpoint,
    ca_bundle: bytes | None = None,
    *,
    failure_policy: str = "Fail",
    exclude_namespaces: Sequence[str] | None = None,
) -> list[Obj]:
    return [configuration(hook, endpoint, ca_bundle, failure_policy=failure_policy,
                          exclude_namespaces=exclude_namespaces) for hook in hooks]


def _merged(current: list[Obj], desired: list[Obj]) -> list[Obj]:
    """``current`` with each desired webhook's ``clientConfig`` (added whole when absent)."""
    out = [dict(w) for w in current]
    for want in desired:
        have = next((w for w in out if w.get("name") == want["name"]), None)
        if have is None:
            out.append(want)
        else:
            have["clientConfig"] = want["clientConfig"]
    return out


def register(client: KubeClient, configs: Iterable[Obj], attempts: int = 5) -> None:
    """Create each configuration, or point the existing one at this server (retrying on conflicts)."""
    for config in configs:
        resource = MUTATING if config["kind"] == MUTATING.kind else VALIDATING
        name = config["metadata"]["name"]
        for attempt in range(attempts):
            try:
                current = client.get(resource, name)
            except ApiError as err:
                if not err.not_found:
                    raise
                try:
                    client.create(resource, config)
                    break
                except ApiError as create_err:
                    if create_err.code != 409 or attempt == attempts - 1:
                        raise
                    continue
            webhooks = _merged(list(current.get("webhooks") or []), config["webhooks"])
            if webhooks == current.get("webhooks"):
                break
            patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "webhooks": webhooks}
            try:
                client.patch(resource, name, patch)
                break
            except ApiError as err:
                if not err.conflict or attempt == attempts - 1:
                    raise
                time.sleep(0.1 * (attempt + 1))


def unregister(client: KubeClient, hooks: Iterable[Webhook]) -> None:
    """Delete the configurations of ``hooks`` (absent ones are fine)."""
    for hook in hooks:
        resource = MUTATING if hook.mutating else VALIDATING
        try:
            client.delete(resource, config_name(hook))
        except ApiError as err:
            if not err.not_found:
                raise
