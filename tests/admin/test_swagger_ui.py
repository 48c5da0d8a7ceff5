"""/docs: Swagger UI served from the package (no CDN), so it works offline."""

from __future__ import annotations

import re
from pathlib import Path

import magnetar.admin.console

from .admin_http import Http

VENDOR = Path(magnetar.admin.console.__file__).parent / "static" / "vendor" / "swagger-ui"


def test_docs_page_loads_everything_from_the_broker(http: Http) -> None:
    page = http.get("/docs")
    assert page.status == 200
    html = page.body.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sorted(sources) == [
        "/console/static/vendor/swagger-ui/favicon-32x32.png",
        "/console/static/vendor/swagger-ui/swagger-ui-bundle.js",
        "/console/static/vendor/swagger-ui/swagger-ui.css",
    ]
    assert "https://" not in html and "'/openapi.json'" in html
    for source in sources:
        reply = http.get(source)
        assert reply.status == 200, source
        assert reply.body == (VENDOR / source.rsplit("/", 1)[1]).read_bytes()
    assert http.get("/openapi.json").json()["info"]["title"] == "magnetar"


def test_redoc_which_needs_a_cdn_is_not_served(http: Http) -> None:
    assert http.get("/redoc").status == 404
