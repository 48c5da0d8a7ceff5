"""The error a broker operation raises to refuse a request with a ServerError code."""

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
