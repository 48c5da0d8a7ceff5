"""The console's pages: the app shell for every /console path, its static files, and ``/``.

The console is a single-page app without a build step: ES modules, HTML and CSS shipped as package
data in ``static/``. Every view has its own URL under ``/console/``; the server answers each of
them with the same shell and the app's router draws the view the path names.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from magnetar import __version__

STATIC_DIR = Path(__file__).parent / "static"

#: a strict policy: every script, style and image comes from this origin, nothing inline but styles
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


def shell_html() -> str:
    """The app shell: the page every /console URL returns, with the version stamped in."""
    text = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    return text.replace("{{version}}", __version__)


def wants_html(request: Request) -> bool:
    """True when the request is a browser's: it accepts text/html."""
    return "text/html" in request.headers.get("accept", "")


def add_console_pages(app: FastAPI) -> None:
    """Serve the console on ``app``: /console (and every path under it), its assets, and ``/``."""
    shell = shell_html()
    headers = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "Cache-Control": "no-cache",
               "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
    app.mount("/console/static", StaticFiles(directory=STATIC_DIR), name="console-static")

    @app.get("/console", include_in_schema=False)
    async def console_root() -> HTMLResponse:
        return HTMLResponse(shell, headers=headers)

    @app.get("/console/{path:path}", include_in_schema=False)
    async def console_page(path: str) -> HTMLResponse:
        return HTMLResponse(shell, headers=headers)

    @app.get("/", include_in_schema=False)
    async def root(request: Request) -> Response:
        if wants_html(request):
            return RedirectResponse("/console", status_code=307)
        raise StarletteHTTPException(404, "Not Found")
