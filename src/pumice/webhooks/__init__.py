"""``pumice.webhooks``: Volcano's admission webhooks as a real HTTPS webhook server for an API server.

The same rules as the embedded control plane (``pumice.admission``): defaults returned as JSON patches,
the job, PodGroup and hierarchical queue rules refusing with their messages, other objects read from
the API server. :class:`AdmissionServer` makes its certificate, serves, and registers its
Mutating/ValidatingWebhookConfigurations with the CA bundle, as Volcano's webhook manager does.
"""

from .admit import DEFAULT_ENABLED, WEBHOOKS, Webhook, admit, enabled_webhooks
from .app import create_app
from .reader import ApiReader
from .registration import Endpoint, configuration, configurations, register, unregister
from .review import Review, ReviewError, json_patch, parse_review
from .server import DEFAULT_PORT, AdmissionServer, cluster_client

__all__ = [
    "DEFAULT_ENABLED",
    "DEFAULT_PORT",
    "WEBHOOKS",
    "AdmissionServer",
    "ApiReader",
    "Endpoint",
    "Review",
    "ReviewError",
    "Webhook",
    "admit",
    "cluster_client",
    "configuration",
    "configurations",
    "create_app",
    "enabled_webhooks",
    "json_patch",
    "parse_review",
    "register",
    "unregister",
]
