"""Who is on the other end of a session: CONNECT, AUTH_CHALLENGE / AUTH_RESPONSE, credential refresh.

CONNECT's ``auth_method_name`` / ``auth_data`` (and, on ``pulsar+ssl://``, the client certificate)
go through the broker's :class:`~magnetar.broker.security.AuthenticationService`. A refused CONNECT
gets ERROR ``AuthenticationError`` and the connection closes; an accepted one keeps its role for
the authorization checks of the command handlers. As in Pulsar's ``ServerCnx``, a connection whose
credentials expire is sent AUTH_CHALLENGE; a valid AUTH_RESPONSE for the same role renews them,
an invalid one closes the connection, and so does a challenge still unanswered at the next check
(every ``authenticationRefreshCheckSeconds``). Roles and failures are logged, credentials never.
Keys a check needs from the network are fetched in an executor thread first
(``AuthenticationService.pending_fetch``), never on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from magnetar.broker.security import REFRESH_AUTH_DATA, AuthenticationError, RefreshAction
from magnetar.broker.service import SERVER_VERSION
from magnetar.broker.session.base import SessionBase
from magnetar.protocol.commands import u64
from magnetar.protocol.enums import MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, CommandType, ServerError
from magnetar.protocol.framing import ProtocolError
from magnetar.protocol.schema import BaseCommand

if TYPE_CHECKING:
    from magnetar.protocol.framing import Frame

log = logging.getLogger("magnetar.broker.session.auth")

#: the request id of an ERROR that answers no request (a refused CONNECT or AUTH_RESPONSE), as Pulsar's -1
NO_REQUEST_ID = u64(-1)
#: shortest wait between two refresh checks, so credentials at the edge of expiry do not spin the loop
MIN_REFRESH_DELAY = 0.05


class AuthCommands(SessionBase):
    """CONNECT with authentication, AUTH_RESPONSE, and the periodic credential check of a session.

    Credentials whose check needs keys from the network (an OpenID issuer's JWKS not cached yet)
    are checked once an executor thread has fetched them; the session answers nothing meanwhile.
    """

    #: a fetch of keys for this session's credentials is under way
    _auth_fetching = False

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the refresh checks with the connection."""
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        super().connection_lost(exc)

    def _on_connect(self, command: BaseCommand, frame: Frame) -> None:
        if self.connected or self._auth_fetching:
            raise ProtocolError("second CONNECT on a connection")
        self._connect(command, fetched=False)

    def _after_fetch(self, then: Callable[[], None]) -> Callable[[asyncio.Future[None]], None]:
        """The callback of a key fetch run off the loop: go on with the check unless the session closed."""

        def done(future: asyncio.Future[None]) -> None:
            self._auth_fetching = False
            if future.exception() is not None:
                log.warning("fetching the keys of %s's credentials failed: %r", self.peer, future.exception())
            if not self.closed:
                then()

        return done

    def _fetch_then(self, fetch: Callable[[], None], then: Callable[[], None]) -> None:
        """Run ``fetch`` (blocking: an OpenID issuer's keys) in an executor thread, then ``then`` on the loop."""
        self._auth_fetching = True
        asyncio.get_running_loop().run_in_executor(None, fetch).add_done_callback(self._after_fetch(then))

    def _connect(self, command: BaseCommand, fetched: bool) -> None:
        c = command.connect
        self.client_version = c.client_version
        self.protocol_version = c.protocol_version
        auth = self.service.authentication
        if auth is not None:
            method = c.auth_method_name or "none"
            data = c.auth_data if c.HasField("auth_data") else None
            fetch = None if fetched else auth.pending_fetch(method, data)
            if fetch is not None:
                self._fetch_then(fetch, lambda: self._connect(command, fetched=True))
                return
            try:
                state = auth.authenticate(method, data, self.peer_certificate)
            except AuthenticationError as exc:
                self._refuse_credentials(f"CONNECT (auth method {method[:64]!r})", exc)
                return
            self.auth_state = state
            self.role = state.role
            log.info("%s authenticated with role %r (auth method %s)", self.peer, state.role, state.method)
        self.connected = True
        cmd = BaseCommand(type=CommandType.CONNECTED)
        cmd.connected.server_version = SERVER_VERSION
        cmd.connected.protocol_version = self.negotiated_protocol_version
        cmd.connected.max_message_size = self.service.config.max_message_size
        cmd.connected.feature_flags.supports_auth_refresh = auth is not None
        self.send_command(cmd)
        if auth is not None and self.auth_state is not None:
            self._schedule_refresh(auth.refresh_delay(self.auth_state))

    @property
    def negotiated_protocol_version(self) -> int:
        """The protocol version both ends speak."""
        return max(MIN_PROTOCOL_VERSION, min(PROTOCOL_VERSION, self.protocol_version or PROTOCOL_VERSION))

    def _on_auth_response(self, command: BaseCommand, frame: Frame) -> None:
        self._auth_response(command, fetched=False)

    def _auth_response(self, command: BaseCommand, fetched: bool) -> None:
        auth = self.service.authentication
        state = self.auth_state
        if auth is None or state is None:
            log.info("ignoring AUTH_RESPONSE from %s: authentication is off", self.peer)
            return
        response = command.auth_response
        data = response.response.auth_data if response.HasField("response") else None
        fetch = None if fetched else auth.pending_fetch(state.method, data)
        if fetch is not None:
            self._fetch_then(fetch, lambda: self._auth_response(command, fetched=True))
            return
        try:
            renewed = auth.respond_to_challenge(state, data, self.peer_certificate)
        except AuthenticationError as exc:
            self._refuse_credentials(f"AUTH_RESPONSE (role {state.role!r})", exc)
            return
        self.auth_state = renewed
        log.info("%s refreshed the credentials of role %r", self.peer, renewed.role)
        self._schedule_refresh(auth.refresh_delay(renewed))

    def _refuse_credentials(self, what: str, exc: AuthenticationError) -> None:
        """ERROR AuthenticationError, then close (after the ERROR is written)."""
        log.warning("authentication failed for %s on %s: %s (%s)", self.peer, what, exc.message, exc.reason)
        self.send_error(NO_REQUEST_ID, ServerError.AuthenticationError, exc.message)
        self.close()

    def _schedule_refresh(self, delay: float | None) -> None:
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        if delay is None or self.closed:
            return
        loop = asyncio.get_running_loop()
        self._refresh_timer = loop.call_later(max(MIN_REFRESH_DELAY, delay), self._check_credentials)

    def _check_credentials(self) -> None:
        """One refresh check (Pulsar's ``refreshAuthenticationCredentials``)."""
        self._refresh_timer = None
        auth = self.service.authentication
        state = self.auth_state
        if auth is None or state is None or self.closed:
            return
        action = auth.refresh_action(state)
        if action is RefreshAction.CLOSE:
            log.warning(
                "closing connection from %s: the credentials of role %r expired and the challenge went unanswered",
                self.peer, state.role,
            )
            self.close()
            return
        if action is RefreshAction.CHALLENGE:
            log.info("credentials of role %r on %s expired: sending AUTH_CHALLENGE", state.role, self.peer)
            cmd = BaseCommand(type=CommandType.AUTH_CHALLENGE)
            challenge = cmd.auth_challenge
            challenge.server_version = SERVER_VERSION
            challenge.challenge.auth_method_name = state.method
            challenge.challenge.auth_data = REFRESH_AUTH_DATA
            challenge.protocol_version = self.negotiated_protocol_version
            self.send_command(cmd)
            self._schedule_refresh(float(auth.settings.authentication_refresh_check_seconds))
            return
        self._schedule_refresh(auth.refresh_delay(state))
