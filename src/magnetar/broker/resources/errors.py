"""Why an admin operation was refused, as broker errors: no HTTP in here.

Each class names a kind of refusal; ``reason`` is the text Pulsar gives. Only ``magnetar.admin``
maps the kinds to HTTP statuses (and the ``{"reason": ...}`` body).
"""

from __future__ import annotations


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
