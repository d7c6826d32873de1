"""Scheduling policies. Importing this package registers every built-in plugin."""

from pumice.scheduler.plugins import (  # noqa: F401
    binpack,
    conformance,
    drf,
    gang,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
)
