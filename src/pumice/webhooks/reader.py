"""``ApiReader``: the reads admission rules make (``pumice.admission.Reader``), answered by an API server.

Each read is a GET or LIST through a :class:`~pumice.client.KubeClient` at the moment of the admission
request, so a rule always sees what the API server holds (a queue created a moment ago is there); an
admission reads a handful of small lists (queues; PodGroups and pods only when a queue gets its first
child). Volcano's webhook reads an informer's cache instead, which can lag behind the API server.
"""

from __future__ import annotations

from typing import Any

from pumice.api.registry import MODELS
from pumice.api.resources import resource_of
from pumice.client import ApiError, KubeClient, Resource
from pumice.store import NotFound
from pumice.store.protocol import FieldSelectorArg, LabelSelectorArg

__all__ = ["ApiReader"]

Obj = dict[str, Any]


def _resources() -> dict[str, Resource]:
    table = {}
    for model in MODELS:
        group, _, version = model.API_VERSION.rpartition("/")
        table[resource_of(model)] = Resource(group, version, model.PLURAL, model.KIND, model.NAMESPACED)
    return table


class ApiReader:
    """Read-only ``get``/``list`` of store resource names (``pods``, ``queues.scheduling.volcano.sh``)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._resources = _resources()

    def _resource(self, name: str) -> Resource:
        res = self._resources.get(name)
        if res is None:
            raise NotFound(f"the resource {name!r} is not one pumice reads")
        return res

    def get(self, resource: str, namespace: str | None, name: str, *, copy: bool = True) -> Obj:
        """One object, fresh from the API server (``copy`` changes nothing: every answer is the caller's)."""
        res = self._resource(resource)
        try:
            return self.client.get(res, name, namespace)
        except ApiError as err:
            if err.code == 404:
                raise NotFound(f'{res.qualified} "{name}" not found') from None
            raise

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: LabelSelectorArg = None,
        field_selector: FieldSelectorArg = None,
        *,
        copy: bool = True,
    ) -> tuple[list[Obj], str]:
        """Every matching object (all namespaces when ``namespace`` is None) and the list's resourceVersion."""
        res = self._resource(resource)
        return self.client.list_with_version(
            res,
            namespace,
            all_namespaces=namespace is None,
            label_selector=None if label_selector is None else str(label_selector),
            field_selector=None if field_selector is None else str(field_selector),
        )
