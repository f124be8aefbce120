"""The OpenAI-compatible face of the agent: ``/v1/chat/completions`` and ``/v1/models*``.

Any OpenAI client or chat UI (Open WebUI, LibreChat, the ``openai`` package) can talk to hoptree
as if it were one model, ``hoptree``. The question is the last user message; the thread is the
``X-Hoptree-Thread`` header, else the request's ``user`` field (earlier turns are not sent to the
planner: clients that want follow-ups name a thread). Streamed, the trace arrives as
``reasoning_content`` deltas, then the cited answer as ``content`` deltas; not streamed, the same
lines are the message's ``reasoning_content``. The trace never enters ``content``. The draft
(draft first) is the one step given whole: while a plan checks it, its cited answer and sources
are reasoning; when it stands, it is the ``content``, sent as it comes and not again. Errors follow
OpenAI's conventions (``agent.serve.errors``), so its clients raise the right exception class.

Kept apart from the app so the translation between OpenAI's shapes and an ``AskResult`` is in
one place; ``openai_router`` gives the routes, which ``create_app`` mounts under ``/v1``.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent

from agent.results import AskResult, Citation, TraceEvent
from agent.serve.errors import ApiError, error_body, error_response
from agent.serve.limits import RunSlots, stream_response
from agent.serve.runs import ClientGone, check_question, check_thread_id, run_ask, run_items
from agent.service import AgentLike
from agent.settings import ServerSettings
from agent.trace_lines import draft_sources, progress_line

log = logging.getLogger("hoptree.http")

MODEL_ID = "hoptree"
DONE = "[DONE]"  # the data line that ends a chat stream that answered


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    include_usage: bool | None = None


class ChatRequest(BaseModel):
    """The part of OpenAI's chat request hoptree reads; other fields are accepted and ignored
    (sampling parameters belong to the planner's own models, not to the client).

    Strict, as OpenAI is: a boolean or a number sent as another JSON type is a 400 naming it,
    never coerced (``"stream": "yes"`` once started a streamed run). OpenAI's scalar sampling
    parameters are declared for that alone: their values are ignored, their types checked.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    # Optional here so a missing model gets OpenAI's own answer (``check_model``), not a
    # generic "field required".
    model: str | None = Field(None, description=f"must be {MODEL_ID!r}, the one model served")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None


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


def sources_block(citations: list[Citation]) -> str:
    if not citations:
        return ""
    lines = ["Sources:"]
    for c in citations:
        where = f" <{c.url}>" if c.url else f" ({c.id})"
        lines.append(f"[{c.n}] {c.label}{where}")
    return "\n".join(lines)


def answer_content(answer: str, citations: list[Citation]) -> str:
    """A cited answer, then a short "Sources:" list so [n] marks mean something in any UI."""
    sources = sources_block(citations)
    return f"{answer}\n\n{sources}" if sources else answer


def chat_content(result: AskResult) -> str:
    """The result's cited answer and its sources (``answer_content``)."""
    return answer_content(result.answer, result.citations)


def usage_json(result: AskResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


# What the ``hoptree`` extras leave out of the result's record: the question and the cited
# answer are the messages', the tokens ``usage``'s and the trace ``reasoning_content``'s; the
# plan, the verdicts, the shown passages, the per-step profile, the cache counts, the seconds
# and the searchers are the native API's (``POST /v1/ask``).
CHAT_OMITS = frozenset(
    {
        "question",
        "answer",
        "sub_queries",
        "verdicts",
        "prompt_tokens",
        "completion_tokens",
        "llm_cache_hits",
        "cache_hit_prompt_tokens",
        "cache_hit_completion_tokens",
        "seconds",
        "sources",
        "usage_by_step",
        "searchers",
        "trace",
    }
)


def hoptree_extra(result: AskResult) -> dict[str, Any]:
    """Structured extras on chat responses (OpenAI clients keep unknown fields): the result's
    record (``AskResult.to_json``) but ``CHAT_OMITS``, so a field added to the result is here
    too."""
    return result.to_json(with_trace=False, omit=CHAT_OMITS)


def draft_content(data: dict[str, Any]) -> str:
    """A draft event's cited answer and its "Sources:" list, as ``chat_content`` writes a
    result's: the content a streaming client receives when the draft is the final answer."""
    citations = [Citation.from_json(c) for c in data.get("citations") or []]
    return answer_content(str(data.get("answer") or ""), citations)


def draft_reasoning(event: TraceEvent) -> str:
    """The draft as reasoning text. A draft the plan checks is given whole (short answer, cited
    answer, its sources), so a chat UI shows an answer within seconds while the plan runs; a
    draft that stands is only named here, its cited answer being the ``content`` itself."""
    line = progress_line(event) or ""
    d = event.data
    if d.get("final") or d.get("short_answer") is None:
        return f"- {line}\n" if line else ""
    why = (d.get("decision") or {}).get("reason") or "the router asked for it"
    sources = draft_sources(d)
    return (
        f"- Draft answer after {float(d.get('seconds') or 0.0):.1f}s: {d['short_answer']}\n"
        f"  {' '.join(str(d.get('answer') or '').split())}\n"
        + (f"  {sources}\n" if sources else "")
        + f"  A plan is checking it ({why}).\n"
    )


def progress_text(event: TraceEvent) -> str:
    """The step's line as reasoning text, a markdown list item (chat UIs render reasoning as
    markdown, where bare lines would run together), or "" for a step not shown; the draft as
    ``draft_reasoning`` gives it."""
    try:
        if event.kind == "draft":
            return draft_reasoning(event)
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


# --------------------------------------------------------------------------- streaming


def rest_of(content: str, sent: str) -> str:
    """What of the final ``content`` a client still needs when ``sent`` was streamed already
    (a draft that stood): nothing when it is the same answer, so nothing arrives twice; the
    final answer after a separator in the unexpected case that it differs."""
    if not sent:
        return content
    if content.startswith(sent):
        return content[len(sent) :]
    return f"\n\n---\nFinal answer:\n{content}"


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
    sent = ""  # the content already streamed: a draft that stands, sent as it came
    async with aclosing(run_items(agent, question, thread_id, deadline_s)) as items:
        async for item in items:
            if isinstance(item, AskResult):
                result = item
                continue
            if item.kind == "error":
                failure = item  # explains a run that ends without a result
                if item.data.get("fatal"):
                    continue  # sent as the error below, not as a step
            if sent:
                continue  # the answer is streaming: later steps stay in the trace
            line = progress_text(item)
            if line:
                yield chunk({"reasoning_content": line})
            if item.kind == "draft" and item.data.get("final") and item.data.get("answer"):
                sent = draft_content(item.data)
                for piece in text_pieces(sent):
                    yield chunk({"content": piece})
    if result is None:
        yield json.dumps(stream_error(failure), ensure_ascii=False)
        return
    for piece in text_pieces(rest_of(chat_content(result), sent)):
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
    yield DONE


def is_done(data: str) -> bool:
    """Whether a chat stream's data line is its last after an answer (``[DONE]``)."""
    return data == DONE


# --------------------------------------------------------------------------- routes


def openai_router(agent: AgentLike, server: ServerSettings, slots: RunSlots) -> APIRouter:
    """The chat and model routes around one agent, sharing the app's run slots; the caller
    mounts them under ``/v1`` behind the API key."""
    router = APIRouter()
    deadline_s = server.request_deadline_s
    created = int(time.time())

    @router.post("/chat/completions", summary="OpenAI-compatible chat completions")
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
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            chunks = chat_stream(
                agent, question, thread_id, deadline_s, completion_id, now, include_usage
            )
            return stream_response(
                slot, chunks, lambda data: ServerSentEvent(data=data), answered=is_done
            )
        try:
            result = await run_ask(agent, question, thread_id, deadline_s, request)
            slot.answered = True
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

    @router.get("/models", summary="The one model this server offers (OpenAI-style list)")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @router.get("/models/{model_id}", summary="One model (OpenAI-style)")
    async def model(model_id: str) -> dict[str, Any]:
        check_model(model_id)
        return model_card()

    return router
