"""The real embedded model, end to end through ChatOpenAI. Slow-ish (a 1.5B model on 2 cores),
so each test makes one short call."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agent.runtime.chat_models import ChatModelConfigError, build_chat_model
from agent.runtime.llama_server import LlamaServer, LocalServerError
from agent.runtime.llm_cache import SQLiteLLMCache
from agent.runtime.usage import UsageTracker
from agent.settings import load_settings
from evals.closed_book import answer_closed_book

pytestmark = pytest.mark.llm


class Capital(BaseModel):
    country: str
    capital: str


def test_schema_enforced_output_parses(local_chat) -> None:
    structured = local_chat.model.with_structured_output(
        Capital, method="json_schema", include_raw=True
    )
    result = structured.invoke([HumanMessage(content="What is the capital of Japan?")])
    assert result["parsing_error"] is None
    parsed = result["parsed"]
    assert isinstance(parsed, Capital)
    assert "tokyo" in parsed.capital.lower()
    usage = result["raw"].usage_metadata
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


async def test_closed_book_answer_through_the_prompt_file(local_chat) -> None:
    answer = await answer_closed_book(local_chat.model, "In which country is the city of Lyon?")
    assert "france" in answer.lower()


def test_cached_model_makes_one_server_call(local_chat, tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "cache.sqlite")
    tracker = UsageTracker()
    model = local_chat.model.model_copy(update={"cache": cache, "callbacks": [tracker]})
    bound = model.bind(max_tokens=8)
    first = bound.invoke([HumanMessage(content="Say the word 'hello'.")])
    second = bound.invoke([HumanMessage(content="Say the word 'hello'.")])
    assert first.content == second.content
    assert cache.stats.misses == 1 and cache.stats.hits == 1
    total = tracker.total()
    assert total.calls == 2 and total.cache_hits == 1
    assert total.completion_tokens == first.usage_metadata["output_tokens"]


class Essay(BaseModel):
    passage: str


async def test_a_capped_structured_reply_is_salvaged_with_its_tokens_counted(local_chat) -> None:
    """The real server stops a schema-enforced reply at a lowered limit; the client refuses it,
    and ``ask`` keeps the part that parses and the usage tracker the call's tokens."""
    from searchers.searcher import SearchBudget
    from searchers.structured_calls import ask

    tracker = UsageTracker()
    model = local_chat.model.model_copy(update={"callbacks": [tracker]})
    prompt = "Write a long passage, of ten sentences at least, about the history of Lyon."
    reply = await ask(
        model,
        Essay,
        [HumanMessage(content=prompt)],
        scope=SearchBudget().scope(),
        step="hyde",
        max_tokens=24,
    )
    assert reply.cut, reply.error
    assert reply.value is not None and reply.value.passage.strip()
    usage = tracker.by_step()["hyde"]
    assert usage.calls == 0 and usage.errors == 1  # made, and refused by the client
    assert 0 < usage.completion_tokens <= 24 and usage.prompt_tokens > 0


def test_embedded_server_as_a_remote_openai_endpoint(local_chat, tmp_path: Path) -> None:
    """The non-embedded code path (base_url + model), against a real OpenAI-compatible server."""
    settings = load_settings(
        data_dir=tmp_path, llm={"base_url": local_chat.endpoint, "model": local_chat.label}
    )
    with build_chat_model(settings) as remote:
        assert not remote.embedded and remote.server is None
        reply = remote.model.bind(max_tokens=4).invoke([HumanMessage(content="Say OK.")])
    assert reply.content.strip()


def test_remote_endpoint_without_model_is_a_config_error(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, llm={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(ChatModelConfigError, match="HOPTREE_LLM__MODEL"):
        build_chat_model(settings)


def test_user_gguf_path_serves_and_stop_closes_the_port(local_chat) -> None:
    gguf = Path(local_chat.details["gguf"])
    server = LlamaServer(gguf, alias="user-model", n_ctx=1024).start()
    port = server.port
    assert port is not None
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    server.close()
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(2)
        sock.connect(("127.0.0.1", port))


def test_not_a_gguf_is_refused_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"not a model")
    with pytest.raises(LocalServerError, match="not a GGUF"):
        LlamaServer(bogus, alias="x").start()
    with pytest.raises(LocalServerError, match="not found"):
        LlamaServer(tmp_path / "missing.gguf", alias="x").start()


_OTHER_PROCESS = """
import json
from agent.runtime.chat_models import build_chat_model
from agent.settings import load_settings
with build_chat_model(load_settings(), cache=False) as handle:
    reply = handle.model.bind(max_tokens=4).invoke("Say OK.")
    print(json.dumps([handle.lease.record.pid, handle.lease.record.port, reply.content]))
"""


def test_a_second_process_asks_the_same_model_server(local_chat) -> None:
    """The session's model holds a lease on its data dir's shared server; another hoptree
    process finds that server and gets its answers from it instead of loading a second model
    on the same cores."""
    assert local_chat.lease is not None, "the embedded model runs shared by default"
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pid, port, reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert (pid, port) == (local_chat.lease.record.pid, local_chat.lease.record.port)
    assert reply.strip()
