"""A private CA and a loopback serving certificate, made once under the data directory.

kubectl sends a bearer token only over TLS (client-go drops credentials for ``http://`` servers), so the
control plane serves HTTPS: ``DIR/ca.crt`` signs ``DIR/server.crt`` (SANs ``127.0.0.1``, ``::1``,
``localhost``), and the kubeconfig carries the CA. The admission webhook server (``pumice.webhooks``) makes
its own pair the same way, for the names the API server calls it by (its Service's DNS names, or an IP).
Every file is private to the user (0600): the key obviously, the certificates because nobody else needs them.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["LOOPBACK_HOSTS", "TlsFiles", "client_ssl_context", "ensure_certificates"]

_VALIDITY = dt.timedelta(days=3650)
#: The names of this machine a local client uses.
LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _covers(cert_path: Path, hosts: Sequence[str]) -> bool:
    """Whether the certificate names every host (a certificate that cannot be read covers nothing)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    return all(_san(host) in names for host in hosts)


def ensure_certificates(
    directory: str | os.PathLike[str], hosts: Sequence[str] = LOOPBACK_HOSTS, *, common_name: str = "pumice-apiserver"
) -> TlsFiles:
    """The CA and serving certificate in ``directory`` for ``hosts`` (DNS names or IP addresses).

    Generated (ECDSA P-256) if a file is missing or the certificate there does not name every host.
    """
    base = Path(directory)
    files = TlsFiles(base / "ca.crt", base / "server.crt", base / "server.key")
    if files.ca.exists() and files.cert.exists() and files.key.exists() and _covers(files.cert, hosts):
        return files
    base.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new directory is private (the key is 0600 anyway)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("pumice-ca"))
        .issuer_name(_name("pumice-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans = list(dict.fromkeys(_san(host) for host in hosts))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(files.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()), 0o600)
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM))
    _write(files.ca, ca_cert.public_bytes(serialization.Encoding.PEM))
    return files


def client_ssl_context(ca: str | os.PathLike[str]) -> ssl.SSLContext:
    """An SSL context for clients that trusts ``ca`` (e.g. for aiohttp or urllib)."""
    return ssl.create_default_context(cafile=os.fspath(ca))
