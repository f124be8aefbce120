"""The client side of the HTTP API tests: reading an SSE stream, a chat stream's deltas, and
OpenAI's error shape, shared by the tests of the routes, of the limits and of the planner behind
the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

KEY = "test-key-123"
TIMEOUT = httpx.Timeout(20.0)


def sse_events(lines: Iterator[str], limit: int = 200) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, JSON data) from an SSE line stream; comments (pings) are skipped."""
    name, data = "message", []
    for count, line in enumerate(lines):
        if count > 10 * limit:
            raise AssertionError("too many SSE lines")
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield name, json.loads("\n".join(data))


def auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def reasoning_of(delta: Any) -> str:
    """A delta's ``reasoning_content``: not in the client's types, so kept as an extra."""
    return (getattr(delta, "model_extra", None) or {}).get("reasoning_content") or ""


def stream_deltas(chunks: Iterator[Any]) -> list[tuple[str, str]]:
    """("reasoning" | "content", text) for every non-empty delta of a chat stream, in order."""
    deltas: list[tuple[str, str]] = []
    for chunk in chunks:
        for choice in chunk.choices:
            if reasoning_of(choice.delta):
                deltas.append(("reasoning", reasoning_of(choice.delta)))
            if choice.delta.content:
                deltas.append(("content", choice.delta.content))
    return deltas


def assert_openai_error(
    r: httpx.Response, status: int, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error shape exactly: all four fields, whatever their values."""
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["message"] and error["code"] == code and error["param"] == param, error
    return error
