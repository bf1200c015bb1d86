"""The embedded broker's certificates: the server's checks of uploaded PEM text, and the self-signed CA
and server certificate it generates (P-256 keys; the CA for 5 years, the server certificate for one,
both from an hour before now; the server's names ``localhost`` and ``127.0.0.1``)."""

from __future__ import annotations

import datetime as dt
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hardware.ports.errors import InvalidInput
from hardware.ports.mqtt import TlsPems

TLS_DIR = "data/tls"
"""Where the server keeps the files (``NEOMIND_DATA_DIR`` defaults to ``data``): the paths it reports."""
CERT_PATH, KEY_PATH = f"{TLS_DIR}/mqtt-server.crt", f"{TLS_DIR}/mqtt-server.key"
CA_PATH, CA_KEY_PATH = f"{TLS_DIR}/mqtt-ca.crt", f"{TLS_DIR}/mqtt-ca.key"
_KEY_BLOCKS = (
    "-----begin private key-----",
    "-----begin rsa private key-----",
    "-----begin ec private key-----",
)


def check_pem(pem: str, label: str) -> None:
    """The server's checks, in its words (``label``: ``certificate``, ``private key``, ``CA certificate``)."""
    text = pem.strip()
    if not text:
        raise InvalidInput(f"{label} PEM cannot be empty", field=label)
    if "-----BEGIN" not in text or "-----END" not in text:
        raise InvalidInput(f"{label} must be in PEM format (-----BEGIN ...-----END ...-----)", field=label)
    lower = text.lower()
    if label in ("certificate", "CA certificate") and "-----begin certificate-----" not in lower:
        raise InvalidInput(
            f"{label} must contain a valid certificate block (-----BEGIN CERTIFICATE-----)", field=label
        )
    if label == "private key" and not any(block in lower for block in _KEY_BLOCKS):
        raise InvalidInput(
            f"{label} must contain a valid private key block (-----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY, "
            "or EC PRIVATE KEY)",
            field=label,
        )


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def generate(now: float) -> tuple[TlsPems, str]:
    """A CA and a server certificate it signed, valid from ``now`` (Unix seconds) less an hour;
    returns the server's material (with the CA) and the CA's private key."""
    start = dt.datetime.fromtimestamp(now, dt.UTC) - dt.timedelta(hours=1)
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "NeoMind MQTT CA"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "NeoMind"),
        ]
    )
    usage = dict.fromkeys(
        (
            "content_commitment",
            "data_encipherment",
            "key_agreement",
            "encipher_only",
            "decipher_only",
        ),
        False,
    )
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=5 * 365, hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_encipherment=False, key_cert_sign=True, crl_sign=True, **usage
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "NeoMind MQTT Server")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=365, hours=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_encipherment=True, key_cert_sign=False, crl_sign=False, **usage
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return TlsPems(_pem(server), _key_pem(server_key), _pem(ca)), _key_pem(ca_key)
