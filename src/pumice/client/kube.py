"""A small synchronous Kubernetes client: JSON dicts over urllib3, auth and TLS from the kubeconfig.

Only what a command line needs: get, list (label/field selectors), create, merge-patch, delete,
watch, and discovery. Objects are plain dicts in wire form; errors are one-line
:class:`~pumice.client.errors.ClientError` s.
"""

from __future__ import annotations

import builtins
import errno
import json
import socket
import ssl
import warnings
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from urllib3.exceptions import HTTPError as Urllib3Error

from pumice.client.config import ClientConfig, load_config
from pumice.client.discovery import Discovery, Resource
from pumice.client.errors import ApiError, ConnectError

__all__ = ["KubeClient", "connect"]

Obj = dict[str, Any]

_MERGE_PATCH = "application/merge-patch+json"


def _reason(exc: BaseException) -> str:
    """The root cause of a connection failure, in a few words."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    chain: list[BaseException] = []
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        chain.append(cur)
        cur = getattr(cur, "reason", None) if isinstance(getattr(cur, "reason", None), BaseException) else (
            cur.__cause__ or cur.__context__
        )
    checks: list[tuple[Any, str | None]] = [
        (lambda e: isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED,
         "connection refused"),
        (lambda e: isinstance(e, socket.gaierror), "cannot resolve the host name"),
        (lambda e: isinstance(e, ssl.SSLError | urllib3.exceptions.SSLError), None),
        (lambda e: isinstance(e, ConnectionResetError), "connection reset by peer"),
        (lambda e: isinstance(e, TimeoutError | socket.timeout | urllib3.exceptions.TimeoutError)
         and not isinstance(e, urllib3.exceptions.NewConnectionError), "timed out"),
    ]
    for test, words in checks:
        for e in chain:
            if test(e):
                if words is None:
                    text = str(e)
                    return f"TLS error: {text}" if text else "TLS error"
                return words
    for e in chain:
        if isinstance(e, OSError) and e.strerror:
            return e.strerror.lower()
    text = str(chain[-1]) if chain else str(exc)
    # urllib3 formats as "<HTTPConnection object at 0x...>: Failed to establish a new connection: ..."
    return text.split(": ", 1)[-1] if "object at 0x" in text else text


class KubeClient:
    """Synchronous JSON client of one API server."""

    def __init__(self, config: ClientConfig, timeout: float = 30.0) -> None:
        self.config = config
        self.timeout = timeout
        self._insecure = False  # insecure-skip-tls-verify: the user asked for it, no warning per request
        if config.kube is not None:
            from kubernetes.client.rest import RESTClientObject

            self._insecure = not config.kube.verify_ssl
            self._pool: urllib3.PoolManager = RESTClientObject(config.kube).pool_manager
        else:
            self._insecure = not config.verify
            self._pool = urllib3.PoolManager(
                cert_reqs=ssl.CERT_REQUIRED if config.verify else ssl.CERT_NONE,
                ca_certs=config.ca_file, ca_cert_data=config.ca_data,
                cert_file=config.cert_file, key_file=config.key_file,
            )
        self.discovery = Discovery(self.get_json)

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, context: str | None = None, server: str | None = None
    ) -> KubeClient:
        return cls(load_config(kubeconfig, context=context, server=server))

    # ------------------------------------------------------------------ plumbing
    @property
    def server(self) -> str:
        return self.config.server

    @property
    def namespace(self) -> str:
        """The kubeconfig context's namespace (``default`` when it names none)."""
        return self.config.namespace

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "pumice"}
        if content_type:
            headers["Content-Type"] = content_type
        headers.update(self.config.headers)
        if self.config.auth is not None:
            headers.update(self.config.auth())
        return headers

    def _url(self, path: str, query: Mapping[str, Any] | None) -> str:
        url = self.server + path
        params = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        if params:
            url += "?" + urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()})
        return url

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str], **kw: Any) -> Any:
        try:
            with warnings.catch_warnings():
                if self._insecure:
                    warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                return self._pool.request(method, url, body=body, headers=headers, retries=False, redirect=False,
                                          **kw)
        except (Urllib3Error, OSError) as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: BaseException) -> ConnectError:
        reason = _reason(exc)
        if self.config.unreachable_hint and reason == "connection refused":
            reason += f" ({self.config.unreachable_hint})"
        return ConnectError(self.server, reason)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One call; the decoded JSON answer. Non-2xx answers raise :class:`ApiError`."""
        data = None if body is None else json.dumps(body).encode()
        headers = self._headers(content_type or ("application/json" if data is not None else None))
        resp = self._send(method, self._url(path, query), data, headers,
                          timeout=urllib3.Timeout(connect=min(10.0, timeout or self.timeout),
                                                  read=timeout or self.timeout))
        if resp.status >= 400:
            raise ApiError.from_response(resp.status, resp.data, f"{method} {path}")
        if not resp.data:
            return {}
        try:
            return json.loads(resp.data)
        except (ValueError, RecursionError):  # RecursionError: nested past the interpreter's stack
            raise ApiError(resp.status, "BadResponse", f"{method} {path}: the server's answer is not JSON") from None

    def get_json(self, path: str) -> Any:
        return self.request("GET", path)

    # ------------------------------------------------------------------ resources
    def resource(self, word: str) -> Resource:
        """A resource named on a command line: ``jobs``, ``vj``, ``queue``, ``po``, ``hypernodes``..."""
        return self.discovery.resolve(word)

    def resource_for(self, api_version: str, kind: str) -> Resource:
        return self.discovery.for_kind(api_version, kind)

    def _res(self, resource: Resource | str) -> Resource:
        return resource if isinstance(resource, Resource) else self.resource(resource)

    def _ns(self, res: Resource, namespace: str | None) -> str | None:
        if not res.namespaced:
            return None
        return namespace or self.namespace

    def get(self, resource: Resource | str, name: str, namespace: str | None = None) -> Obj:
        res = self._res(resource)
        obj = self.request("GET", res.path(self._ns(res, namespace), quote(name, safe="")))
        return _typed(obj, res)

    def list(
        self,
        resource: Resource | str,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> list[Obj]:
        """Every item (following ``continue`` tokens), each with ``apiVersion``/``kind`` filled in."""
        items, _ = self.list_with_version(resource, namespace, all_namespaces=all_namespaces,
                                          label_selector=label_selector, field_selector=field_selector, limit=limit)
        return items

    def list_with_version(
        self,
        resource: Resource | str,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> tuple[builtins.list[Obj], str]:
        """Items and the list's resourceVersion (to watch from)."""
        res = self._res(resource)
        ns = None if all_namespaces else self._ns(res, namespace)
        items: list[Obj] = []
        token: str | None = None
        version = ""
        while True:
            query = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit,
                     "continue": token}
            doc = self.request("GET", res.path(ns), query=query)
            items.extend(_typed(item, res) for item in doc.get("items") or [])
            meta = doc.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue")
            if not token or not limit:
                break
        return items, version

    def create(self, resource: Resource | str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        res = self._res(resource)
        body = dict(obj)
        body.setdefault("apiVersion", res.api_version)
        body.setdefault("kind", res.kind)
        ns = self._ns(res, namespace or (obj.get("metadata") or {}).get("namespace"))
        if ns is not None:
            body["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
        return _typed(self.request("POST", res.path(ns), body=body), res)

    def patch(
        self,
        resource: Resource | str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Obj:
        """JSON merge-patch (RFC 7386): what custom resources accept, and never loses unknown fields."""
        res = self._res(resource)
        path = res.path(self._ns(res, namespace), quote(name, safe=""), subresource)
        return _typed(self.request("PATCH", path, body=dict(patch), content_type=_MERGE_PATCH), res)

    def delete(self, resource: Resource | str, name: str, namespace: str | None = None) -> Obj:
        res = self._res(resource)
        return self.request("DELETE", res.path(self._ns(res, namespace), quote(name, safe="")))

    def watch(
        self,
        resource: Resource | str,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
    ) -> Iterator[Obj]:
        """Watch events ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}`` as they come.

        An ``ERROR`` event (``410 Gone`` for a too-old resourceVersion) raises :class:`ApiError`.
        The iterator ends when the server closes the stream (``timeout_seconds``).
        """
        res = self._res(resource)
        ns = None if all_namespaces else self._ns(res, namespace)
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
                 "labelSelector": label_selector, "fieldSelector": field_selector,
                 "timeoutSeconds": timeout_seconds}
        read = None if timeout_seconds is None else timeout_seconds + 30.0
        resp = self._send("GET", self._url(res.path(ns), query), None, self._headers(None),
                          preload_content=False, timeout=urllib3.Timeout(connect=10.0, read=read))
        try:
            if resp.status >= 400:
                raise ApiError.from_response(resp.status, resp.read(), f"watch {res.qualified}")
            buffer = b""
            try:
                for chunk in resp.stream(65536, decode_content=True):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield _event(line, res)
            except (Urllib3Error, OSError) as exc:
                raise self._unreachable(exc) from None
            if buffer.strip():
                yield _event(buffer, res)
        finally:
            resp.release_conn()


def _event(line: bytes, res: Resource) -> Obj:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        raise ApiError(500, "BadResponse", "a watch event is not JSON") from None
    if not isinstance(event, dict):
        raise ApiError(500, "BadResponse", "a watch event is not an object")
    if event.get("type") == "ERROR":
        status = event.get("object")
        if not isinstance(status, dict):
            status = {"message": f"watch error: {str(status)[:200]}"}
        code = status.get("code")
        raise ApiError(code if isinstance(code, int) and 400 <= code < 600 else 500, str(status.get("reason") or ""),
                       str(status.get("message") or "watch error"), status)
    obj = event.get("object")
    if isinstance(obj, dict) and event.get("type") != "BOOKMARK":
        _typed(obj, res)
    return event


def _typed(obj: Any, res: Resource) -> Obj:
    """Lists drop ``apiVersion``/``kind`` from their items: put them back."""
    if isinstance(obj, dict):
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
    return obj


def connect(kubeconfig: str | None = None, context: str | None = None, server: str | None = None) -> KubeClient:
    """A client for the kubeconfig found the usual way (see :mod:`pumice.client.config`)."""
    return KubeClient.from_kubeconfig(kubeconfig, context=context, server=server)
