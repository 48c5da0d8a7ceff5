"""The client's exceptions: one per broker ServerError code plus the client's own, flat.

Every exception derives from :class:`PulsarError`; broker errors also carry the
``ServerError`` code they came with. Names follow the official Python client where it has one
(``pulsar.Timeout``, ``pulsar.ProducerFenced`` ...), so moving code across is mechanical.
"""

from __future__ import annotations

import enum as _enum

from magnetar.protocol.enums import ServerError


class Result(_enum.IntEnum):
    """The official client's result codes (``pulsar.Result``): what ``PulsarError.error()`` says.

    A code also compares equal to what magnetar's ``send_async`` callbacks get in its place:
    ``Result.Ok`` to None (success), any other code to an exception of that code, so that
    official callbacks testing ``res == pulsar.Result.Ok`` work unchanged.
    """

    def __eq__(self, other: object) -> bool:
        if other is None:
            return self.value == 0
        if isinstance(other, PulsarError):
            return self.value == other.result.value
        return int.__eq__(self, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = _enum.IntEnum.__hash__

    Ok = 0
    UnknownError = 1
    InvalidConfiguration = 2
    Timeout = 3
    LookupError = 4
    ConnectError = 5
    ReadError = 6
    AuthenticationError = 7
    AuthorizationError = 8
    ErrorGettingAuthenticationData = 9
    BrokerMetadataError = 10
    BrokerPersistenceError = 11
    ChecksumError = 12
    ConsumerBusy = 13
    NotConnected = 14
    AlreadyClosed = 15
    InvalidMessage = 16
    ConsumerNotInitialized = 17
    ProducerNotInitialized = 18
    ProducerBusy = 19
    TooManyLookupRequestException = 20
    InvalidTopicName = 21
    InvalidUrl = 22
    ServiceUnitNotReady = 23
    OperationNotSupported = 24
    ProducerBlockedQuotaExceededError = 25
    ProducerBlockedQuotaExceededException = 26
    ProducerQueueIsFull = 27
    MessageTooBig = 28
    TopicNotFound = 29
    SubscriptionNotFound = 30
    ConsumerNotFound = 31
    UnsupportedVersionError = 32
    TopicTerminated = 33
    CryptoError = 34
    IncompatibleSchema = 35
    ConsumerAssignError = 36
    CumulativeAcknowledgementNotAllowedError = 37
    TransactionCoordinatorNotFoundError = 38
    InvalidTxnStatusError = 39
    NotAllowedError = 40
    TransactionConflict = 41
    TransactionNotFound = 42
    ProducerFenced = 43
    MemoryBufferIsFull = 44
    Interrupted = 45


class PulsarError(Exception):
    """Base of every error the client raises."""

    code: ServerError | None = None
    #: the official client's result code of this error (set for every class below)
    result: Result = Result.UnknownError

    def error(self) -> Result:
        """The result code, as ``pulsar.asyncio.PulsarException.error()`` returns it."""
        return self.result


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


class InvalidArgument(InvalidConfiguration, ValueError):
    """An argument of the wrong type or value: also the ValueError the official client raises
    there, so code catching either runs unchanged (see :mod:`magnetar.client.api.arguments`)."""


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


# -- the official client's other conditions (kept so that code catching them runs unchanged) --
class ReadError(ConnectError):
    """Reading from a broker connection failed."""


class InvalidMessage(PulsarError):
    """A message could not be built or parsed."""


class ConsumerNotInitialized(PulsarError):
    """The consumer is not ready (not subscribed yet)."""


class ProducerNotInitialized(PulsarError):
    """The producer is not ready (not registered yet)."""


class CryptoError(PulsarError):
    """End-to-end encryption failed (magnetar's client has none: never raised)."""


class MemoryBufferIsFull(ProducerQueueIsFull):
    """The client's memory limit for pending messages was reached."""


class Interrupted(PulsarError):
    """A blocking call was interrupted."""


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


def _assign_results() -> None:
    """Give every class the result code of its official name (the first name of a class wins)."""
    names = globals()
    for result in Result:
        cls = names.get(result.name)
        if isinstance(cls, type) and issubclass(cls, PulsarError) and "result" not in cls.__dict__:
            cls.result = result


_assign_results()


def error_for_result(result: Result, message: str = "") -> PulsarError:
    """The exception for an official result code (``Result.Ok`` has none: PulsarError then);
    the class of that code's official name, else a PulsarError carrying the code."""
    cls = globals().get(result.name)
    if isinstance(cls, type) and issubclass(cls, PulsarError) and cls.result == result:
        return cls(message or result.name)
    error = PulsarError(message or result.name)
    error.result = result
    return error
