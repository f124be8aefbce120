"""The HTTP agent API and the live trace page (``hoptree serve``).

    app = create_app(agent, settings.server)       # any AgentLike: the planner or a test double
    await serve(agent, settings.server)            # refuses a public bind without an API key

Endpoints:

- ``POST /v1/ask`` ``{"question", "thread_id"}`` -> ``AskResult.to_json()``.
- ``POST /v1/ask/stream`` -> server-sent events, one per ``TraceEvent`` (event name = kind, data =
  ``to_json()``), ending with ``result`` or with an ``error`` whose data has ``fatal: true``.
- ``POST /v1/chat/completions``: OpenAI-compatible, streaming or not. The question is the last user
  message. The thread is the ``X-Hoptree-Thread`` header, else the request's ``user`` field. Without
  either, every request stands alone: earlier turns are *not* sent to the planner, because pasting
  a transcript into the question would break decomposition and the question-length limit; clients
  that want follow-ups name a thread and the planner's checkpointer keeps the conversation.
  Streamed, the trace arrives as it happens as ``reasoning_content`` deltas (one line per step,
  what chat UIs show as "thinking"), then the answer as ``content`` deltas; not streamed, the same
  lines are the message's ``reasoning_content``. The trace never enters ``content``; a draft that
  stands (``draft`` event, ``final: true``) is the answer, streamed as ``content`` the moment it
  exists.
- ``POST /v1/documents`` ``{"name", "text" | "content_base64"}`` adds or replaces a document,
  ``DELETE /v1/documents/{source}`` removes one, ``GET /v1/documents`` lists the sources
  (``agent.serve.documents``; mounted when the server knows its index).
- ``GET /v1/models``, ``GET /v1/models/{id}``, ``GET /v1/searchers``, ``GET /healthz``,
  ``GET /docs``, ``GET /`` (the page).

Errors are ``{"error": {"message", "type", ...}}``. On the endpoints OpenAI's clients call
(``/v1/chat/completions``, ``/v1/models*``) they follow OpenAI's conventions exactly, so those
clients raise the right exception class: all of ``message``, ``type``, ``param``, ``code``; 400 for
a malformed or invalid request (``invalid_json``, ``param`` = the offending field); 404
``model_not_found`` for any model but ``hoptree``, refused before a run starts. The native
``/v1/ask*`` endpoints keep their own style (422 for invalid requests, ``code`` only when set).

Limits are enforced in the server, not in the planner, so one misbehaving client cannot take the
machine: request bodies over ``max_body_bytes`` get 413 (Content-Length and the bytes actually
received); more than ``max_concurrency`` runs at once (streams included) get 429 with
``Retry-After`` rather than a queue nobody can see; every run gets ``request_deadline_s`` as its
own deadline and a hard timeout a little later (504 / fatal error event); a client that goes away
cancels its run.

A request meets its checks in one order: the key (401), the body's size (413), JSON parsing
(400 on OpenAI's endpoints, 422 on the native ones), the fields' types, the request's own checks
(model, question, thread), a free run slot (429), then the run.

This module is the app: its routes, the page, the order of the checks. The parts it wires live
one floor down, each in a module named for what it holds: ``auth`` (the key that guards ``/v1``,
checked before the body is read), ``errors`` (the error shapes and handlers), ``limits`` (body
size, run slots, SSE responses), ``runs`` (checking and running one question for a request),
``openai_api`` (the chat and model routes), ``http_server`` (binding and serving, shared with
``hoptree mcp --http``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse

from agent.serve.api_docs import mount_offline_docs
from agent.serve.auth import ApiKeyMiddleware
from agent.serve.documents import DocumentStore, documents_router
from agent.serve.errors import add_error_handlers, error_response
from agent.serve.http_server import api_key_of, check_bind_allowed, make_server
from agent.serve.limits import BodyLimitMiddleware, RunSlots, deadline_grace_s, stream_response
from agent.serve.openai_api import openai_router
from agent.serve.runs import (
    ClientGone,
    check_question,
    check_thread_id,
    is_result,
    run_ask,
    run_stream,
    sse_event,
)
from agent.service import AgentLike
from agent.settings import EMBEDDED_RUN_SLOTS, ServerSettings

WEB_DIR = Path(__file__).parent / "web"
# The only files the page needs; a fixed map, so no request path ever reaches the file system.
WEB_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# Declares the key in the API schema (Swagger's "Authorize"); it checks nothing: the key is
# checked by ``ApiKeyMiddleware``, before the body is read.
BEARER = HTTPBearer(auto_error=False, description="the server's api_key")


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="the multi-hop question")
    thread_id: str | None = Field(None, description="conversation thread for follow-ups")


def _web_route(name: str, web_file: Callable[[str], FileResponse]) -> Callable[[], Any]:
    async def route() -> FileResponse:
        return web_file(name)

    return route


def create_app(
    agent: AgentLike, server: ServerSettings, documents: DocumentStore | None = None
) -> FastAPI:
    """The API and the page around one agent. Everything it needs is in ``server``; with
    ``documents`` (the index the agent reads), ``/v1/documents`` adds and removes files."""
    app = FastAPI(
        title="hoptree",
        summary="Agentic multi-hop search: a planner over sparse, dense, web and RAPTOR searchers",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
    )
    mount_offline_docs(app, "hoptree")
    deadline_s = server.request_deadline_s
    slots = RunSlots(
        server.max_concurrency or EMBEDDED_RUN_SLOTS, deadline_s + deadline_grace_s(deadline_s)
    )
    app.state.agent = agent
    app.state.server = server
    app.state.slots = slots

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(BEARER)])

    @v1.post("/ask", summary="Answer a question (the full result, trace included)")
    async def ask(body: AskBody, request: Request) -> JSONResponse:
        question = check_question(body.question, server.max_question_chars)
        thread_id = check_thread_id(body.thread_id)
        slot = slots.acquire_or_429()
        try:
            result = await run_ask(agent, question, thread_id, deadline_s, request)
            slot.answered = True
        except ClientGone:
            return error_response(499, "client closed the request", "client_closed")
        finally:
            slot.release()
        return JSONResponse(result.to_json())

    @v1.post(
        "/ask/stream",
        summary="Answer a question, streaming trace events as server-sent events",
        response_class=EventSourceResponse,
    )
    async def ask_stream(body: AskBody) -> EventSourceResponse:
        question = check_question(body.question, server.max_question_chars)
        thread_id = check_thread_id(body.thread_id)
        slot = slots.acquire_or_429()
        events = run_stream(agent, question, thread_id, deadline_s)
        return stream_response(slot, events, sse_event, answered=is_result)

    v1.include_router(openai_router(agent, server, slots))
    if documents is not None:
        v1.include_router(documents_router(documents))

    @v1.get("/searchers", summary="The agent's low-level searchers and chat model")
    async def searchers() -> dict[str, Any]:
        return {"searchers": list(agent.searcher_names), "chat_model": agent.model_label}

    app.include_router(v1)

    @app.get("/healthz", summary="Liveness; open without a key")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "running": slots.running, "max_concurrency": slots.limit}

    def web_file(name: str) -> FileResponse:
        return FileResponse(WEB_DIR / name, media_type=WEB_FILES[name], headers=PAGE_HEADERS)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return web_file("index.html")

    for name in WEB_FILES:
        if name != "index.html":
            app.add_api_route(
                f"/{name}", _web_route(name, web_file), methods=["GET"], include_in_schema=False
            )

    add_error_handlers(app)
    # The last added runs first: the key, then the body's size, then FastAPI parses the body.
    app.add_middleware(BodyLimitMiddleware, max_bytes=server.max_body_bytes)
    api_key = api_key_of(server)
    if api_key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=api_key)
    return app


async def serve(
    agent: AgentLike,
    server: ServerSettings,
    *,
    on_ready: Callable[[str], None] | None = None,
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info",
    documents: DocumentStore | None = None,
) -> None:
    """Serve ``agent`` until interrupted. Runs on the caller's loop: the agent's clients and
    subprocesses belong to it. Raises ``ServeRefused`` before binding anything unsafe."""
    check_bind_allowed(server)
    app = create_app(agent, server, documents)
    await make_server(app, server, on_ready=on_ready, log_level=log_level).serve()
