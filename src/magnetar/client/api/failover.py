"""Cluster failover, the application's side: ``pulsar.ServiceInfo``, ``pulsar.AutoClusterFailover``
and ``pulsar.ServiceInfoProvider``, with the official Python client's arguments and checks.

A client made with one of them as its service URL starts on the primary (or the provider's
initial service) and moves its connections to another cluster when told (see
:mod:`magnetar.client.core.failover`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magnetar.client.api.auth import Authentication


def _check(kind: type | tuple[type, ...], value: Any, name: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = kind.__name__ if isinstance(kind, type) else kind[0].__name__
        raise ValueError(f"Argument {name} is expected to be of type '{expected}' and not '{type(value).__name__}'")


class ServiceInfo:
    """Connection information for one Pulsar cluster: its service URL and how to authenticate."""

    def __init__(
        self, service_url: str, authentication: Authentication | None = None, tls_trust_certs_file_path: str | None = None
    ) -> None:
        _check(str, service_url, "service_url")
        if authentication is not None:
            _check(Authentication, authentication, "authentication")
        if tls_trust_certs_file_path is not None:
            _check(str, tls_trust_certs_file_path, "tls_trust_certs_file_path")
        self._service_url = service_url
        self.authentication = authentication
        self._trust = tls_trust_certs_file_path

    @property
    def service_url(self) -> str:
        """The cluster's service URL."""
        return self._service_url

    @property
    def use_tls(self) -> bool:
        """Whether the URL asks for TLS."""
        return self._service_url.startswith(("pulsar+ssl://", "https://"))

    @property
    def tls_trust_certs_file_path(self) -> str | None:
        """The trust store for TLS connections to this cluster."""
        return self._trust

    def __repr__(self) -> str:
        return (f"ServiceInfo(service_url={self.service_url!r}, use_tls={self.use_tls!r}, "
                f"tls_trust_certs_file_path={self.tls_trust_certs_file_path!r})")


class ServiceInfoProvider:
    """Base of application-defined service discovery: the initial service, then updates pushed
    through the callback given to :meth:`initialize`."""

    def initial_service_info(self) -> ServiceInfo:
        """The service the client starts on."""
        raise NotImplementedError

    def initialize(self, on_service_info_update: Callable[[ServiceInfo], None]) -> None:
        """Keep ``on_service_info_update`` to move the client to another service later."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop background work (called when the client closes)."""
        return None


class AutoClusterFailover:
    """Automatic failover: probe the service in use every ``check_interval_ms``; after
    ``failover_threshold`` failed probes of the primary move to the first secondary that answers,
    and back to the primary after ``switch_back_threshold`` successful probes of it."""

    def __init__(
        self, primary: ServiceInfo, secondary: list[ServiceInfo], check_interval_ms: int = 5000,
        failover_threshold: int = 1, switch_back_threshold: int = 1,
    ) -> None:
        _check(ServiceInfo, primary, "primary")
        _check(list, secondary, "secondary")
        for name, value in (("check_interval_ms", check_interval_ms), ("failover_threshold", failover_threshold),
                            ("switch_back_threshold", switch_back_threshold)):
            _check(int, value, name)
            if value <= 0:
                raise ValueError(f"Argument {name} is expected to be greater than 0")
        if not secondary:
            raise ValueError("Argument secondary is expected to contain at least one ServiceInfo")
        for index, info in enumerate(secondary):
            if not isinstance(info, ServiceInfo):
                raise ValueError(f"Argument secondary[{index}] is expected to be of type 'ServiceInfo' and not "
                                 f"'{type(info).__name__}'")
        self.primary = primary
        self.secondary = list(secondary)
        self.check_interval_ms = check_interval_ms
        self.failover_threshold = failover_threshold
        self.switch_back_threshold = switch_back_threshold

    def __repr__(self) -> str:
        return (f"AutoClusterFailover(primary={self.primary!r}, secondary={self.secondary!r}, "
                f"check_interval_ms={self.check_interval_ms!r}, failover_threshold={self.failover_threshold!r}, "
                f"switch_back_threshold={self.switch_back_threshold!r})")
