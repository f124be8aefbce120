"""Swagger UI and ReDoc served from this machine.

FastAPI's default ``/docs`` page loads its script and stylesheet from a CDN, so on a machine
without internet (or behind a strict proxy) it renders blank. The assets come instead from the
``fastapi-offline`` wheel (Swagger UI and ReDoc builds, MIT/Apache-2.0), served under
``/docs-assets``; only its files are used, not its FastAPI subclass.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PATH = "/docs-assets"


def assets_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def mount_offline_docs(app: FastAPI, title: str) -> None:
    """``/docs`` and ``/redoc`` over ``app.openapi_url``; create the app with
    ``docs_url=None, redoc_url=None`` so FastAPI's CDN versions do not shadow these."""
    openapi_url = app.openapi_url or "/openapi.json"
    app.mount(ASSETS_PATH, StaticFiles(directory=assets_dir()), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} API",
            redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )
