"""One client connection: the seam between the socket and the broker.

:class:`ServerConnection` puts the session together: the shared
:class:`~magnetar.net.transport.FramedProtocol` turns bytes into frames and batches the output
(one ``writelines`` per loop iteration), :class:`~magnetar.broker.session.base.SessionBase`
keeps the connection's state and implements the transport interfaces the domain sees, and the
command handlers (lookup.py, producers.py, consumers.py, transactions.py) answer each command. A refused request
gets an ERROR (or SEND_ERROR) and affects nothing else; only malformed frames close the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from magnetar.broker.session.auth import AuthCommands
from magnetar.broker.session.consumers import ConsumerCommands
from magnetar.broker.session.lookup import LookupCommands
from magnetar.broker.session.producers import ProducerCommands
from magnetar.broker.session.transactions import TransactionCommands
from magnetar.protocol.commands import request_id_of
from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.flow_frame import FlowFrame
from magnetar.protocol.framing import Frame, ProtocolError
from magnetar.protocol.schema import BaseCommand
from magnetar.protocol.send_frame import SendFrame

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService

log = logging.getLogger("magnetar.broker.session.connection")


class ServerConnection(AuthCommands, LookupCommands, ProducerCommands, ConsumerCommands, TransactionCommands):
    """Broker side of one client connection."""

    def __init__(self, service: BrokerService) -> None:
        super().__init__(service)
        self._handlers: dict[int, Callable[[BaseCommand, Frame], None]] = {
            CommandType.CONNECT: self._on_connect,
            CommandType.PING: self._on_ping,
            CommandType.PONG: self._on_pong,
            CommandType.PARTITIONED_METADATA: self._on_partitioned_metadata,
            CommandType.LOOKUP: self._on_lookup,
            CommandType.TC_CLIENT_CONNECT_REQUEST: self._on_tc_client_connect,
            CommandType.PRODUCER: self._on_producer,
            CommandType.SEND: self._on_send,
            CommandType.CLOSE_PRODUCER: self._on_close_producer,
            CommandType.SUBSCRIBE: self._on_subscribe,
            CommandType.FLOW: self._on_flow,
            CommandType.ACK: self._on_ack,
            CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: self._on_redeliver,
            CommandType.CLOSE_CONSUMER: self._on_close_consumer,
            CommandType.UNSUBSCRIBE: self._on_unsubscribe,
            CommandType.GET_LAST_MESSAGE_ID: self._on_get_last_message_id,
            CommandType.SEEK: self._on_seek,
            CommandType.CONSUMER_STATS: self._on_consumer_stats,
            CommandType.GET_SCHEMA: self._on_get_schema,
            CommandType.GET_OR_CREATE_SCHEMA: self._on_get_or_create_schema,
            CommandType.GET_TOPICS_OF_NAMESPACE: self._on_get_topics_of_namespace,
            CommandType.AUTH_RESPONSE: self._on_auth_response,
            CommandType.NEW_TXN: self._on_new_txn,
            CommandType.ADD_PARTITION_TO_TXN: self._on_add_partition_to_txn,
            CommandType.ADD_SUBSCRIPTION_TO_TXN: self._on_add_subscription_to_txn,
            CommandType.END_TXN: self._on_end_txn,
        }

    def frame_received(self, frame: Frame) -> None:
        """Answer one command: its handler's reply, or an ERROR when it refuses the request."""
        if self.held_frames is not None:  # a publish rate pauses this connection: in order, later
            self.held_frames.append(frame)
            return
        cls = frame.__class__
        if cls is SendFrame and self.connected:
            self._send_frame(frame)  # type: ignore[arg-type]
            return
        if cls is FlowFrame and self.connected:
            try:
                self.flow_received(frame.consumer_id, frame.message_permits)  # type: ignore[attr-defined]
            except Exception as exc:
                self.answer_failure(frame.command, exc)
            return
        command = frame.command
        ctype = command.type
        if not self.connected and ctype != CommandType.CONNECT:
            log.warning("closing connection from %s: command %s before CONNECT", self.peer, ctype)
            self.abort()
            return
        handler = self._handlers.get(ctype)
        if handler is None:
            self._refuse_unsupported(command)
            return
        try:
            handler(command, frame)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.abort()
        except Exception as exc:
            self.answer_failure(command, exc)

    def _send_frame(self, frame: SendFrame) -> None:
        """A SEND read by hand (its command is parsed only to answer a failure)."""
        try:
            self.send_frame_received(frame)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self.abort()
        except Exception as exc:
            self.answer_failure(frame.command, exc)

    def _refuse_unsupported(self, command: BaseCommand) -> None:
        request_id = request_id_of(command)
        name = CommandType(command.type).name if command.type in CommandType._value2member_map_ else str(command.type)
        if request_id is None:
            log.info("ignoring unsupported command %s from %s", name, self.peer)
            return
        self.send_error(request_id, ServerError.NotAllowedError, f"command {name} is not supported by this broker")
