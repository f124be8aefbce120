"""The peers' shared contract (``evals.peers.base``), with a peer written for the test: it
reaches the model only at the URL it is given (through the metering proxy, which counts each
question's calls and tokens and sends the run's key upstream), retrieves only through hoptree's
retriever (whose passages are recorded and scored), and writes the rows every pipeline writes.
A peer that is not installed fails before any question runs, naming its install step. The
adapters of each project have their own tests (``test_eval_peers_<project>.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_openai import ChatOpenAI

from agent.settings import Settings
from evals import catalogue
from evals.peers import PEERS
from evals.peers.base import PeerAnswer, PeerInstall, PeerMissingError, PeerQuestion, peer
from evals.pipelines import EvalContext
from evals.run_directory import RunConfig
from evals.runner import run_eval
from tests.eval_script import ROW_FIELDS, TINY, rows, scripted_settings
from tests.peer_endpoint import peer_endpoint, prompt_text

INSTALLED = PeerInstall(("json",), "nothing to install")


def _two_step_peer(q: PeerQuestion) -> PeerAnswer:
    """Retrieve, ask for a follow-up query, retrieve again, answer: two calls, two searches."""
    client = openai.OpenAI(base_url=q.base_url, api_key=q.api_key, timeout=q.timeout_s)
    first = q.retrieve(q.question)
    follow = client.chat.completions.create(
        model=q.model,
        messages=[{"role": "user", "content": f"FOLLOW {q.question}\n{first[0].text}"}],
        temperature=0,
        max_tokens=q.max_tokens,
    )
    second = q.retrieve(follow.choices[0].message.content or "", 1)
    final = client.chat.completions.create(
        model=q.model,
        messages=[{"role": "user", "content": f"ANSWER {q.question}\n{second[0].text}"}],
        temperature=0,
        max_tokens=q.max_tokens,
    )
    raw = final.choices[0].message.content or ""
    return PeerAnswer(raw.removeprefix("So the answer is: "), raw=raw)


def _reply(body: dict[str, Any]) -> str:
    text = prompt_text(body)
    if text.startswith("FOLLOW"):
        return "Seine river Paris" if "Eiffel" in text else "The Hobbit published"
    return "So the answer is: Seine" if "Eiffel" in text else "So the answer is: 1936"


@pytest.fixture
def test_peer(monkeypatch: pytest.MonkeyPatch) -> str:
    made = peer("peer-test", "two searches, two calls", INSTALLED, _two_step_peer)
    monkeypatch.setitem(PEERS, made.name, made)
    monkeypatch.setitem(catalogue.PIPELINES, made.name, made.spec)
    return made.name


async def test_a_peer_reaches_the_model_only_through_the_meter_and_writes_common_rows(
    settings: Settings, embeddings: Any, tmp_path: Path, test_peer: str
) -> None:
    with peer_endpoint(_reply) as endpoint:
        chat = ChatOpenAI(base_url=endpoint.base_url, model="stub", api_key="run-key")
        ctx = EvalContext(
            chat=chat, settings=scripted_settings(settings), embeddings=embeddings, k=2
        )
        out = tmp_path / "run"
        metrics = await run_eval(
            RunConfig(dataset=TINY, pipeline=test_peer, out=out, setting="distractor", limit=2),
            ctx,
        )
    assert metrics["n"] == 2
    recorded = json.loads((out / "run.json").read_text())
    assert "planner_settings" not in recorded  # hoptree's planner settings are not the peer's
    got = rows(out)
    assert all(set(row) >= ROW_FIELDS for row in got)
    by_topic = {("Eiffel" in r["question"]): r for r in got}
    eiffel = by_topic[True]
    assert eiffel["prediction"] == "Seine" and eiffel["em"] == 1
    assert eiffel["llm_calls"] == 2 and eiffel["prompt_tokens"] > 0
    assert eiffel["completion_tokens"] == 14 and eiffel["decode_ms"] == 60.0
    assert eiffel["retrieved_titles"] and eiffel["gold_recall"] is not None
    assert eiffel["peer"]["queries"][1] == "Seine river Paris"
    assert eiffel["peer"]["raw"] == "So the answer is: Seine"
    # the stub saw every call with the run's key, under its own /v1 path, never the peer's key
    assert len(endpoint.requests) == 4
    assert {r["auth"] for r in endpoint.requests} == {"Bearer run-key"}
    assert {r["path"] for r in endpoint.requests} == {"/v1/chat/completions"}


async def test_a_peer_that_fails_mid_question_counts_its_calls_and_the_run_goes_on(
    settings: Settings, embeddings: Any, tmp_path: Path, test_peer: str
) -> None:
    def reply(body: dict[str, Any]) -> str:
        if prompt_text(body).startswith("ANSWER"):
            raise RuntimeError("the server fell over")
        return "Seine"

    with peer_endpoint(reply) as endpoint:
        chat = ChatOpenAI(base_url=endpoint.base_url, model="stub", api_key="k", max_retries=0)
        ctx = EvalContext(chat=chat, settings=scripted_settings(settings), embeddings=embeddings)
        out = tmp_path / "run"
        await run_eval(
            RunConfig(dataset=TINY, pipeline=test_peer, out=out, setting="distractor", limit=1),
            ctx,
        )
    (row,) = rows(out)
    assert row["error"] and "peer-test" in row["error"]
    assert row["llm_calls"] >= 2  # the follow-up and at least one failed answer call
    assert any("failed" in w for w in row["warnings"])


def test_a_peer_not_installed_names_its_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = peer(
        "peer-missing",
        "needs a module nobody has",
        PeerInstall(("no_such_peer_module_xyz.core",), "pip install no-such-peer"),
        _two_step_peer,
    )
    monkeypatch.setitem(PEERS, missing.name, missing)
    monkeypatch.setitem(catalogue.PIPELINES, missing.name, missing.spec)
    with pytest.raises(PeerMissingError, match="pip install no-such-peer"):
        catalogue.get_pipeline("peer-missing")


def test_a_scripted_chat_model_is_refused_for_a_peer(
    settings: Settings, tmp_path: Path, test_peer: str
) -> None:
    from evals.corpora import Corpus
    from evals.datasets import load_questions
    from evals.pipelines import PipelineError
    from tests.eval_script import scripted_chat

    ctx = EvalContext(chat=scripted_chat(), settings=settings)
    question = load_questions(TINY)[0]
    with pytest.raises(PipelineError, match="OpenAI-compatible endpoint"):
        import asyncio

        asyncio.run(
            catalogue.PIPELINES[test_peer].run(ctx, Corpus("x", {"sparse": None}), question)
        )


def test_every_peer_is_listed_with_the_bm25_retriever() -> None:
    assert all(p.spec.needs == ("sparse",) for p in PEERS.values())
    assert set(PEERS) <= set(catalogue.PIPELINES)
    json.dumps(sorted(PEERS))  # names are plain strings
