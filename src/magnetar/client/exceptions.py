"""``pulsar.exceptions``: the client's exceptions under the module name of the official client."""

from magnetar.client.errors import *  # noqa: F403 - the same flat hierarchy
