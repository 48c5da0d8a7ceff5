"""TLS contexts from the settings, with the stdlib ``ssl`` module.

:func:`server_context` builds the context of the ``pulsar+ssl://`` and HTTPS listeners:
``tlsCertificateFilePath`` / ``tlsKeyFilePath`` (PEM), ``tlsTrustCertsFilePath`` (the CAs client
certificates must chain to; the system CAs when unset), ``tlsRequireTrustedClientCertOnConnect``
(a client without a trusted certificate is refused in the handshake; otherwise a certificate is
asked for and, when sent, must be trusted), ``tlsProtocols`` and ``tlsCiphers`` (Java/IANA names
such as ``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` or OpenSSL names).

``tlsAllowInsecureConnection``: Pulsar then accepts client certificates it cannot verify. Python's
``ssl`` cannot accept an unverified client certificate, so with that setting and no trust file no
client certificate is asked for (TLS authentication is then unavailable); with a trust file,
certificates are asked for and verified as usual.

:func:`client_context` is the matching helper for tools and tests.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

from magnetar.broker.security.errors import SecurityConfigError
from magnetar.broker.security.settings import SecuritySettings

_PROTOCOL_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_KEY_EXCHANGE = {
    "ECDHE_RSA": "ECDHE-RSA-", "ECDHE_ECDSA": "ECDHE-ECDSA-", "DHE_RSA": "DHE-RSA-", "DHE_DSS": "DHE-DSS-",
    "RSA": "", "ECDH_RSA": "ECDH-RSA-", "ECDH_ECDSA": "ECDH-ECDSA-",
}
_BULK = {
    "AES_128_GCM": "AES128-GCM", "AES_256_GCM": "AES256-GCM", "AES_128_CBC": "AES128", "AES_256_CBC": "AES256",
    "CHACHA20_POLY1305": "CHACHA20-POLY1305", "AES_128_CCM": "AES128-CCM", "AES_256_CCM": "AES256-CCM",
}


def server_context(settings: SecuritySettings) -> ssl.SSLContext:
    """The server-side context of the TLS listeners; SecurityConfigError names an unusable setting."""
    if not settings.tls_certificate_file_path or not settings.tls_key_file_path:
        raise SecurityConfigError("tlsCertificateFilePath", "TLS needs tlsCertificateFilePath and tlsKeyFilePath")
    _check_readable(settings.tls_certificate_file_path, "tlsCertificateFilePath")
    _check_readable(settings.tls_key_file_path, "tlsKeyFilePath")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(settings.tls_certificate_file_path, settings.tls_key_file_path)
    except (ssl.SSLError, OSError) as exc:
        raise SecurityConfigError(
            "tlsCertificateFilePath", f"the certificate and key are not a usable PEM pair ({_reason(exc)})"
        ) from None
    trusted = _load_trust(context, settings.tls_trust_certs_file_path)
    if settings.tls_require_trusted_client_cert_on_connect:
        context.verify_mode = ssl.CERT_REQUIRED
    elif settings.tls_allow_insecure_connection and not trusted:
        context.verify_mode = ssl.CERT_NONE
    else:
        context.verify_mode = ssl.CERT_OPTIONAL
    apply_protocols(context, settings.tls_protocols)
    apply_ciphers(context, settings.tls_ciphers)
    return context


def _check_readable(path: str, key: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise SecurityConfigError(key, f"cannot read {path}: {exc.strerror or exc}") from None


def _load_trust(context: ssl.SSLContext, path: str | None) -> bool:
    """Load the CAs client certificates must chain to; True when a trust file was given."""
    if not path:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return False
    _check_readable(path, "tlsTrustCertsFilePath")
    try:
        context.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as exc:
        raise SecurityConfigError("tlsTrustCertsFilePath", f"no usable PEM certificates ({_reason(exc)})") from None
    return True


def apply_protocols(context: ssl.SSLContext, protocols: Iterable[str]) -> None:
    """Restrict the context to the range spanned by ``protocols`` (``TLSv1.2``, ``TLSv1.3``, ...)."""
    versions = []
    for name in protocols:
        if name not in _PROTOCOL_VERSIONS:
            raise SecurityConfigError("tlsProtocols", f"{name!r} is not one of {', '.join(_PROTOCOL_VERSIONS)}")
        versions.append(_PROTOCOL_VERSIONS[name])
    if not versions:
        return
    try:
        context.minimum_version = min(versions)
        context.maximum_version = max(versions)
    except (ValueError, ssl.SSLError) as exc:
        raise SecurityConfigError("tlsProtocols", f"not supported by this OpenSSL ({_reason(exc)})") from None


def openssl_cipher_name(name: str) -> str | None:
    """The OpenSSL name of a Java/IANA TLS 1.2 cipher suite name, or None for a TLS 1.3 suite.

    OpenSSL names pass through unchanged.
    """
    if not name.startswith("TLS_"):
        return name
    kx, sep, rest = name[4:].partition("_WITH_")
    if not sep:
        return None  # TLS 1.3 suites (TLS_AES_128_GCM_SHA256, ...) are always enabled by OpenSSL
    bulk, _, mac = rest.rpartition("_")
    if kx not in _KEY_EXCHANGE or bulk not in _BULK:
        raise SecurityConfigError("tlsCiphers", f"unknown cipher suite {name!r}")
    cipher = _KEY_EXCHANGE[kx] + _BULK[bulk]
    if bulk.endswith("CBC"):
        cipher += "-SHA" if mac == "SHA" else f"-{mac}"
    elif bulk.endswith("GCM"):
        cipher += f"-{mac}"
    return cipher


def apply_ciphers(context: ssl.SSLContext, ciphers: Iterable[str]) -> None:
    """Restrict the TLS 1.2 cipher suites to ``ciphers``; each one must be known to OpenSSL here."""
    names = [openssl_cipher_name(name) for name in ciphers]
    wanted = [name for name in names if name]
    if not wanted:
        return
    for name in wanted:
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            probe.set_ciphers(name)
        except ssl.SSLError:
            raise SecurityConfigError("tlsCiphers", f"cipher suite {name!r} is not available") from None
    context.set_ciphers(":".join(wanted))


def client_context(
    trust_certs_file: str | None = None,
    allow_insecure: bool = False,
    verify_hostname: bool = True,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> ssl.SSLContext:
    """A client context: trust ``trust_certs_file`` (else the system CAs), optionally present a certificate.

    ``allow_insecure`` accepts any server certificate (``tlsAllowInsecureConnection``).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if allow_insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = verify_hostname
        if trust_certs_file:
            context.load_verify_locations(cafile=trust_certs_file)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def peer_certificate(ssl_object: Any) -> bytes | None:
    """The DER certificate the peer presented and the handshake verified, or None.

    ``ssl_object`` is an ``ssl.SSLObject`` / ``ssl.SSLSocket`` (for an asyncio transport:
    ``transport.get_extra_info("ssl_object")``), or None for a plain connection.
    """
    if ssl_object is None:
        return None
    try:
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError):
        return None
    return der or None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__

