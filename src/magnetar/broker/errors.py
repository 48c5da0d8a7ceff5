"""The errors a broker operation raises to refuse: :class:`BrokerError` (a client's request, with a
ServerError code) and :class:`ResourceError` with its kinds (an admin operation; ``reason`` is the
text Pulsar gives; no HTTP in here: only ``magnetar.admin`` maps the kinds to HTTP statuses and the
``{"reason": ...}`` body). Policies, resources and the admin all raise them, so they live here, below
every one of them."""

from __future__ import annotations

from magnetar.protocol.enums import ServerError


class BrokerError(Exception):
    """A refused request: carries the ServerError code and message sent back to the client."""

    def __init__(self, code: ServerError, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"BrokerError({self.code.name}, {self.message!r})"


class ResourceError(Exception):
    """A refused admin operation; nothing was changed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reason!r})"


class NotFoundError(ResourceError):
    """The cluster, tenant, namespace, topic, subscription or message does not exist."""


class ConflictError(ResourceError):
    """The resource already exists, is not empty, or is busy with the same operation."""


class PreconditionFailedError(ResourceError):
    """A name or value is not valid, or the resource is not in a state that allows the operation."""


class BadRequestError(ResourceError):
    """The request itself is malformed (a body that is not what the operation takes)."""


class ForbiddenError(ResourceError):
    """The operation is refused for what it names (a cluster the tenant may not use)."""


class NotAllowedError(ResourceError):
    """The operation is not allowed on this kind of resource (a partitioned or non-persistent topic)."""


class OutOfRangeError(ResourceError):
    """A number is outside what the broker accepts (partition counts)."""


class InvalidChangeError(ResourceError):
    """A well-formed change that cannot be applied (fewer partitions than today)."""


class NotReadyError(ResourceError):
    """The broker is not ready to serve the operation yet."""
