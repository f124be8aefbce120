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
  lines are the message's ``reasoning_content``. The trace never enters ``content``.
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
cancels its run. The error shapes and handlers are in ``agent.http_errors``, the body and run
limits in ``agent.http_limits``.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from agent.api_docs import mount_offline_docs
from agent.http_errors import (
    ApiError,
    add_error_handlers,
    error_body,
    error_response,
)
from agent.http_limits import BodyLimitMiddleware, RunSlots, stream_response
from agent.http_runs import (
    ClientGone,
    check_question,
    check_thread_id,
    run_ask,
    run_items,
    run_stream,
    sse_event,
)
from agent.http_server import api_key_of, check_bind_allowed, make_server
from agent.results import AskResult, TraceEvent
from agent.service import AgentLike
from agent.settings import EMBEDDED_RUN_SLOTS, ServerSettings
from agent.trace_lines import progress_line

log = logging.getLogger("hoptree.http")

MODEL_ID = "hoptree"
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
# Module level: FastAPI resolves the (string) annotations of endpoints in the module's globals.
BEARER = HTTPBearer(auto_error=False, description="the server's api_key")


# --------------------------------------------------------------------------- request models


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="the multi-hop question")
    thread_id: str | None = Field(None, description="conversation thread for follow-ups")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The part of OpenAI's chat request hoptree reads; other fields are accepted and ignored
    (sampling parameters belong to the planner's own models, not to the client)."""

    model_config = ConfigDict(extra="allow")

    # Optional here so a missing model gets OpenAI's own answer (``check_model``), not a
    # generic "field required".
    model: str | None = Field(None, description=f"must be {MODEL_ID!r}, the one model served")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    user: str | None = None


def message_text(message: ChatMessage) -> str:
    """A message's text: a string, or the text parts of a content list joined by newlines."""
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            raise ApiError(
                422,
                f"only text content is supported, got a {part.get('type')!r} part",
                "invalid_request_error",
                code="unsupported_content",
                param="messages",
            )
    return "\n".join(texts)


def check_model(model: str | None) -> None:
    """Refuse any model but ``hoptree``, as OpenAI refuses one it does not serve.

    Accepting any name would let a client that picked the wrong server or a typo believe it got
    the model it asked for; and clients (Open WebUI, LibreChat) take the id from ``/v1/models``,
    so only a misconfigured one ever sends another.
    """
    if not model:
        raise ApiError(
            400,
            f"you must provide a model parameter; this server offers {MODEL_ID!r}",
            "invalid_request_error",
            code="missing_required_parameter",
            param="model",
        )
    if model != MODEL_ID:
        raise ApiError(
            404,
            f"the model {model!r} does not exist; this server offers {MODEL_ID!r}",
            "invalid_request_error",
            code="model_not_found",
            param="model",
        )


# --------------------------------------------------------------------------- formatting


def sources_block(result: AskResult) -> str:
    if not result.citations:
        return ""
    lines = ["Sources:"]
    for c in result.citations:
        where = f" <{c.url}>" if c.url else f" ({c.id})"
        lines.append(f"[{c.n}] {c.title or c.id}{where}")
    return "\n".join(lines)


def chat_content(result: AskResult) -> str:
    """The cited answer, then a short "Sources:" list so [n] marks mean something in any UI."""
    sources = sources_block(result)
    return f"{result.answer}\n\n{sources}" if sources else result.answer


def usage_json(result: AskResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def hoptree_extra(result: AskResult) -> dict[str, Any]:
    """Structured extras on chat responses (OpenAI clients keep unknown fields)."""
    return {
        "short_answer": result.short_answer,
        "citations": [c.to_json() for c in result.citations],
        "stopped": result.stopped,
        "llm_calls": result.llm_calls,
        "thread_id": result.thread_id,
        "errors": result.errors,
        "citation_check": result.citation_check,
        "degraded": result.degraded,
        "degraded_reasons": result.degraded_reasons,
    }


def progress_text(event: TraceEvent) -> str:
    """The step's line as reasoning text, a markdown list item (chat UIs render reasoning as
    markdown, where bare lines would run together), or "" for a step not shown."""
    try:
        line = progress_line(event)
    except Exception:  # a malformed event must not end the stream that carries the answer
        log.warning("no progress line for a %s event", event.kind, exc_info=True)
        return ""
    return f"- {line}\n" if line else ""


def reasoning_text(trace: list[TraceEvent]) -> str:
    """A finished run's trace as the non-streamed message's ``reasoning_content``: the same
    lines a streaming client received."""
    return "".join(progress_text(event) for event in trace)


def text_pieces(text: str, size: int = 80) -> list[str]:
    """Split on whitespace into pieces of about ``size`` characters; joined they are ``text``."""
    pieces: list[str] = []
    start = 0
    while start < len(text):  # each pass moves ``start`` forward by at least one character
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space + 1 if space > start else end
        pieces.append(text[start:end])
        start = end
    return pieces


# --------------------------------------------------------------------------- the app


def _web_route(name: str, web_file: Callable[[str], FileResponse]) -> Callable[[], Any]:
    async def route() -> FileResponse:
        return web_file(name)

    return route


def create_app(agent: AgentLike, server: ServerSettings) -> FastAPI:
    """The API and the page around one agent. Everything it needs is in ``server``."""
    app = FastAPI(
        title="hoptree",
        summary="Agentic multi-hop search: a planner over sparse, dense, web and RAPTOR searchers",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
    )
    mount_offline_docs(app, "hoptree")
    slots = RunSlots(server.max_concurrency or EMBEDDED_RUN_SLOTS)
    app.state.agent = agent
    app.state.server = server
    app.state.slots = slots
    api_key = api_key_of(server)
    deadline_s = server.request_deadline_s
    created = int(time.time())

    async def require_key(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
    ) -> None:
        if api_key is None:
            return
        given = credentials.credentials if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise ApiError(
                401,
                "missing or wrong API key: send 'Authorization: Bearer <key>'"
                if given
                else "this server needs an API key: send 'Authorization: Bearer <key>'",
                "authentication_error",
                headers={"WWW-Authenticate": "Bearer"},
                code="invalid_api_key",
            )

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(require_key)])

    @v1.post("/ask", summary="Answer a question (the full result, trace included)")
    async def ask(body: AskBody, request: Request) -> JSONResponse:
        question = check_question(body.question, server.max_question_chars)
        thread_id = check_thread_id(body.thread_id)
        slot = slots.acquire_or_429()
        try:
            result = await run_ask(agent, question, thread_id, deadline_s, request)
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
        return stream_response(slot, run_stream(agent, question, thread_id, deadline_s), sse_event)

    @v1.post("/chat/completions", summary="OpenAI-compatible chat completions")
    async def chat_completions(
        body: ChatRequest,
        request: Request,
        x_hoptree_thread: Annotated[str | None, Header()] = None,
    ) -> Response:
        check_model(body.model)  # before anything else: a wrong model must not start a run
        users = [m for m in body.messages if m.role == "user"]
        if not users:
            raise ApiError(
                422,
                "the request has no user message",
                "invalid_request_error",
                code="no_user_message",
                param="messages",
            )
        question = check_question(
            message_text(users[-1]), server.max_question_chars, param="messages"
        )
        if x_hoptree_thread:
            thread_id = check_thread_id(x_hoptree_thread, param="X-Hoptree-Thread")
        else:
            thread_id = check_thread_id(body.user, param="user")
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        now = int(time.time())
        slot = slots.acquire_or_429()
        if body.stream:
            include_usage = bool((body.stream_options or {}).get("include_usage"))
            chunks = chat_stream(
                agent, question, thread_id, deadline_s, completion_id, now, include_usage
            )
            return stream_response(slot, chunks, lambda data: ServerSentEvent(data=data))
        try:
            result = await run_ask(agent, question, thread_id, deadline_s, request)
        except ClientGone:
            return error_response(499, "client closed the request", "client_closed", openai=True)
        finally:
            slot.release()
        message: dict[str, Any] = {"role": "assistant", "content": chat_content(result)}
        reasoning = reasoning_text(result.trace)
        if reasoning:
            message["reasoning_content"] = reasoning
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": now,
                "model": MODEL_ID,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
                ],
                "usage": usage_json(result),
                "hoptree": hoptree_extra(result),
            }
        )

    def model_card() -> dict[str, Any]:
        return {
            "id": MODEL_ID,
            "object": "model",
            "created": created,
            "owned_by": "hoptree",
            "hoptree": {"chat_model": agent.model_label, "searchers": list(agent.searcher_names)},
        }

    @v1.get("/models", summary="The one model this server offers (OpenAI-style list)")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @v1.get("/models/{model_id}", summary="One model (OpenAI-style)")
    async def model(model_id: str) -> dict[str, Any]:
        check_model(model_id)
        return model_card()

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
    app.add_middleware(BodyLimitMiddleware, max_bytes=server.max_body_bytes)
    return app


