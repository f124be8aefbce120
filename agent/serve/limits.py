"""Admission limits of the HTTP API: what keeps one misbehaving client from taking the machine.

- ``BodyLimitMiddleware``: request bodies over ``max_body_bytes`` get 413, by Content-Length and
  by the bytes actually received; a body trickling in slower than ``BODY_READ_TIMEOUT_S`` gets
  408.
- ``RunSlots``: more than ``max_concurrency`` runs at once (streams included) get 429 with
  ``Retry-After``, rather than a queue nobody can see: the seconds until the first running run
  is expected to end, judged by the runs that answered.
- ``deadline_grace_s``: every run gets ``request_deadline_s`` as its own deadline and a hard
  timeout this much later.
- ``stream_response``: an SSE run frees its slot and cancels its run however the response ends,
  a client that stops reading included (``SSE_SEND_TIMEOUT_S``).

The limits are enforced in the server, not in the planner, so they hold for any ``AgentLike``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any, TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.serve.errors import ApiError, error_response, is_openai_path

SSE_PING_S = 15.0  # keeps proxies and clients' read timeouts from dropping a quiet run
# A client that stops reading but keeps its socket open would otherwise block the stream (and hold
# its run slot) forever: a send that waits this long ends the response and cancels the run.
SSE_SEND_TIMEOUT_S = 30.0
BODY_READ_TIMEOUT_S = 30.0  # a client trickling its body must not hold a connection forever
RETRY_AFTER_MAX_S = 60  # the longest Retry-After every openai client version obeys (some: 120 s)
T = TypeVar("T")


def deadline_grace_s(deadline_s: float) -> float:
    """How long after its own deadline a run may take before it is cut off.

    The planner answers from what it has when its deadline passes; the grace lets that last
    answer step finish instead of discarding the work with a 504.
    """
    return min(30.0, max(0.5, 0.05 * deadline_s))


class BodyLimitMiddleware:
    """413 for request bodies over the limit, by Content-Length and by the bytes received.

    It buffers the (small, bounded) body and replays it to the app, so a chunked upload with no
    Content-Length is cut off after ``max_bytes + 1`` bytes instead of being read to the end.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        openai = is_openai_path(scope.get("path", ""))
        too_large = error_response(
            413,
            f"the request body is larger than the limit of {self.max_bytes} bytes",
            "invalid_request_error",
            code="request_too_large",
            openai=openai,
        )
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await error_response(
                    400, "bad Content-Length", "invalid_request_error", openai=openai
                )(scope, receive, send)
                return
            if int(declared) > self.max_bytes:
                await too_large(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(BODY_READ_TIMEOUT_S):
                more = True
                while more:  # ends: last chunk, the size limit, a disconnect or the timeout
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    body = message.get("body", b"")
                    size += len(body)
                    if size > self.max_bytes:
                        await too_large(scope, receive, send)
                        return
                    chunks.append(body)
                    more = bool(message.get("more_body", False))
        except TimeoutError:
            await error_response(
                408, "the request body arrived too slowly", "timeout_error", openai=openai
            )(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # after the body: only http.disconnect is left to come

        await self.app(scope, replay, send)


class RunSlot:
    """One of the ``max_concurrency`` run slots; ``release`` is idempotent.

    Its holder sets ``answered`` once the run has given its answer: only such runs say how long
    a slot is held (``RunSlots.retry_after_s``).
    """

    def __init__(self, slots: RunSlots, token: int) -> None:
        self._slots = slots
        self._token = token
        self._released = False
        self.answered = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._slots._release(self._token, self.answered)


class RunSlots:
    """Counts runs in flight; refuses (never queues) beyond the limit.

    Everything runs on one event loop and nothing awaits between the check and the take, so a
    plain counter is race-free. The lengths of runs that answered feed the estimate behind
    ``Retry-After``; ``clock`` is ``time.monotonic`` unless a test moves time by hand.
    """

    def __init__(
        self, limit: int, hard_deadline_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.hard_deadline_s = hard_deadline_s  # no run holds its slot longer than this
        self.clock = clock
        self._started: dict[int, float] = {}
        self._next = 0
        self._answer_s: float | None = None  # moving average of the answered runs' lengths

    @property
    def running(self) -> int:
        return len(self._started)

    def try_acquire(self) -> RunSlot | None:
        if len(self._started) >= self.limit:
            return None
        self._next += 1
        self._started[self._next] = self.clock()
        return RunSlot(self, self._next)

    def _release(self, token: int, answered: bool) -> None:
        started = self._started.pop(token, None)
        if started is not None and answered:
            took = self.clock() - started
            self._answer_s = took if self._answer_s is None else 0.8 * self._answer_s + 0.2 * took

    def _expected_end(self, started: float, now: float) -> float:
        """When a run that started at ``started`` should end: after the answered runs' average
        length (no sooner than a second from now, for a run already past it), and never after
        its hard deadline, the only bound known before any run has answered."""
        latest = started + self.hard_deadline_s
        if self._answer_s is None:
            return latest
        return min(latest, max(started + self._answer_s, now + 1.0))

    def retry_after_s(self) -> int:
        """Seconds until the first running run is expected to end (1..60).

        Runs cut short by their client or by an error are not counted: they say nothing about
        how long an answer takes, and averaging them in once told clients to come back after
        7 s when the first slot freed after 13.5 s (issue 63).
        """
        if not self._started:
            return 1
        now = self.clock()
        first = min(self._expected_end(started, now) for started in self._started.values())
        return int(min(RETRY_AFTER_MAX_S, max(1, math.ceil(first - now))))

    def acquire_or_429(self) -> RunSlot:
        slot = self.try_acquire()
        if slot is None:
            raise ApiError(
                429,
                f"{self.limit} run(s) already in progress, the server's limit; retry later",
                "rate_limit_error",
                headers={"Retry-After": str(self.retry_after_s())},
                code="too_many_runs",
            )
        return slot


class SlotEventSourceResponse(EventSourceResponse):
    """An SSE response that frees its run slot however the response ends.

    The generator's own ``finally`` is not enough: if the client leaves before the first event,
    the generator is never started and its ``finally`` never runs.
    """

    def __init__(self, content: AsyncIterator[Any], *, slot: RunSlot, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()  # closes the agent's stream if it was never reached or left open
            self._slot.release()


def stream_response(
    slot: RunSlot,
    source: AsyncGenerator[T, None],
    to_event: Callable[[T], ServerSentEvent],
    *,
    answered: Callable[[T], bool],
) -> SlotEventSourceResponse:
    """The SSE response of one run: the source is closed (cancelling the run) and the slot
    freed however the response ends. ``answered`` tells the item that carries the answer, which
    marks the slot ``answered``."""

    async def events() -> AsyncIterator[ServerSentEvent]:
        try:
            async with aclosing(source) as run:
                async for item in run:
                    if answered(item):
                        slot.answered = True
                    yield to_event(item)
        finally:
            slot.release()

    return SlotEventSourceResponse(
        events(),
        slot=slot,
        ping=SSE_PING_S,
        send_timeout=SSE_SEND_TIMEOUT_S,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
