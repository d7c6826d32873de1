"""Job controller plugins (``pkg/controllers/job/plugins``): env, svc, ssh, mpi, pytorch, tensorflow, ray, hcclrank.

``plugins_of(job)`` builds the plugins a job names in ``spec.plugins`` from their arguments (Go flag
syntax, ``flags``). Volcano runs them in Go map order, i.e. in no fixed order; here they run in the order
Volcano registers them (ssh, env, svc, tensorflow, mpi, pytorch, hcclrank, ray), so a pod comes out the
same every time. No two plugins write the same field, except ``RANK``: hcclrank reads it, so it runs after
pytorch.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .base import JobPlugin, Obj, PluginError, owner_reference
from .env import EnvPlugin
from .flags import Flag, parse_flags
from .hcclrank import HcclrankPlugin
from .mpi import MpiPlugin
from .pytorch import PytorchPlugin
from .ray import RayPlugin
from .ssh import SshPlugin, generate_key_pair
from .svc import SvcPlugin, generate_hosts
from .tensorflow import TensorflowPlugin

__all__ = [
    "PLUGINS",
    "EnvPlugin",
    "Flag",
    "HcclrankPlugin",
    "JobPlugin",
    "MpiPlugin",
    "PluginError",
    "PytorchPlugin",
    "RayPlugin",
    "SshPlugin",
    "SvcPlugin",
    "TensorflowPlugin",
    "build_plugin",
    "generate_hosts",
    "generate_key_pair",
    "owner_reference",
    "parse_flags",
    "plugins_of",
    "unknown_plugins",
]

#: Every job plugin by name, in the order they run.
PLUGINS: dict[str, type[JobPlugin]] = {
    cls.name: cls
    for cls in (SshPlugin, EnvPlugin, SvcPlugin, TensorflowPlugin, MpiPlugin, PytorchPlugin, HcclrankPlugin,
                RayPlugin)
}
_ORDER = {name: i for i, name in enumerate(PLUGINS)}


@lru_cache(maxsize=512)
def build_plugin(name: str, arguments: tuple[str, ...]) -> JobPlugin:
    """The plugin ``name`` with ``arguments`` (instances are stateless, hence shared)."""
    return PLUGINS[name](arguments)


def _arguments(value: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(str(a) for a in value or ())


def plugins_of(job: Obj) -> list[JobPlugin]:
    """The plugins the job asks for (``spec.plugins``), built from their arguments, in running order."""
    wanted = (job.get("spec") or {}).get("plugins") or {}
    names = sorted((n for n in wanted if n in PLUGINS), key=_ORDER.__getitem__)
    return [build_plugin(name, _arguments(wanted[name])) for name in names]


def unknown_plugins(job: Obj) -> list[str]:
    """Plugin names of the job that no plugin answers to (admission refuses them; an old object may have them)."""
    return sorted(n for n in (job.get("spec") or {}).get("plugins") or {} if n not in PLUGINS)
