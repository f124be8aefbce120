"""A loopback stand-in for an OpenAI-compatible chat endpoint, for load tests of the real planner.

``POST /v1/chat/completions`` sleeps a fixed latency, then answers schema-valid JSON for the
prompt it was sent. The prompt kind is recognised from the system message by
``prompts.template_of`` (the start of each template's system text, up to its first ``{field}``,
names it; the tests' ``RoutedChatModel`` routes the same way), so the stub follows the prompt
files as they change. The replies are
plausible, deterministic and grounded in the passages of the prompt where the planner checks
(a finding is a span copied from its query's first passage, the answer cites passage 1), and a
run takes the planner's two-round shape: decompose (the quoted name and the question), search,
findings (the name's query is answered; the copied question, which ends in "?", is left open),
verify (not sufficient while a query is open: one follow-up naming the finding), search,
findings, answer.

``usage`` carries token counts (about 4 characters a token). ``GET /stats`` returns calls per
prompt kind, unknown prompts, requests with ``stream`` and the largest number of calls in flight.
``stream: true`` is answered as server-sent chunks, the same content split in two.

    python benchmarks/stub_chat_server.py [--port 0] [--latency 0.2] [--log-first]

prints ``READY http://127.0.0.1:PORT`` once listening; runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import time
import uuid
from collections import Counter
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import prompts

STOPWORDS = frozenset(
    """a an the of in on at to for by with from and or is was were are be been who whom whose
    what which when where why how did does do had has have that this these those their its it
    they he she his her as into than then""".split()
)
_WORD = re.compile(r"[\w'’-]+")
_QUOTED = re.compile(r'"([^"]+)"')
ROUNDS_OF_FINDINGS = 3  # the verifier is satisfied once this many queries were searched
_NUMBERED = re.compile(r"^\[(\d+)\]\s*([^:\n]*):\s*(.*)$", re.MULTILINE)
_DOCUMENT = re.compile(r"^Document \d+ \(Title: ([^)\n]*)\)", re.MULTILINE)  # free_answer


def _field(text: str, name: str) -> str:
    """The rest of the line after ``Name:`` in a user message ("Query: ...")."""
    match = re.search(rf"^{name}:\s*(.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _keywords(text: str, limit: int = 8) -> str:
    quoted = [f'"{q}"' for q in _QUOTED.findall(text)]
    rest = _QUOTED.sub(" ", text)
    words = [w for w in _WORD.findall(rest) if w.casefold() not in STOPWORDS]
    return " ".join([*quoted, *words][:limit])


def _passages(text: str) -> list[tuple[int, str, str]]:
    return [(int(n), title.strip(), body.strip()) for n, title, body in _NUMBERED.findall(text)]


def _findings(text: str) -> list[tuple[str, str]]:
    """(query, answer) of each ``- query -> answer`` line of a verify prompt."""
    found = []
    for line in text.splitlines():
        if line.startswith("- ") and " -> " in line:
            query, answer = line[2:].split(" -> ", 1)
            found.append((query.strip(), answer.strip()))
    return found


_QUERY_LINE = re.compile(r"^Query (\d+): (.*)$", re.MULTILINE)
_PASSAGE_NUMBER = re.compile(r"^\[(\d+)\]", re.MULTILINE)
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,3}")


def _query_blocks(text: str) -> list[tuple[int, str, list[int]]]:
    """(number, query, passage numbers) of each ``Query n:`` block of a findings prompt."""
    starts = list(_QUERY_LINE.finditer(text))
    blocks = []
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        numbers = [int(n) for n in _PASSAGE_NUMBER.findall(text[match.end() : end])]
        blocks.append((int(match.group(1)), match.group(2).strip(), numbers))
    return blocks


def _span(passage: str, query: str) -> str:
    """The first capitalised run of the passage that is not one of the query's words: a span
    the planner's support check accepts (it occurs in the passage and says more than the
    query)."""
    asked = {w.casefold() for w in _WORD.findall(query)}
    for run in _CAPITALISED.findall(passage):
        words = [w for w in _WORD.findall(run) if w.casefold() not in STOPWORDS]
        if words and not {w.casefold() for w in words} <= asked:
            return run
    return ""


def _finding_replies(user: str) -> dict[str, Any]:
    texts = {n: body for n, _title, body in _passages(user)}
    findings = []
    for number, query, passages in _query_blocks(user):
        first = next((n for n in passages if n in texts), None)
        span = "" if first is None or query.endswith("?") else _span(texts[first], query)
        findings.append(
            {"query": number, "answer": span, "passages": [first] if span and first else []}
        )
    return {"findings": findings}


def _next_step(user: str) -> dict[str, Any]:
    findings = _findings(user)
    open_queries = [q for q, answer in findings if answer == "NOT FOUND"]
    found = [answer for _q, answer in findings if answer != "NOT FOUND"]
    if not open_queries or len(findings) >= ROUNDS_OF_FINDINGS:
        return {"sufficient": True, "queries": []}
    follow_up = open_queries[0].rstrip("?").strip()
    return {"sufficient": False, "queries": [f"{follow_up} {found[0]}" if found else follow_up]}


def _sentence(text: str, limit: int = 200) -> str:
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return first[:limit].rsplit(" ", 1)[0] if len(first) > limit else first


def reply_for(kind: str, user: str, system: str = "") -> dict[str, Any] | str:
    """The reply content for one prompt kind (a dict is sent as JSON); ``system`` is read by
    the prompts that show their passages there (``free_answer``)."""
    passages = _passages(user)
    top_title = passages[0][1] if passages else ""
    top_text = passages[0][2] if passages else ""
    if kind == "decompose":
        question = _field(user, "Question")
        names = _QUOTED.findall(question)
        queries = [f"{name}" for name in names[:1]] + [question]
        return {"queries": [q for q in queries if q]}
    if kind == "findings":
        return _finding_replies(user)
    if kind == "verify":
        return _next_step(user)
    if kind == "answer":
        return {
            "short_answer": top_title or "unknown",
            "answer": f"{top_title}: {_sentence(top_text)} [1]" if passages else "Unknown.",
        }
    if kind == "closed_book":
        return {"answer": "unknown"}
    if kind == "rag_answer":
        return {"answer": top_title or "unknown"}
    if kind == "free_answer":  # a free-text reply: the first document's title
        titles = _DOCUMENT.findall(system)
        return titles[0].strip() if titles else "unknown"
    if kind == "sparse_rewrite":
        return {"query": _keywords(_field(user, "Query")) or "unknown"}
    if kind == "hyde":
        query = _field(user, "Query")
        return {"passage": f"{query} is described in reference works. {query} is well known."}
    if kind in ("sparse_extend", "sparse_emphasize", "sparse_filter"):
        search = _field(user, "Current search").casefold()
        source = _field(user, "Query") if kind == "sparse_emphasize" else top_title
        if kind == "sparse_filter" and len(passages) > 1:
            source = passages[-1][1]
        words = [w for w in _WORD.findall(source) if w.casefold() not in STOPWORDS]
        fresh = [w for w in words if w.casefold() not in search] or words or ["information"]
        return {"keyword": fresh[0]}
    if kind == "searcher_extract":
        return {"answer": top_title}
    if kind == "searcher_verify":
        return {"answers_query": bool(passages)}
    if kind == "tree_summary":
        return " ".join(f"{title}: {_sentence(body)}" for _, title, body in passages[:4])
    if kind == "choice_answer":  # the QuALITY reader (evals only)
        return {"choice": "A"}
    raise KeyError(kind)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class StubChat:
    def __init__(self, latency_s: float, log_first: bool = False) -> None:
        self.latency_s = latency_s
        self.log_first = log_first
        self.calls: Counter[str] = Counter()
        self.streamed = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.started = time.monotonic()

    def kind_of(self, messages: list[dict[str, Any]]) -> str:
        system = " ".join(
            " ".join(_text(m.get("content")).split())
            for m in messages
            if m.get("role") in ("system", "developer")
        )
        return prompts.template_of(system) or "unknown"

    async def completions(self, request: Request) -> Response:
        body = await request.json()
        if self.log_first:
            self.log_first = False
            print("FIRST REQUEST " + json.dumps(body)[:4000], file=sys.stderr, flush=True)
        messages = body.get("messages") or []
        kind = self.kind_of(messages)
        self.calls[kind] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        user = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
        try:
            system = "\n".join(
                _text(m.get("content"))
                for m in messages
                if m.get("role") in ("system", "developer")
            )
            reply = reply_for(kind, user, system)
        except KeyError:
            error = {"message": f"stub: unrecognised prompt (system message: {messages[:1]!r})"}
            return JSONResponse({"error": {**error, "type": "invalid_request_error"}}, 400)
        content = reply if isinstance(reply, str) else json.dumps(reply)
        prompt_chars = sum(len(_text(m.get("content"))) for m in messages)
        usage = {
            "prompt_tokens": max(1, prompt_chars // 4),
            "completion_tokens": max(1, len(content) // 4),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        model = str(body.get("model") or "stub")
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:16]}", int(time.time())
        if body.get("stream"):
            self.streamed += 1
            return StreamingResponse(
                self._chunks(ident, created, model, content, usage), media_type="text/event-stream"
            )
        return JSONResponse(
            {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        )

    async def _chunks(self, ident: str, created: int, model: str, content: str, usage: Any) -> Any:
        half = len(content) // 2
        deltas = [{"role": "assistant", "content": content[:half]}, {"content": content[half:]}]
        for n, delta in enumerate(deltas):
            finish = "stop" if n == len(deltas) - 1 else None
            chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            yield f"data: {json.dumps(chunk)}\n\n"
        usage_chunk = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage,
        }
        yield f"data: {json.dumps(usage_chunk)}\n\n"
        yield "data: [DONE]\n\n"

    async def stats(self, request: Request) -> Response:
        return JSONResponse(
            {
                "calls": dict(self.calls),
                "total": sum(self.calls.values()),
                "unknown": self.calls.get("unknown", 0),
                "streamed": self.streamed,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "latency_s": self.latency_s,
                "uptime_s": round(time.monotonic() - self.started, 1),
            }
        )

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.completions, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/stats", self.stats, methods=["GET"]),
            ]
        )


class _Server(uvicorn.Server):
    """Prints ``READY <url>`` with the bound port once listening."""

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers:
            port = self.servers[0].sockets[0].getsockname()[1]
            print(f"READY http://127.0.0.1:{port}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 = a free port")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call")
    parser.add_argument("--log-first", action="store_true", help="print the first request body")
    args = parser.parse_args()
    stub = StubChat(args.latency, log_first=args.log_first)
    config = uvicorn.Config(
        stub.app(), host="127.0.0.1", port=args.port, log_level="error", access_log=False
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_Server(config).serve())


if __name__ == "__main__":
    main()
