"""The client session: bytes <-> commands over one connection, per-connection state."""
