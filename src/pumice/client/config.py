"""Which kubeconfig to use, and what it says: server URL, auth headers, TLS, default namespace.

Search order (first that exists wins): ``--kubeconfig``, ``$KUBECONFIG`` (a ``:``-separated list,
merged like kubectl), ``$PUMICE_HOME/kubeconfig``, ``./.pumice/kubeconfig`` and ``~/.pumice/kubeconfig``
(where ``pumice up`` writes it), ``~/.kube/config``.

Reading the file, auth plugins, client certificates and CA data are left to the official
``kubernetes`` package's loader; this module only keeps what a raw HTTP client needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.client.errors import ConfigError

__all__ = ["ClientConfig", "find_kubeconfig", "load_config", "load_in_cluster"]

#: Where ``pumice up`` writes its kubeconfig, relative to a state directory.
PUMICE_KUBECONFIG = Path(".pumice") / "kubeconfig"


@dataclass
class ClientConfig:
    """Everything needed to talk to one API server."""

    server: str
    namespace: str = "default"
    source: str = ""
    context: str | None = None
    #: The ``kubernetes.client.Configuration`` that TLS and auth come from (None: plain HTTP, no auth).
    kube: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Called before each request to get fresh auth headers (exec plugins, expiring tokens).
    auth: Callable[[], dict[str, str]] | None = None
    #: Added to "cannot reach" errors, e.g. "is `pumice up` running?" for pumice's own kubeconfig.
    unreachable_hint: str = ""
    #: TLS without the ``kubernetes`` package (see :func:`load_plain`): verify, CA, client certificate.
    verify: bool = True
    ca_file: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def candidates(explicit: str | os.PathLike[str] | None = None) -> list[str]:
    """The kubeconfig paths considered, most important first (``$KUBECONFIG`` may hold several)."""
    if explicit:
        return [os.fspath(explicit)]
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        return [p for p in env.split(os.pathsep) if p]
    home = Path.home()
    pumice_home = os.environ.get("PUMICE_HOME")
    return [
        *([str(Path(pumice_home) / "kubeconfig")] if pumice_home else []),
        str(Path.cwd() / PUMICE_KUBECONFIG),
        str(home / PUMICE_KUBECONFIG),
        str(home / ".kube" / "config"),
    ]


def find_kubeconfig(explicit: str | os.PathLike[str] | None = None) -> str:
    """The kubeconfig to load: the explicit one (must exist), or the first existing default."""
    if explicit:
        path = os.fspath(explicit)
        if not os.path.isfile(path):
            raise ConfigError(f"kubeconfig {path}: no such file")
        return path
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        existing = [p for p in env.split(os.pathsep) if p and os.path.isfile(p)]
        if not existing:
            raise ConfigError(f"KUBECONFIG={env}: no such file")
        return os.pathsep.join(existing)
    for path in candidates():
        if os.path.isfile(path):
            return path
    raise ConfigError(
        f"no kubeconfig found (tried {', '.join(candidates())}): "
        "start a local cluster with `pumice up`, or pass --kubeconfig / --server"
    )


def load_config(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    server: str | None = None,
) -> ClientConfig:
    """Load a kubeconfig (see the module doc) into a :class:`ClientConfig`.

    ``server`` (``--server``/``--master``) overrides the kubeconfig's server URL; with no kubeconfig
    found at all, a bare ``--server`` still works (plain, unauthenticated).
    """
    try:
        path = find_kubeconfig(kubeconfig)
    except ConfigError:
        if server and not kubeconfig:
            return ClientConfig(server=server.rstrip("/"), source="--server")
        raise
    pumice_home = os.environ.get("PUMICE_HOME")
    own = Path(path).parent.name == ".pumice" or bool(pumice_home and Path(path).parent == Path(pumice_home))
    hint = "is `pumice up` running?" if own and not server else ""
    try:
        from kubernetes.client import Configuration
        from kubernetes.config import kube_config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:  # without the official loader: tokens, certificates and CAs still work
        config = load_plain(path, context=context, server=server)
        config.unreachable_hint = hint
        return config

    cfg = Configuration()
    try:
        kube_config.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                     persist_config=False)
        contexts, active = kube_config.list_kube_config_contexts(config_file=path)
    except ConfigException as err:
        raise ConfigError(f"kubeconfig {path}: {err}") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise ConfigError(f"kubeconfig {path}: cannot be read: {err}") from None
    chosen: dict[str, Any] | None = active
    if context:
        chosen = next((c for c in contexts or [] if c.get("name") == context), active)
    namespace = ((chosen or {}).get("context") or {}).get("namespace") or "default"
    if server:
        cfg.host = server
    host = str(cfg.host or "").rstrip("/")
    if not host:
        raise ConfigError(f"kubeconfig {path}: the context names no server")

    return ClientConfig(
        unreachable_hint=hint,
        server=host,
        namespace=namespace,
        source=path,
        context=(chosen or {}).get("name"),
        kube=cfg,
        auth=_header_auth(cfg),
    )


def _header_auth(cfg: Any) -> Callable[[], dict[str, str]]:
    """Auth headers from a ``kubernetes`` ``Configuration``, asked each time (tokens get refreshed)."""

    def auth() -> dict[str, str]:
        headers: dict[str, str] = {}
        for setting in cfg.auth_settings().values():
            if isinstance(setting, dict) and setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    return auth


def load_in_cluster() -> ClientConfig:
    """The pod's service account: ``KUBERNETES_SERVICE_HOST``/``PORT``, the mounted token (refreshed) and CA."""
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import SERVICE_TOKEN_FILENAME, load_incluster_config

    cfg = Configuration()
    try:
        load_incluster_config(client_configuration=cfg, try_refresh_token=True)
    except ConfigException as err:
        raise ConfigError(f"in-cluster configuration: {err}") from None
    namespace = "default"
    namespace_file = Path(SERVICE_TOKEN_FILENAME).parent / "namespace"
    if namespace_file.is_file():
        namespace = namespace_file.read_text(encoding="utf-8").strip() or namespace
    return ClientConfig(server=str(cfg.host).rstrip("/"), namespace=namespace, source="in-cluster", kube=cfg,
                        auth=_header_auth(cfg))


