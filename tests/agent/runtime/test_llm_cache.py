from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agent.runtime.chat_models import HoptreeChatOpenAI
from agent.runtime.llm_cache import CACHE_HIT_FLAG, SQLiteLLMCache
from agent.runtime.usage import STEP_KEY, UsageTracker
from tests.scripted_chat import ScriptedChatModel


def scripted(cache: SQLiteLLMCache, replies: list[str]) -> ScriptedChatModel:
    return ScriptedChatModel(replies=list(replies), cache=cache)


def test_miss_then_hit_serves_the_stored_answer(tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "c.sqlite")
    model = scripted(cache, ["first answer", "second answer"])
    a = model.invoke([HumanMessage(content="q")])
    b = model.invoke([HumanMessage(content="q")])
    assert a.content == b.content == "first answer"
    assert len(model.calls) == 1
    assert cache.stats.hits == 1 and cache.stats.misses == 1 and cache.stats.writes == 1
    assert b.response_metadata.get(CACHE_HIT_FLAG) is True
    assert not a.response_metadata.get(CACHE_HIT_FLAG)
    assert cache.stats.saved_prompt_tokens == 10 and cache.stats.saved_completion_tokens == 5


def test_key_covers_messages_and_parameters(tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "c.sqlite")
    model = scripted(cache, ["one", "two", "three"])
    model.invoke([HumanMessage(content="q")])
    model.invoke([HumanMessage(content="other q")])
    model.invoke([HumanMessage(content="q")], stop=["\n"])
    assert len(model.calls) == 3
    assert cache.stats.hits == 0


def test_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = SQLiteLLMCache(path)
    scripted(cache, ["kept"]).invoke([HumanMessage(content="q")])
    cache.close()
    reopened = SQLiteLLMCache(path)
    model = scripted(reopened, [])
    assert model.invoke([HumanMessage(content="q")]).content == "kept"
    assert model.calls == []


async def test_concurrent_async_use(tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "c.sqlite")
    model = ScriptedChatModel(
        replies=[lambda m: f"echo {m[-1].content}" for _ in range(40)], cache=cache
    )
    prompts = [f"question {i % 20}" for i in range(80)]
    first = await asyncio.gather(*(model.ainvoke([HumanMessage(content=p)]) for p in prompts[:20]))
    rest = await asyncio.gather(*(model.ainvoke([HumanMessage(content=p)]) for p in prompts[20:]))
    for prompt, reply in zip(prompts, [*first, *rest], strict=True):
        assert reply.content == f"echo {prompt}"
    assert len(model.calls) == 20  # every repeat was served by the cache
    assert cache.stats.hits == 60
    assert len(cache) == 20


def test_corrupt_file_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING):
        cache = SQLiteLLMCache(path)
    assert "moved it to" in caplog.text
    aside = list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")
    model = scripted(cache, ["fresh"])
    assert model.invoke([HumanMessage(content="q")]).content == "fresh"
    assert len(cache) == 1


def test_undecodable_entry_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = SQLiteLLMCache(path)
    scripted(cache, ["stored"]).invoke([HumanMessage(content="q")])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE llm_cache SET value = 'not json'")
    model = scripted(cache, ["recomputed"])
    assert model.invoke([HumanMessage(content="q")]).content == "recomputed"
    assert model.invoke([HumanMessage(content="q")]).content == "recomputed"
    assert len(model.calls) == 1


def test_usage_tracker_counts_steps_and_cache_hits(tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "c.sqlite")
    tracker = UsageTracker()
    model = ScriptedChatModel(replies=["a", "b"], cache=cache, callbacks=[tracker])
    model.invoke([HumanMessage(content="x")], config={"metadata": {STEP_KEY: "decompose"}})
    model.invoke([HumanMessage(content="x")], config={"metadata": {STEP_KEY: "decompose"}})
    model.invoke([HumanMessage(content="y")], config={"metadata": {STEP_KEY: "answer"}})
    steps = tracker.by_step()
    assert steps["decompose"].calls == 2 and steps["decompose"].cache_hits == 1
    assert steps["decompose"].prompt_tokens == 10  # the hit spent nothing
    # ... but says what it cost the first time, so a cached run's cost can be told
    assert steps["decompose"].cache_hit_prompt_tokens == 10
    assert steps["decompose"].cache_hit_completion_tokens == 5
    assert steps["answer"].cache_hit_prompt_tokens == 0
    assert steps["answer"].completion_tokens == 5
    assert tracker.total().calls == 3


class _Schema(BaseModel):
    answer: str


def test_openai_cache_key_ignores_port_but_not_schema_or_model() -> None:
    def make(port: int, identity: str) -> HoptreeChatOpenAI:
        return HoptreeChatOpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key="k", cache_identity=identity
        )

    a, b, c = make(1111, "local|m|abc"), make(2222, "local|m|abc"), make(1111, "local|m|zzz")
    assert a._get_llm_string() == b._get_llm_string()
    assert a._get_llm_string() != c._get_llm_string()
    structured = a._get_llm_string(response_format=_Schema)
    assert structured != a._get_llm_string()
    assert "answer" in structured  # the schema itself is part of the key, not just its name


def test_a_fresh_empty_cache_is_still_used(tmp_path: Path) -> None:
    """An empty cache has len 0; the runtime must not mistake it for "no cache"."""
    from agent.runtime.runtime import Runtime
    from agent.settings import load_settings

    settings = load_settings(
        data_dir=tmp_path / "data",
        llm={"base_url": "http://127.0.0.1:9/v1", "model": "remote-model"},
    )
    with Runtime(settings) as runtime:
        assert runtime.llm_cache is not None and len(runtime.llm_cache) == 0
        assert runtime.chat.model.cache is runtime.llm_cache
