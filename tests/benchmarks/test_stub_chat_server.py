"""The stub chat endpoint of the load test keeps up with the planner's prompts.

``benchmarks/stub_chat_server.py`` recognises a prompt by its system text and answers what that
step expects. When a prompt is renamed or a step replaced, the stub must follow, or the load
test measures error paths instead of runs. Here the real stub process serves the real planner
(real tantivy, the real OpenAI-compatible chat client), so a drifted stub fails a test, not a
benchmark hours later.
"""

from __future__ import annotations

import importlib.util
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from pydantic import SecretStr

import prompts
from agent.hoptree_agent import HoptreeAgent
from agent.runtime.chat_models import HoptreeChatOpenAI
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Passage
from searchers.sparse_tantivy import TantivySparseIndex
from tests.locations import REPO
from tests.planner_scripts import KeywordSearcher

ROOT = REPO
STUB = ROOT / "benchmarks" / "stub_chat_server.py"
CORPUS = ROOT / "agent" / "cli" / "demo" / "hotpotqa_demo.jsonl"
QUESTION = (
    'The band who released the debut album "Tinted Windows" had their first performance in '
    "what city?"
)


def _stub_module():
    spec = importlib.util.spec_from_file_location("stub_chat_server", STUB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def stub_process() -> Iterator[str]:
    """The stub as the load test runs it: its own process, no latency; yields its base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(STUB), "--port", "0", "--latency", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True
    ).start()
    try:
        line = lines.get(timeout=60)
        assert line.startswith("READY "), line
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(15)


def test_every_prompt_template_has_a_stub_reply() -> None:
    stub = _stub_module()
    kinds = [kind for kind, _prefix in prompts.system_prefixes()]
    assert sorted(kinds) == sorted(p.stem for p in (ROOT / "prompts").glob("*.txt"))
    for kind in kinds:
        reply = stub.reply_for(kind, "")
        assert reply is not None, kind


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    idx = TantivySparseIndex.create(tmp_path_factory.mktemp("stub") / "sparse")
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    idx.add([Passage(r["id"], r["title"], r["text"], r.get("metadata") or {}) for r in rows])
    return idx


async def test_the_stub_drives_the_planner_through_two_rounds(demo_index) -> None:
    with stub_process() as url:
        chat = HoptreeChatOpenAI(
            base_url=url + "/v1",
            model="stub",
            api_key=SecretStr("x"),
            timeout=10,
            max_retries=0,
            temperature=0,
        )
        agent = HoptreeAgent(
            chat,
            {"keywords": KeywordSearcher(demo_index)},
            planner=PlannerSettings(
                draft=False, supplement=True, findings_call="batched", searchers=["keywords"]
            ),
            budgets=BudgetSettings(deadline_s=60, searcher_deadline_s=60),
            llm_timeout_s=10,
        )
        result = await agent.ask(QUESTION)
        stats = httpx.get(url + "/stats", timeout=5).json()
    assert stats["unknown"] == 0
    # decompose, findings (the copied question is left open), verify (one follow-up),
    # findings for the follow-up, answer: the shape the load test's report describes
    assert stats["calls"] == {"decompose": 1, "findings": 2, "verify": 1, "answer": 1}
    assert result.short_answer and result.citations
    assert not result.degraded
    follow_ups = [q for q in result.sub_queries if q.replaces]
    assert len(follow_ups) == 1
