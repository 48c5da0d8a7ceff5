"""The web console built into the broker: a single-page app at ``/console`` over the admin REST API.

``mount_console(app, admin)`` adds the pages (the app shell for every /console path, the static
assets, ``/`` redirecting browsers) and the few routes the console needs beyond Pulsar's admin API
(decoded messages, broker info, Pulsar's REST producer). The app itself lives in ``static/``.
"""

from __future__ import annotations

from fastapi import FastAPI

from magnetar.admin.access import AccessGuard
from magnetar.admin.console.pages import add_console_pages
from magnetar.admin.console.routes import router
from magnetar.broker.resources.admin import BrokerAdmin


def mount_console(app: FastAPI, admin: BrokerAdmin, access: AccessGuard) -> None:
    """Serve the console and its routes on ``app``, guarded by ``access``."""
    app.include_router(router(admin, access))
    add_console_pages(app)


__all__ = ["mount_console"]
