"""The API key, checked before anything reads the request's body.

With an ``api_key`` set, every request under ``/v1`` must carry ``Authorization: Bearer <key>``.
The check is an ASGI middleware in front of the body limit and of FastAPI's body parsing, so a
client without the key learns nothing about its body (no 413, no parse error, no field errors):
401 comes first, on every route. A FastAPI dependency cannot promise that: FastAPI reads and
parses the body before it solves a route's dependencies, so a malformed body without a key got
400 or 422 (issue 63). The answer is in the style of the endpoint called (``errors``).
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.serve.errors import error_response, is_openai_path


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; "" for none or another scheme."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class ApiKeyMiddleware:
    """401 for a request under ``prefix`` without the key, before the app sees it."""

    def __init__(self, app: ASGIApp, api_key: str, prefix: str = "/v1") -> None:
        self.app = app
        self.key = api_key.encode()
        self.prefix = prefix

    def guards(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.guards(scope["path"]):
            header = Headers(scope=scope).get("authorization")
            if not hmac.compare_digest(bearer_token(header).encode(), self.key):
                refused = error_response(
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>'"
                    if header
                    else "this server needs an API key: send 'Authorization: Bearer <key>'",
                    "authentication_error",
                    headers={"WWW-Authenticate": "Bearer"},
                    code="invalid_api_key",
                    openai=is_openai_path(scope["path"]),
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)
