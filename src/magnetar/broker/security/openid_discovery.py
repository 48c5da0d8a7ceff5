"""OpenID Connect discovery for the broker: issuers' provider metadata and their JSON Web Key Sets.

As Pulsar's ``OpenIDProviderMetadataCache`` and ``JwksCache``: an issuer's metadata comes from
``<issuer>/.well-known/openid-configuration`` (its ``issuer`` must be the issuer asked for), its
keys from the metadata's ``jwks_uri``. Both are cached (``openIDCacheSize`` entries each, least
recently used dropped), fetched again after ``openIDCacheRefreshAfterWriteSeconds`` (the cached
copy serves while a new fetch fails) and dropped after ``openIDCacheExpirationSeconds``; a token
naming a key id the cached set lacks fetches the set again, at most once every
``openIDKeyIdCacheMissRefreshSeconds``.

Fetching blocks (``urllib``), so the broker runs :meth:`OpenIDDiscovery.fetch` off the event loop
(``AuthenticationService.pending_fetch``); the checks on the loop read only the cache. The keys are
parsed by PyJWT (``PyJWKSet``); HTTPS certificates are checked by :mod:`ssl` against the system's
CAs or ``openIDTokenIssuerTrustCertsFilePath``.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from magnetar.broker.security.errors import AuthenticationError

log = logging.getLogger("magnetar.security.openid")

PROVIDER_NAME = "AuthenticationProviderOpenID"
#: largest discovery or JWKS document read
MAX_DOCUMENT_BYTES = 1024 * 1024
WELL_KNOWN_PATH = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class DiscoveryOptions:
    """The cache and HTTP settings of :class:`OpenIDDiscovery` (Pulsar's ``openID*`` keys)."""

    cache_size: int = 5
    refresh_after_seconds: float = 18 * 60 * 60
    expiration_seconds: float = 24 * 60 * 60
    key_id_miss_refresh_seconds: float = 5 * 60
    timeout_seconds: float = 10.0
    require_https: bool = True
    trust_certs_file: str | None = None


@dataclass(frozen=True)
class _Entry:
    value: Any
    fetched_at: float


@dataclass(frozen=True)
class SigningKey:
    """One key of an issuer's JWKS: the parsed key and the ``alg`` the JWK names (None: not named)."""

    key: Any
    algorithm: str | None


class _Cache:
    """A size-bounded, least-recently-used map of fetched documents (callers hold the lock)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[str, _Entry] = OrderedDict()

    def get(self, key: str, now: float, expiration: float) -> _Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        if now - entry.fetched_at >= expiration:
            del self.entries[key]
            return None
        self.entries.move_to_end(key)
        return entry

    def put(self, key: str, value: Any, now: float) -> None:
        self.entries[key] = _Entry(value, now)
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


class OpenIDDiscovery:
    """The allowed issuers' metadata and keys, fetched on demand (thread-safe)."""

    def __init__(self, options: DiscoveryOptions, clock: Callable[[], float] = time.time) -> None:
        self.options = options
        self.clock = clock
        self._lock = threading.Lock()
        self._metadata = _Cache(options.cache_size)
        self._keys = _Cache(options.cache_size)
        #: jwks_uri -> when a missing key id last made it fetch the set again
        self._miss_fetched_at: dict[str, float] = {}
        #: issuer -> why its last fetch failed (for the refusal's message)
        self._failures: dict[str, str] = {}
        self._context = ssl.create_default_context(cafile=options.trust_certs_file)

    def _fresh(self, entry: _Entry | None, now: float) -> bool:
        return entry is not None and now - entry.fetched_at < self.options.refresh_after_seconds

    def needs_fetch(self, issuer: str, key_id: str | None) -> bool:
        """Whether checking a token of ``issuer`` signed with ``key_id`` needs :meth:`fetch` first."""
        now = self.clock()
        with self._lock:
            metadata = self._metadata.get(issuer, now, self.options.expiration_seconds)
            if not self._fresh(metadata, now):
                return True
            assert metadata is not None
            uri = metadata.value
            keys = self._keys.get(uri, now, self.options.expiration_seconds)
            if not self._fresh(keys, now):
                return True
            assert keys is not None
            return key_id not in keys.value and self._may_refetch_for_miss(uri, now)

    def _may_refetch_for_miss(self, uri: str, now: float) -> bool:
        last = self._miss_fetched_at.get(uri)
        return last is None or now - last >= self.options.key_id_miss_refresh_seconds

    def fetch(self, issuer: str, key_id: str | None) -> None:
        """Fetch what :meth:`needs_fetch` found missing (blocking; run it off the event loop).

        A failure is logged and remembered for the refusal's message; the cached copies stay.
        """
        try:
            self._fetch(issuer, key_id)
        except (AuthenticationError, OSError, ValueError, jwt.PyJWTError) as exc:
            reason = exc.message if isinstance(exc, AuthenticationError) else f"{type(exc).__name__}: {exc}"
            log.warning("OpenID discovery for issuer %s failed: %s", issuer, reason)
            with self._lock:
                self._failures[issuer] = reason[:300]
        else:
            with self._lock:
                self._failures.pop(issuer, None)

    def _fetch(self, issuer: str, key_id: str | None) -> None:
        now = self.clock()
        with self._lock:
            metadata = self._metadata.get(issuer, now, self.options.expiration_seconds)
        if not self._fresh(metadata, now):
            uri = self._fetch_metadata(issuer)
            with self._lock:
                self._metadata.put(issuer, uri, self.clock())
        else:
            assert metadata is not None
            uri = metadata.value
        with self._lock:
            keys = self._keys.get(uri, now, self.options.expiration_seconds)
            miss = keys is not None and key_id not in keys.value and self._may_refetch_for_miss(uri, now)
            if miss:
                self._miss_fetched_at[uri] = now
        if self._fresh(keys, now) and not miss:
            return
        fetched = self._fetch_keys(uri)
        with self._lock:
            self._keys.put(uri, fetched, self.clock())

    def _fetch_metadata(self, issuer: str) -> str:
        document = self._get_json(issuer.rstrip("/") + WELL_KNOWN_PATH)
        if document.get("issuer") != issuer:
            raise AuthenticationError(
                f"Issuer URL mismatch: the provider metadata of {issuer} names issuer {str(document.get('issuer'))[:200]}",
                "ISSUER_MISMATCH", PROVIDER_NAME)
        uri = document.get("jwks_uri")
        if not isinstance(uri, str) or not uri:
            raise AuthenticationError(f"the provider metadata of {issuer} has no jwks_uri",
                                      "ERROR_RETRIEVING_PROVIDER_METADATA", PROVIDER_NAME)
        return uri

    def _fetch_keys(self, uri: str) -> dict[str | None, SigningKey]:
        listed = self._get_json(uri).get("keys")
        if not isinstance(listed, list):
            raise ValueError(f"the JWKS at {uri[:200]} has no keys list")
        keys: dict[str | None, SigningKey] = {}
        for data in listed:
            if not isinstance(data, dict) or data.get("use", "sig") != "sig":
                continue
            try:
                parsed = jwt.PyJWK(data)
            except (jwt.PyJWTError, ValueError, TypeError):  # a key type or curve PyJWT cannot use: skipped
                continue
            alg = data.get("alg")
            keys.setdefault(parsed.key_id, SigningKey(parsed.key, alg if isinstance(alg, str) else None))
        if not keys:
            raise ValueError(f"the JWKS at {uri[:200]} has no usable signing key")
        if len(keys) == 1 and None not in keys:  # a single key also serves tokens that name no key id
            keys[None] = next(iter(keys.values()))
        return keys

    def _get_json(self, url: str) -> dict[str, Any]:
        if self.options.require_https and not url.lower().startswith("https://"):
            raise AuthenticationError(f"{url[:200]} does not use https (openIDRequireIssuersUseHttps)",
                                      "ERROR_RETRIEVING_PROVIDER_METADATA", PROVIDER_NAME)
        if not url.lower().startswith(("https://", "http://")):
            raise ValueError(f"not an http(s) URL: {url[:200]}")
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        context = self._context if url.lower().startswith("https://") else None
        with urllib.request.urlopen(request, timeout=self.options.timeout_seconds, context=context) as response:  # noqa: S310
            body = response.read(MAX_DOCUMENT_BYTES + 1)
        if len(body) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"{url[:200]} answered more than {MAX_DOCUMENT_BYTES} bytes")
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError(f"{url[:200]} did not answer a JSON object")
        return document

    def signing_key(self, issuer: str, key_id: str | None) -> SigningKey:
        """The cached key ``key_id`` of ``issuer``, or AuthenticationError."""
        now = self.clock()
        with self._lock:
            failure = self._failures.get(issuer)
            metadata = self._metadata.get(issuer, now, self.options.expiration_seconds)
            keys = None if metadata is None else self._keys.get(metadata.value, now, self.options.expiration_seconds)
        detail = f": {failure}" if failure else ""
        if metadata is None:
            raise AuthenticationError(f"Failed to retrieve the OpenID provider metadata of {issuer}{detail}",
                                      "ERROR_RETRIEVING_PROVIDER_METADATA", PROVIDER_NAME)
        if keys is None:
            raise AuthenticationError(f"Failed to retrieve the public keys of {issuer}{detail}",
                                      "ERROR_RETRIEVING_PUBLIC_KEY", PROVIDER_NAME)
        key = keys.value.get(key_id)
        if key is None:
            shown = "no key id" if key_id is None else f"key id {key_id[:64]!r}"
            raise AuthenticationError(f"Failed to retrieve the public key: {shown} is not in the JWKS of {issuer}",
                                      "ERROR_RETRIEVING_PUBLIC_KEY", PROVIDER_NAME)
        return key  # type: ignore[no-any-return]
