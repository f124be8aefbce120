"""``benchmarks/prompt_prefix.py`` without the model: the recording proxy (through the official
``openai`` client, in front of a loopback stand-in), and the counting of what consecutive prompts
share, with a character tokenizer standing in for the server's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openai import OpenAI

from tests.benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("prompt_prefix")


class Upstream(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Tulsa"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
                "timings": {"cache_n": 4, "prompt_n": 8, "prompt_ms": 80.0},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_proxy_passes_replies_through_and_records_messages_and_timings(
    bench: ModuleType, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    upstream = serve(Upstream)
    recorder = bench.Recorder(next(upstream), log)
    recorder.question = 3
    proxy = serve(bench.make_handler(recorder))
    client = OpenAI(base_url=next(proxy) + "/v1", api_key="k", max_retries=0, timeout=10)
    reply = client.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Where?"},
        ],
    )
    assert reply.choices[0].message.content == "Tulsa"
    (record,) = bench.read_log(log)
    assert record["question"] == 3
    assert [m["content"] for m in record["messages"]] == ["Answer briefly.", "Where?"]
    assert record["timings"]["cache_n"] == 4
    for gen in (upstream, proxy):
        gen.close()


def test_shared_lines_and_prefixes_are_counted_per_question(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_post(url: str, payload: dict[str, Any]) -> dict[str, Any]:
        if url.endswith("/apply-template"):
            return {"prompt": "\n".join(m["content"] for m in payload["messages"])}
        return {"tokens": [ord(c) for c in payload["content"]]}  # a character a token

    monkeypatch.setattr(bench, "_post", fake_post)

    def call(question: int, system: str, user: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        timings = {"cache_n": 2, "prompt_n": 10, "prompt_ms": 20.0}
        return {"question": question, "messages": messages, "timings": timings}

    records = [
        call(0, "Plan it.", "Q: where\n[1] Tulsa is a city"),
        call(0, "Find it.", "[1] Tulsa is a city\nQ: where"),
        call(0, "Plan it.", "Q: other"),
        call(1, "Find it.", "[1] Tulsa is a city"),  # another question shares nothing
    ]
    calls = bench.analyze(records, "http://upstream")
    first, second, third, fourth = calls
    assert first["prefix_prev"] == first["shared_prev"] == first["shared_any"] == 0
    # both lines of the user message occur in the first call, in another order: a reordering
    # could share them (each line counts its characters and a line break), a prefix does not
    assert second["shared_prev"] == len("[1] Tulsa is a city") + 1 + len("Q: where") + 1
    assert second["prefix_prev"] == 0  # "Find" against "Plan"
    # the third call's instructions match the first call, which is not the previous one
    assert third["shared_prev"] == 0
    assert third["shared_any"] == len("Plan it.") + 1
    assert third["prefix_prev"] == 0
    assert fourth["shared_any"] == 0
    # ... but every line of it was read before, for the first question: a bound on any order
    assert fourth["shared_ever"] == len("Find it.") + 1 + len("[1] Tulsa is a city") + 1
    assert first["shared_ever"] == 0
    assert first["reused"] == 2
    result = bench.summarize(calls)
    assert result["questions"] == 2
    assert result["prompt_ms_per_token"] == 2.0  # 80 ms over 40 read tokens
    assert result["per_step_per_question"]["other"]["calls"] == 2.0
