"""The client's exceptions: one per broker ServerError code plus the client's own, flat.

Every exception derives from :class:`PulsarError`; broker errors also carry the
``ServerError`` code they came with. Names follow the official Python client where it has one
(``pulsar.Timeout``, ``pulsar.ProducerFenced`` ...), so moving code across is mechanical.
"""

from __future__ import annotations

from magnetar.protocol.enums import ServerError


class PulsarError(Exception):
    """Base of every error the client raises."""

    code: ServerError | None = None


# -- client-side conditions ------------------------------------------------------------------
class Timeout(PulsarError):
    """An operation did not complete within its timeout."""


class ConnectError(PulsarError):
    """The broker could not be reached or the connection failed."""


class AlreadyClosed(PulsarError):
    """The client, producer or consumer was already closed."""


class ProducerQueueIsFull(PulsarError):
    """max_pending_messages reached and block_if_queue_full is off."""


class MessageTooBig(PulsarError):
    """A message above the broker's max_message_size, with chunking off."""


class InvalidConfiguration(PulsarError):
    """An option has a value that cannot work."""


class OperationNotSupported(PulsarError):
    """The operation does not apply here (e.g. cumulative ack on a Shared subscription)."""


class CumulativeAcknowledgementNotAllowedError(OperationNotSupported):
    """Cumulative acknowledgement on a Shared or Key_Shared subscription."""


class LookupError_(PulsarError):  # noqa: N801 - avoid shadowing the builtin LookupError
    """A topic lookup failed."""


class ProtocolViolation(PulsarError):
    """The broker sent something the protocol does not allow."""


# -- broker error codes ------------------------------------------------------------------------
class UnknownError(PulsarError):
    """ServerError.UnknownError."""

    code = ServerError.UnknownError


class MetadataError(PulsarError):
    """ServerError.MetadataError."""

    code = ServerError.MetadataError


class PersistenceError(PulsarError):
    """ServerError.PersistenceError: the broker could not store the data."""

    code = ServerError.PersistenceError


class AuthenticationError(PulsarError):
    """ServerError.AuthenticationError."""

    code = ServerError.AuthenticationError


class AuthorizationError(PulsarError):
    """ServerError.AuthorizationError."""

    code = ServerError.AuthorizationError


class ConsumerBusy(PulsarError):
    """ServerError.ConsumerBusy: e.g. a second consumer on an Exclusive subscription."""

    code = ServerError.ConsumerBusy


class ServiceNotReady(PulsarError):
    """ServerError.ServiceNotReady."""

    code = ServerError.ServiceNotReady


class ProducerBlockedQuotaExceededError(PulsarError):
    """ServerError.ProducerBlockedQuotaExceededError."""

    code = ServerError.ProducerBlockedQuotaExceededError


class ProducerBlockedQuotaExceededException(PulsarError):
    """ServerError.ProducerBlockedQuotaExceededException."""

    code = ServerError.ProducerBlockedQuotaExceededException


class ChecksumError(PulsarError):
    """ServerError.ChecksumError."""

    code = ServerError.ChecksumError


class UnsupportedVersionError(PulsarError):
    """ServerError.UnsupportedVersionError."""

    code = ServerError.UnsupportedVersionError


class TopicNotFound(PulsarError):
    """ServerError.TopicNotFound."""

    code = ServerError.TopicNotFound


class SubscriptionNotFound(PulsarError):
    """ServerError.SubscriptionNotFound."""

    code = ServerError.SubscriptionNotFound


class ConsumerNotFound(PulsarError):
    """ServerError.ConsumerNotFound."""

    code = ServerError.ConsumerNotFound


class TooManyRequests(PulsarError):
    """ServerError.TooManyRequests."""

    code = ServerError.TooManyRequests


class TopicTerminated(PulsarError):
    """ServerError.TopicTerminatedError."""

    code = ServerError.TopicTerminatedError


class ProducerBusy(PulsarError):
    """ServerError.ProducerBusy."""

    code = ServerError.ProducerBusy


class InvalidTopicName(PulsarError):
    """ServerError.InvalidTopicName."""

    code = ServerError.InvalidTopicName


class IncompatibleSchema(PulsarError):
    """ServerError.IncompatibleSchema."""

    code = ServerError.IncompatibleSchema


class ConsumerAssignError(PulsarError):
    """ServerError.ConsumerAssignError."""

    code = ServerError.ConsumerAssignError


class TransactionCoordinatorNotFound(PulsarError):
    """ServerError.TransactionCoordinatorNotFound."""

    code = ServerError.TransactionCoordinatorNotFound


class InvalidTxnStatus(PulsarError):
    """ServerError.InvalidTxnStatus."""

    code = ServerError.InvalidTxnStatus


class NotAllowedError(PulsarError):
    """ServerError.NotAllowedError."""

    code = ServerError.NotAllowedError


class TransactionConflict(PulsarError):
    """ServerError.TransactionConflict."""

    code = ServerError.TransactionConflict


class TransactionNotFound(PulsarError):
    """ServerError.TransactionNotFound."""

    code = ServerError.TransactionNotFound


class ProducerFenced(PulsarError):
    """ServerError.ProducerFenced."""

    code = ServerError.ProducerFenced


_BY_CODE: dict[int, type[PulsarError]] = {
    cls.code: cls
    for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, PulsarError) and cls.code is not None
}


def error_for(code: int, message: str) -> PulsarError:
    """The exception for a ServerError code sent by a broker."""
    cls = _BY_CODE.get(code, UnknownError)
    return cls(message)


#: broker errors after which retrying on a new connection can succeed
RETRIABLE_CODES = frozenset({ServerError.ServiceNotReady, ServerError.TooManyRequests, ServerError.MetadataError})


class NotConnected(PulsarError):
    """The producer or consumer has no live connection for an operation that needs one."""


class ErrorGettingAuthenticationData(AuthenticationError):
    """The authentication plugin could not produce credentials."""


class SchemaSerializationError(PulsarError):
    """A value does not fit its schema, or a payload does not decode with it."""


# -- the official client's names for the same conditions ---------------------------------------
PulsarException = PulsarError
LookupError = LookupError_  # noqa: A001 - the official client's name; shadows the builtin only here
BrokerMetadataError = MetadataError
BrokerPersistenceError = PersistenceError
ServiceUnitNotReady = ServiceNotReady
TooManyLookupRequestException = TooManyRequests
TransactionCoordinatorNotFoundError = TransactionCoordinatorNotFound
InvalidTxnStatusError = InvalidTxnStatus
InvalidUrl = InvalidConfiguration