# A fatal event's type -> the (type, code) of the same failure in a non-streamed reply, so a
# client sees one error whether it streamed or not.
STREAM_ERRORS: dict[str, tuple[str, str | None]] = {
    "timeout": ("timeout_error", "deadline_exceeded"),
    "invalid_question": ("invalid_request_error", "invalid_question"),
    "agent_error": ("agent_error", "agent_failed"),
    "server_error": ("server_error", None),
}


def stream_error(event: TraceEvent | None) -> dict[str, Any]:
    """The ``{"error": {...}}`` data line that ends a chat stream whose run failed; OpenAI's
    client raises it as ``APIError`` with this message."""
    data = event.data if event is not None else {}
    message = str(data.get("error") or "the run ended without a result")
    type_, code = STREAM_ERRORS.get(str(data.get("type") or "agent_error"), ("agent_error", None))
    return error_body(message, type_, code, openai=True)


async def chat_stream(
    agent: AgentLike,
    question: str,
    thread_id: str | None,
    deadline_s: float,
    completion_id: str,
    created: int,
    include_usage: bool,
) -> AsyncGenerator[str, None]:
    """OpenAI ``chat.completion.chunk`` data lines for one run, then ``[DONE]``.

    A run takes minutes, so the trace is sent as it happens: each step as a ``reasoning_content``
    delta (the field Open WebUI, LibreChat and others show as the model's thinking), so a chat
    UI shows the plan unfold instead of a spinner. The cited answer follows as ``content``
    deltas, then the ``stop`` chunk with the ``hoptree`` extras (and a usage chunk when asked).
    The role rides on the first delta, whichever it is, so no empty content precedes the
    reasoning. A failure is sent as ``{"error": {...}}``, which OpenAI's client raises as
    ``APIError``.
    """
    opening: dict[str, Any] = {"role": "assistant"}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        nonlocal opening
        delta, opening = {**opening, **delta}, {}
        return json.dumps(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL_ID,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
                **extra,
            },
            ensure_ascii=False,
        )

    result: AskResult | None = None
    failure: TraceEvent | None = None
    async with aclosing(run_items(agent, question, thread_id, deadline_s)) as items:
        async for item in items:
            if isinstance(item, AskResult):
                result = item
                continue
            if item.kind == "error":
                failure = item  # explains a run that ends without a result
                if item.data.get("fatal"):
                    continue  # sent as the error below, not as a step
            line = progress_text(item)
            if line:
                yield chunk({"reasoning_content": line})
    if result is None:
        yield json.dumps(stream_error(failure), ensure_ascii=False)
        return
    for piece in text_pieces(chat_content(result)):
        yield chunk({"content": piece})
    extra = hoptree_extra(result)
    yield chunk({}, "stop", hoptree=extra)
    if include_usage:
        yield json.dumps(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL_ID,
                "choices": [],
                "usage": usage_json(result),
                "hoptree": extra,
            },
            ensure_ascii=False,
        )
    yield "[DONE]"


async def serve(
    agent: AgentLike,
    server: ServerSettings,
    *,
    on_ready: Callable[[str], None] | None = None,
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info",
) -> None:
    """Serve ``agent`` until interrupted. Runs on the caller's loop: the agent's clients and
    subprocesses belong to it. Raises ``ServeRefused`` before binding anything unsafe."""
    check_bind_allowed(server)
    app = create_app(agent, server)
    await make_server(app, server, on_ready=on_ready, log_level=log_level).serve()
