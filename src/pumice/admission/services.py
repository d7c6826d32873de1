"""Service addresses, as kube-apiserver's service registry gives them: a cluster IP (and node ports) per Service.

A new Service of type ``ClusterIP``, ``NodePort`` or ``LoadBalancer`` gets the lowest free address of the service
range unless it names one (which must be in the range and free), and ports of ``NodePort``/``LoadBalancer``
services get free node ports; a headless service (``clusterIP: None``) and an ``ExternalName`` one get none.
pumice routes no traffic: the addresses are what ``kubectl get svc`` shows and what updates must keep.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pumice.store import Invalid, Store

__all__ = ["NODE_PORTS", "SERVICE_RANGE", "allocate_service"]

#: The service address range (kubeadm's default); the first address is the API server's own service.
SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
SERVICES = "services"
Obj = dict[str, Any]


def _used(store: Store) -> tuple[set[str], set[int]]:
    items, _ = store.list(SERVICES, copy=False)
    ips: set[str] = set()
    ports: set[int] = set()
    for svc in items:
        found = svc.get("spec")
        spec: Obj = found if isinstance(found, dict) else {}
        if spec.get("clusterIP"):
            ips.add(str(spec["clusterIP"]))
        for port in spec.get("ports") or ():
            if isinstance(port, dict) and isinstance(port.get("nodePort"), int):
                ports.add(port["nodePort"])
    return ips, ports


def allocate_service(store: Store, svc: Obj) -> None:
    """Give a new Service its cluster IP and node ports, in place (``Invalid`` for an address it cannot have)."""
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        return
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName" or spec.get("clusterIP") == "None":
        return
    used_ips, used_ports = _used(store)
    given = spec.get("clusterIP")
    name = (svc.get("metadata") or {}).get("name") or ""
    if given:
        try:
            inside = ipaddress.ip_address(given) in SERVICE_RANGE
        except ValueError:
            return  # not an address: validation says so
        problem = None if inside else \
            f"provided IP is not in the valid range. The range of valid IPs is {SERVICE_RANGE}"
        if problem is None and given in used_ips:
            problem = "provided IP is already allocated"
        if problem is not None:
            cause = f'Invalid value: ["{given}"]: failed to allocate ip:{given} with error:{problem}'
            raise Invalid(f'Service "{name}" is invalid: spec.clusterIPs: {cause}', details={
                "name": name, "kind": "Service",
                "causes": [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs", "message": cause}]})
        address = given
    else:
        address = next(str(ip) for ip in SERVICE_RANGE.hosts() if ip != SERVICE_RANGE[1] and str(ip) not in used_ips)
    spec["clusterIP"] = address
    spec["clusterIPs"] = [address]
    if kind in ("NodePort", "LoadBalancer"):
        free = (p for p in NODE_PORTS if p not in used_ports)
        spec["ports"] = [{**port, "nodePort": port.get("nodePort") or next(free)} if isinstance(port, dict) else port
                         for port in spec.get("ports") or ()]
