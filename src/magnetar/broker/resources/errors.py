"""Why an admin operation was refused: the kinds of :class:`ResourceError`, defined in
:mod:`magnetar.broker.errors` (below the policies, which raise them too) and named here for the
admin resources and the HTTP layer that maps them to statuses."""

from __future__ import annotations

from magnetar.broker.errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    InvalidChangeError,
    NotAllowedError,
    NotFoundError,
    NotReadyError,
    OutOfRangeError,
    PreconditionFailedError,
    ResourceError,
)

__all__ = [
    "BadRequestError",
    "ConflictError",
    "ForbiddenError",
    "InvalidChangeError",
    "NotAllowedError",
    "NotFoundError",
    "NotReadyError",
    "OutOfRangeError",
    "PreconditionFailedError",
    "ResourceError",
]
