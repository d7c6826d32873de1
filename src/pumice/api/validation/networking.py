"""Rules of ``networking.k8s.io/v1`` NetworkPolicy (``pkg/apis/networking/validation``, as in 1.20): selectors,
ports (a protocol Kubernetes knows, a port number or name), peers (exactly one kind of peer when it is an
``ipBlock``; a block's ``except`` strictly inside its ``cidr``) and at most the two policy types.

pumice enforces no network policy (nothing routes traffic): the svc job plugin writes them, and users apply them
with their jobs, so they are checked as a cluster would check them.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .common import PROTOCOLS, port_number
from .common import as_dict as _dict
from .common import as_list as _list
from .errors import FieldError, forbidden, invalid, not_supported, required
from .kinds import KindRules
from .names import is_port_name
from .pods import validate_label_selector

__all__ = ["NETWORKING_RULES"]

Obj = dict[str, Any]
_POLICY_TYPES = ("Ingress", "Egress")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _cidr(text: Any) -> Network | None:
    """Go's ``net.ParseCIDR``: an address, ``/`` and a prefix length (host bits may be set)."""
    if type(text) is not str or "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _ip_block(block: Obj, path: str) -> list[FieldError]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(f"{path}.cidr")]
    network = _cidr(cidr)
    if network is None:
        return [invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    errors: list[FieldError] = []
    for index, text in enumerate(_list(block.get("except"))):
        where = f"{path}.except[{index}]"
        inner = _cidr(text)
        if inner is None:
            return [*errors, invalid(where, text, "not a valid CIDR")]
        if inner.version != network.version or inner.network_address not in network or \
                network.prefixlen >= inner.prefixlen:
            errors.append(invalid(where, text, "must be a strict subset of `cidr`"))
    return errors


def _peer(peer: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    given = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            given += 1
            errors += validate_label_selector(peer[key], f"{path}.{key}")
    block = peer.get("ipBlock")
    if block is not None:
        given += 1
        errors += _ip_block(_dict(block), f"{path}.ipBlock")
    if given == 0:
        errors.append(required(path, "must specify a peer"))
    elif given > 1 and block is not None:
        errors.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errors


def _port(port: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errors.append(not_supported(f"{path}.protocol", protocol, ("TCP", "UDP", "SCTP")))
    number = port.get("port")
    if type(number) is int:
        errors += port_number(number, f"{path}.port")
    elif type(number) is str:
        errors.extend(invalid(f"{path}.port", number, msg) for msg in is_port_name(number))
    return errors


def _rules(rules: list[Any], path: str, peers: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, rule in enumerate(rules):
        where = f"{path}[{index}]"
        rule = _dict(rule)
        for number, port in enumerate(_list(rule.get("ports"))):
            errors += _port(_dict(port), f"{where}.ports[{number}]")
        for number, peer in enumerate(_list(rule.get(peers))):
            errors += _peer(_dict(peer), f"{where}.{peers}[{number}]")
    return errors


def _network_policy(obj: Obj) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    errors = validate_label_selector(spec.get("podSelector"), "spec.podSelector")
    errors += _rules(_list(spec.get("ingress")), "spec.ingress", "from")
    errors += _rules(_list(spec.get("egress")), "spec.egress", "to")
    types = _list(spec.get("policyTypes"))
    if len(types) > len(_POLICY_TYPES):
        errors.append(invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
        return errors
    for index, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errors.append(not_supported(f"spec.policyTypes[{index}]", kind, _POLICY_TYPES))
    return errors


NETWORKING_RULES: dict[tuple[str, str], KindRules] = {
    ("networking.k8s.io", "NetworkPolicy"): KindRules(create=_network_policy, reads="spec"),
}
