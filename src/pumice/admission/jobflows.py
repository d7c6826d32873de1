"""JobFlow admission (``pkg/webhooks/admission/jobflows/validate``): the flows must form a DAG.

Each flow is a vertex whose edges go to its ``dependsOn.targets``. A target that names no flow is refused
("jobflow Flow is not DAG: vertex is not defined: <name>"), and so is a cycle ("jobflow Flow is not DAG"),
on CREATE and UPDATE, as Volcano's webhook does. The cycle found is named after Volcano's message.
The JobTemplates the flows name need not exist yet.
"""

from __future__ import annotations

from typing import Any

from pumice.store import Invalid

__all__ = ["NOT_DAG", "flow_graph_problem", "validate_jobflow"]

NOT_DAG = "jobflow Flow is not DAG"
Obj = dict[str, Any]


def _graph(flows: list[Obj]) -> dict[str, list[str]]:
    """Flow name -> its targets (a later flow of the same name replaces an earlier one, as Volcano's map)."""
    graph: dict[str, list[str]] = {}
    for flow in flows:
        graph[str(flow.get("name") or "")] = [str(t) for t in ((flow.get("dependsOn") or {}).get("targets") or [])]
    return graph


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of the graph as the list of its vertices (first one repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def flow_graph_problem(flows: list[Obj]) -> str | None:
    """Why the flows do not form a DAG (Volcano's message first), or None when they do."""
    graph = _graph(flows)
    for targets in graph.values():
        for target in targets:
            if target not in graph:
                return f"{NOT_DAG}: vertex is not defined: {target}"
    cycle = _cycle(graph)
    if cycle is not None:
        return f"{NOT_DAG} (cycle: {' -> '.join(cycle)})"
    return None


def validate_jobflow(flow: Obj) -> None:
    """CREATE/UPDATE of a JobFlow: ``Invalid`` unless its flows form a DAG."""
    problem = flow_graph_problem(list((flow.get("spec") or {}).get("flows") or []))
    if problem:
        meta = flow.get("metadata") or {}
        raise Invalid(f'jobflow "{meta.get("namespace") or "default"}/{meta.get("name")}" is invalid: {problem}')
