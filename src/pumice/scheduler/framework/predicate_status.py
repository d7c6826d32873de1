"""Volcano's predicate status codes, for ``pumice schedule --predicates`` (``../shared/cases`` README).

Volcano's ``ssn.PredicateFn(task, node)`` asks the enabled predicate plugins in tier order and returns
the first plugin's fit error; the case contract reports the code of that error's first status. pumice's
predicates are columnar checks (``NodeFilter``): a plugin may give its checks with Volcano's codes, in
the order Volcano appends the statuses (:class:`PredicateStatusOrder`); otherwise a check on the task's
shape and the nodes' fixed fields (selectors, affinity, taints, cordon: ``static_checks``) is
``UnschedulableAndUnresolvable`` and a check on usage (``dynamic_checks``) is ``Unschedulable``, as
kube-scheduler's filters answer. Resources are not a predicate's: allocate checks them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from pumice.scheduler.framework.points import PREDICATE
from pumice.scheduler.framework.view import NodeView
from pumice.scheduler.model import TaskInfo

if TYPE_CHECKING:
    from pumice.scheduler.framework.session import Session

SUCCESS, UNSCHEDULABLE, UNRESOLVABLE = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


@runtime_checkable
class PredicateStatusOrder(Protocol):
    """A plugin capability: its predicate's checks as (Volcano status code, passing mask over the
    view's nodes), in the order Volcano's plugin appends the statuses."""

    def status_checks(self, task: TaskInfo, view: NodeView) -> list[tuple[str, np.ndarray]]:
        ...


def predicate_codes(ssn: Session, task: TaskInfo) -> list[str]:
    """Per node of the session: ``Success`` or the status code of the first failing predicate."""
    view = NodeView.of(ssn.nodes)
    codes = np.full(len(ssn.nodes), SUCCESS, dtype=object)
    for fn in ssn.callbacks(PREDICATE):
        if isinstance(fn, PredicateStatusOrder):
            checks = fn.status_checks(task, view)
        else:
            checks = [(UNRESOLVABLE, mask) for _, mask in fn.static_checks(task)]
            checks += [(UNSCHEDULABLE, mask) for _, mask in fn.dynamic_checks(task, view)]
        for code, mask in checks:
            codes[(codes == SUCCESS) & ~np.asarray(mask, dtype=bool)] = code
    return [str(c) for c in codes]