def _private_file(data: str, suffix: str) -> str:
    import atexit
    import base64
    import contextlib
    import tempfile

    fd, name = tempfile.mkstemp(prefix="pumice-", suffix=suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64decode(data))

    def remove() -> None:
        with contextlib.suppress(OSError):
            os.unlink(name)

    atexit.register(remove)
    return name


def load_plain(path: str, context: str | None = None, server: str | None = None) -> ClientConfig:
    """Read a kubeconfig without the ``kubernetes`` package: the first file of ``path`` (``:``-list),
    its current (or named) context; tokens, token files, client certificates and CAs — no auth plugins."""
    import yaml

    from pumice.api.reader import load_yaml, read_text_file

    first = path.split(os.pathsep)[0]
    try:
        doc = load_yaml(read_text_file(first)) or {}
    except (OSError, yaml.YAMLError, ValueError) as err:
        raise ConfigError(f"kubeconfig {first}: cannot be read: {err}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {first}: not a kubeconfig")

    def named(section: str, name: str | None) -> dict[str, Any]:
        for item in doc.get(section) or []:
            if isinstance(item, dict) and item.get("name") == name:
                return item
        raise ConfigError(f"kubeconfig {first}: no {section[:-1]} named {name!r}")

    ctx_name = context or doc.get("current-context")
    ctx = (named("contexts", ctx_name).get("context") or {}) if ctx_name else {}
    cluster = named("clusters", ctx.get("cluster")).get("cluster") or {} if ctx.get("cluster") else {}
    user = named("users", ctx.get("user")).get("user") or {} if ctx.get("user") else {}
    host = str(server or cluster.get("server") or "").rstrip("/")
    if not host:
        raise ConfigError(f"kubeconfig {first}: the context names no server")
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = Path(user["tokenFile"]).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise ConfigError(f"kubeconfig {first}: tokenFile: {err}") from None
    if token:
        headers["authorization"] = f"Bearer {token}"
    elif user.get("username") and user.get("password"):
        import base64

        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        headers["authorization"] = f"Basic {basic}"
    elif user.get("exec") or user.get("auth-provider"):
        raise ConfigError(f"kubeconfig {first}: auth plugins need the `kubernetes` package (pip install kubernetes)")
    cert = user.get("client-certificate") or (
        _private_file(user["client-certificate-data"], ".crt") if user.get("client-certificate-data") else None)
    key = user.get("client-key") or (
        _private_file(user["client-key-data"], ".key") if user.get("client-key-data") else None)
    ca_data = None
    if cluster.get("certificate-authority-data"):
        import base64

        ca_data = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return ClientConfig(
        server=host,
        namespace=ctx.get("namespace") or "default",
        source=path,
        context=ctx_name,
        headers=headers,
        verify=not cluster.get("insecure-skip-tls-verify", False),
        ca_file=cluster.get("certificate-authority"),
        ca_data=ca_data,
        cert_file=cert,
        key_file=key,
    )
