"""Running one question for one HTTP request, under the server's hard deadline.

The request's question and thread are checked first (``check_question``, ``check_thread_id``);
then ``run_ask`` awaits the whole answer and cancels the run when the client goes away
(``ClientGone``), ``run_stream`` yields the trace events ``/v1/ask/stream`` sends, and
``run_items`` the trace events then the typed ``AskResult`` (the chat stream and the MCP server
read both). A run always ends in its result or in one fatal ``error`` event, never in an
exception a stream could not send. Kept apart from the routes so the OpenAI adapter and the MCP
server run questions exactly as the native endpoints do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

from fastapi import Request
from sse_starlette import ServerSentEvent

from agent.results import AskResult, Citation, Draft, TraceEvent
from agent.rules.question import QuestionError, clean_question
from agent.serve.errors import NO_RETRY, ApiError
from agent.serve.limits import deadline_grace_s
from agent.service import AgentError, AgentLike

log = logging.getLogger("hoptree.http")

THREAD_ID_RE = re.compile(r"^[\w.:@/+=\-]{1,200}$")


def check_question(text: str, max_chars: int, param: str = "question") -> str:
    """The cleaned question; ``param`` names where it came from in the error."""
    try:
        return clean_question(text, max_chars=max_chars)
    except QuestionError as exc:
        raise ApiError(
            422, str(exc), "invalid_request_error", code="invalid_question", param=param
        ) from exc


def check_thread_id(thread_id: str | None, param: str = "thread_id") -> str | None:
    """The thread id, or None for none; ``param`` names where it came from in the error."""
    if thread_id is None or thread_id == "":
        return None
    if not THREAD_ID_RE.match(thread_id):
        raise ApiError(
            422,
            f"{param} must be 1-200 characters of letters, digits and ._:@/+=-",
            "invalid_request_error",
            code="invalid_thread_id",
            param=param,
        )
    return thread_id


class ClientGone(Exception):
    """The client disconnected before its answer was ready; the run was cancelled."""


async def _wait_disconnect(request: Request) -> None:
    """Returns when the client disconnects. The body has been read by then, so the server has
    nothing left to deliver but ``http.disconnect``; the guard only protects against odd
    transports, after which the run simply goes on until it ends or hits its deadline."""
    for _ in range(100):
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
    await asyncio.Event().wait()  # cancelled by ``run_ask`` when the run ends


async def _stop(run: asyncio.Task[Any]) -> None:
    """Cancel a run and wait (bounded) until it has really stopped, so its slot is only freed
    once its LLM calls are gone; its outcome is read so asyncio never logs it as unretrieved."""
    run.cancel()
    await asyncio.wait({run}, timeout=5.0)
    if run.done() and not run.cancelled():
        run.exception()


async def run_ask(
    agent: AgentLike,
    question: str,
    thread_id: str | None,
    deadline_s: float,
    request: Request,
) -> AskResult:
    """``agent.ask`` under the hard deadline, cancelled if the client goes away first."""
    run = asyncio.create_task(agent.ask(question, thread_id=thread_id, deadline_s=deadline_s))
    gone = asyncio.create_task(_wait_disconnect(request))
    gone.add_done_callback(lambda t: t.cancelled() or t.exception())  # never "unretrieved"
    try:
        async with asyncio.timeout(deadline_s + deadline_grace_s(deadline_s)) as limit:
            await asyncio.wait({run, gone}, return_when=asyncio.FIRST_COMPLETED)
    except TimeoutError:
        if not limit.expired():
            raise
        await _stop(run)
        raise ApiError(
            504,
            f"the run did not finish within its deadline of {deadline_s:g} s",
            "timeout_error",
            headers=NO_RETRY,
            code="deadline_exceeded",
        ) from None
    finally:
        gone.cancel()
        if not run.done():
            await _stop(run)  # the client left, or this handler itself was cancelled
    if run.cancelled():
        raise ClientGone()
    try:
        return run.result()
    except QuestionError as exc:
        raise ApiError(422, str(exc), "invalid_request_error", code="invalid_question") from exc
    except AgentError as exc:
        raise ApiError(
            502,
            f"the agent could not answer: {exc}",
            "agent_error",
            headers=NO_RETRY,
            code="agent_failed",
        ) from exc


RunItem = TraceEvent | AskResult


async def _guarded(
    start: Callable[[], AsyncIterator[RunItem]], deadline_s: float
) -> AsyncGenerator[RunItem, None]:
    """The items of the run ``start`` begins, under the hard deadline, always ending in its
    result (an ``AskResult`` or a ``result`` event) or in a fatal ``error`` event, never in an
    exception (except cancellation, which closes the agent's iterator: that is how a
    disconnecting client stops its run)."""
    loop = asyncio.get_running_loop()
    ends_at = loop.time() + deadline_s + deadline_grace_s(deadline_s)
    last: RunItem | None = None
    failure: tuple[str, str] | None = None
    try:
        async with aclosing(start()) as items:
            # Bounded: the hard deadline ends the loop even if the agent never stops.
            while True:
                try:
                    async with asyncio.timeout(max(0.0, ends_at - loop.time())) as limit:
                        item = await anext(items)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    if not limit.expired():
                        raise  # the agent's own timeout: reported below as a failure
                    failure = (
                        f"the run did not finish within its deadline of {deadline_s:g} s",
                        "timeout",
                    )
                    break
                last = item
                yield item
                if isinstance(item, AskResult) or item.kind == "result":
                    return
    except QuestionError as exc:
        failure = (str(exc), "invalid_question")
    except AgentError as exc:
        failure = (f"the agent could not answer: {exc}", "agent_error")
    except Exception as exc:  # a bug in a run must not take the stream down silently
        log.exception("trace stream failed")
        failure = (f"internal error: {type(exc).__name__}: {exc}", "server_error")
    if failure is None:
        if isinstance(last, TraceEvent) and last.kind == "error":
            return  # the agent's own final error event already told the client
        failure = ("the run ended without a result", "server_error")
    message, type_ = failure
    yield TraceEvent(
        kind="error", data={"error": message, "where": "server", "type": type_, "fatal": True}
    )


async def run_stream(
    agent: AgentLike, question: str, thread_id: str | None, deadline_s: float
) -> AsyncGenerator[TraceEvent, None]:
    """The agent's trace events (``agent.stream``) under the hard deadline, ending in ``result``
    or in a fatal ``error`` event: what ``/v1/ask/stream`` sends as it is."""
    async with aclosing(
        _guarded(
            lambda: agent.stream(question, thread_id=thread_id, deadline_s=deadline_s), deadline_s
        )
    ) as items:
        async for item in items:
            if isinstance(item, AskResult):  # not from ``stream``; kept total for the type
                yield TraceEvent(kind="result", data=item.to_json(with_trace=False))
            else:
                yield item


def result_from_json(data: dict[str, Any]) -> AskResult:
    """An ``AskResult`` back from the ``result`` event's data (what the chat stream needs).

    Only for an agent that has ``stream`` but no ``run`` (``AgentLike`` promises no more); the
    planner has ``run``, so its results never make this round trip. Not a full inverse of
    ``to_json``: the plan (``sub_queries``), the sources and the trace are left empty.
    """
    return AskResult(
        question=data.get("question", ""),
        answer=data.get("answer", ""),
        short_answer=data.get("short_answer", ""),
        citations=[Citation.from_json(c) for c in data.get("citations", [])],
        sub_queries=[],
        verdicts=data.get("verdicts", []),
        stopped=data.get("stopped", ""),
        llm_calls=int(data.get("llm_calls", 0)),
        prompt_tokens=int(data.get("prompt_tokens", 0)),
        completion_tokens=int(data.get("completion_tokens", 0)),
        seconds=float(data.get("seconds", 0.0)),
        thread_id=data.get("thread_id"),
        errors=list(data.get("errors", [])),
        citation_check=dict(data.get("citation_check") or {}),
        degraded=bool(data.get("degraded", False)),
        degraded_reasons=list(data.get("degraded_reasons", [])),
        draft=Draft.from_json(data["draft"]) if data.get("draft") else None,
        final_choice=data.get("final_choice"),
        first_answer_s=data.get("first_answer_s"),
    )


async def _typed(events: AsyncIterator[TraceEvent]) -> AsyncGenerator[RunItem, None]:
    """``agent.stream``'s events with its ``result`` event turned back into an ``AskResult``,
    for agents without ``run``; closing this closes (and so cancels) the agent's stream."""
    async with aclosing(events) as stream:
        async for event in stream:
            yield result_from_json(event.data) if event.kind == "result" else event


async def run_items(
    agent: AgentLike, question: str, thread_id: str | None, deadline_s: float
) -> AsyncGenerator[RunItem, None]:
    """The run's trace events as they happen, then its typed ``AskResult`` (or a fatal
    ``error`` event), under the hard deadline.

    It drives ``agent.run`` when the agent has one (the planner does): the chat stream then
    needs no JSON round trip of the result. Other agents' ``stream`` is adapted.
    """
    run = getattr(agent, "run", None)

    def start() -> AsyncIterator[RunItem]:
        if callable(run):
            return run(question, thread_id=thread_id, deadline_s=deadline_s)
        return _typed(agent.stream(question, thread_id=thread_id, deadline_s=deadline_s))

    async with aclosing(_guarded(start, deadline_s)) as items:
        async for item in items:
            yield item


def is_result(event: TraceEvent) -> bool:
    """Whether ``event`` carries the run's answer (the end of a stream that answered)."""
    return event.kind == "result"


def sse_event(event: TraceEvent) -> ServerSentEvent:
    return ServerSentEvent(event=event.kind, data=json.dumps(event.to_json(), ensure_ascii=False))
