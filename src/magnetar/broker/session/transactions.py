"""Transaction commands of a session: TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN,
ADD_SUBSCRIPTION_TO_TXN, END_TXN, and the transactional SEND and ACK.

The session only decodes them and calls the broker's transaction component
(:class:`~magnetar.broker.transactions.service.TransactionService`); each answer carries the request
id and, when refused, Pulsar's ServerError code and message. With ``transaction_coordinator_enabled``
off the broker answers as a Pulsar broker without transactions: TC_CLIENT_CONNECT is NotAllowed.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from magnetar.broker.errors import BrokerError
from magnetar.broker.session.deferred import DeferredCommands
from magnetar.broker.transactions.buffer import with_txn_id
from magnetar.protocol.enums import AckType, CommandType, ServerError, TxnAction
from magnetar.protocol.framing import ProtocolError, crc32c
from magnetar.protocol.schema import BaseCommand

if TYPE_CHECKING:
    from magnetar.broker.topics.producer import Producer
    from magnetar.broker.transactions.service import TransactionService
    from magnetar.broker.transport import PublishContext
    from magnetar.protocol.framing import Frame

#: what Pulsar answers a client that enables transactions on a broker without a coordinator
TRANSACTIONS_DISABLED = "Transactions are not enabled."


def txn_of(command: Any) -> tuple[int, int] | None:
    """The transaction id a SEND, ACK or coordinator command carries, or None."""
    if not command.HasField("txnid_most_bits"):
        return None
    return command.txnid_most_bits, command.txnid_least_bits


class TransactionCommands(DeferredCommands):
    """The transaction commands of a session."""

    def _transactions(self) -> TransactionService:
        service = self.service.transactions
        if service is None:
            raise BrokerError(ServerError.NotAllowedError, TRANSACTIONS_DISABLED)
        return service

    def _respond(self, ctype: CommandType, field: str, request_id: int, txn: tuple[int, int] | None,
                 error: BrokerError | None) -> None:
        cmd = BaseCommand(type=ctype)
        resp = getattr(cmd, field)
        resp.request_id = request_id
        if txn is not None:
            resp.txnid_most_bits, resp.txnid_least_bits = txn
        if error is not None:
            resp.error = error.code
            resp.message = error.message
        self.send_command(cmd)

    def _later(self, command: BaseCommand, ctype: CommandType, field: str, request_id: int,
               txn: tuple[int, int] | None, work: Awaitable[Any]) -> None:
        """Answer ``command`` with ``ctype`` once ``work`` is done (its refusal in the response)."""

        async def run() -> None:
            error = None
            try:
                await work
            except BrokerError as exc:
                error = exc
            if not self.closed:
                self._respond(ctype, field, request_id, txn, error)

        self.answer_later(command, run())

    def _on_tc_client_connect(self, command: BaseCommand, frame: Frame) -> None:
        req = command.tc_client_connect_request
        error = None
        try:
            self._transactions().coordinator(req.tc_id)
        except BrokerError as exc:
            error = exc
        self._respond(CommandType.TC_CLIENT_CONNECT_RESPONSE, "tc_client_connect_response", req.request_id, None, error)

    def _on_new_txn(self, command: BaseCommand, frame: Frame) -> None:
        req = command.new_txn

        async def work() -> None:
            txn, error = None, None
            try:
                # the field is named in seconds but every client sends milliseconds (Pulsar reads it so)
                txn = await self._transactions().new_txn(req.tc_id, req.txn_ttl_seconds)
            except BrokerError as exc:
                error = exc
            if not self.closed:
                self._respond(CommandType.NEW_TXN_RESPONSE, "new_txn_response", req.request_id, txn, error)

        self.answer_later(command, work())

    def _on_add_partition_to_txn(self, command: BaseCommand, frame: Frame) -> None:
        req = command.add_partition_to_txn
        txn = (req.txnid_most_bits, req.txnid_least_bits)
        work = self._transactions_call(lambda s: s.add_partitions(txn, list(req.partitions)))
        self._later(command, CommandType.ADD_PARTITION_TO_TXN_RESPONSE, "add_partition_to_txn_response",
                    req.request_id, txn, work)

    def _on_add_subscription_to_txn(self, command: BaseCommand, frame: Frame) -> None:
        req = command.add_subscription_to_txn
        txn = (req.txnid_most_bits, req.txnid_least_bits)
        pairs = [(s.topic, s.subscription) for s in req.subscription]
        work = self._transactions_call(lambda s: s.add_subscriptions(txn, pairs))
        self._later(command, CommandType.ADD_SUBSCRIPTION_TO_TXN_RESPONSE, "add_subscription_to_txn_response",
                    req.request_id, txn, work)

    def _on_end_txn(self, command: BaseCommand, frame: Frame) -> None:
        req = command.end_txn
        txn = (req.txnid_most_bits, req.txnid_least_bits)
        if req.txn_action not in (TxnAction.COMMIT, TxnAction.ABORT):
            raise ProtocolError(f"END_TXN with unknown action {req.txn_action}")
        commit = req.txn_action == TxnAction.COMMIT
        work = self._transactions_call(lambda s: s.end_txn(txn, commit))
        self._later(command, CommandType.END_TXN_RESPONSE, "end_txn_response", req.request_id, txn, work)

    async def _transactions_call(self, call: Any) -> None:
        await call(self._transactions())

    # -- SEND and ACK inside a transaction --------------------------------------------------------
    def publish_in_txn(self, producer: Producer, txn: tuple[int, int], entry: bytes, crc: int,
                       context: PublishContext) -> bool:
        """A SEND carrying a transaction id: the entry (with the id written into its metadata) is
        appended to the topic and held by its transaction buffer. Raises BrokerError when refused."""
        service = self._transactions()
        topic = producer.topic
        if not topic.persistent:
            raise BrokerError(ServerError.NotAllowedError, f"transactions are not supported on non-persistent topic {topic.name}")
        service.publish_check(topic, txn)
        stored = with_txn_id(entry, txn)
        if stored is not entry:
            crc = crc32c(stored)
        appended = topic.publish(producer, stored, crc, context)  # type: ignore[arg-type]
        if appended:
            service.buffer_of(topic).appended(txn, topic.ledger.last_entry_id)  # type: ignore[attr-defined]
        return appended

    def acknowledge_in_txn(self, command: BaseCommand) -> None:
        """An ACK carrying a transaction id: held by the subscription's pending acks, answered with
        ACK_RESPONSE (with the request id) once stored."""
        ack = command.ack
        txn = (ack.txnid_most_bits, ack.txnid_least_bits)
        consumer = self.consumers.get(ack.consumer_id)

        async def work() -> None:
            error = None
            try:
                service = self._transactions()
                if consumer is None:
                    raise BrokerError(ServerError.ConsumerNotFound, f"consumer {ack.consumer_id} not found")
                sub = consumer.subscription
                topic = sub.topic
                acks = [
                    (m.entry_id, list(m.ack_set) or None, m.batch_size or 64 * len(m.ack_set))
                    for m in ack.message_id
                    if m.ledger_id == topic.ledger_id
                ]
                if acks:
                    held = await service.acknowledge(topic, sub, txn, ack.ack_type == AckType.Cumulative, acks)
                    sub.txn_acks_held(held)
            except BrokerError as exc:
                error = exc
            if ack.HasField("request_id") and not self.closed:
                self._respond_ack(ack.consumer_id, ack.request_id, txn, error)

        self.answer_later(command, work())

    def _respond_ack(self, consumer_id: int, request_id: int, txn: tuple[int, int], error: BrokerError | None) -> None:
        cmd = BaseCommand(type=CommandType.ACK_RESPONSE)
        resp = cmd.ack_response
        resp.consumer_id = consumer_id
        resp.request_id = request_id
        resp.txnid_most_bits, resp.txnid_least_bits = txn
        if error is not None:
            resp.error = error.code
            resp.message = error.message
        self.send_command(cmd)
