"""``magnetar admin``: the pulsar-admin verbs, over a broker's REST API.

Every command sends one (or a few) HTTP requests to ``--admin-url`` (default
http://localhost:8080) with the standard library, and prints the answer as rich tables, or as
JSON with ``--json``. A refused request prints one line, ``error: <status> <phrase>: <reason>``,
and exits with status 1.

One module per resource; importing them registers their commands, in the order ``--help``
lists them.
"""

# isort: off
# the order of these imports is the order of the commands in --help
from magnetar.cli.admin import clusters, tenants, namespaces  # noqa: F401
from magnetar.cli.admin import topics, subscriptions, messages, topic_lifecycle  # noqa: F401
from magnetar.cli.admin import policies  # noqa: F401
from magnetar.cli.admin import permissions  # noqa: F401
from magnetar.cli.admin import transactions  # noqa: F401
# isort: on
from magnetar.cli.admin.context import admin_app

__all__ = ["admin_app"]
