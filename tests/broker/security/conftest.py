"""Key material for the security tests, made with cryptography in a temporary directory.

A CA, a server certificate for ``localhost`` / 127.0.0.1 signed by it, a client certificate with
CN ``admin`` signed by it, and a second CA with a client certificate the first CA does not trust.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    """Paths of PEM files."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_cert_der: bytes
    rogue_ca_cert: Path
    rogue_client_cert: Path
    rogue_client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "magnetar tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, issuer: x509.Name, issuer_key: ec.EllipticCurvePrivateKey, key: ec.EllipticCurvePrivateKey,
          ca: bool = False, localhost: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False), critical=True)
    if localhost:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None) -> Path:
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        (directory / f"{name}-key.pem").write_bytes(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
    return path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca_key, rogue_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("Test CA", _name("Test CA"), ca_key, ca_key, ca=True)
    rogue_ca = _cert("Rogue CA", _name("Rogue CA"), rogue_key, rogue_key, ca=True)
    server_key, client_key, rogue_client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    server = _cert("localhost", ca.subject, ca_key, server_key, localhost=True)
    client = _cert("admin", ca.subject, ca_key, client_key)
    rogue_client = _cert("admin", rogue_ca.subject, rogue_key, rogue_client_key)
    return Pki(
        ca_cert=_write(directory, "ca", ca, None),
        server_cert=_write(directory, "server", server, server_key),
        server_key=directory / "server-key.pem",
        client_cert=_write(directory, "client", client, client_key),
        client_key=directory / "client-key.pem",
        client_cert_der=client.public_bytes(serialization.Encoding.DER),
        rogue_ca_cert=_write(directory, "rogue-ca", rogue_ca, None),
        rogue_client_cert=_write(directory, "rogue-client", rogue_client, rogue_client_key),
        rogue_client_key=directory / "rogue-client-key.pem",
    )
