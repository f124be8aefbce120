"""``peer-dspy-multihop``: DSPy's own multi-hop program run through ``run_eval`` against a
scripted endpoint. Two hops of query writing, each retrieving hoptree's passages (recorded,
scored), the second hop and the answer reading what the first found; three calls a question at
the URL it was given, temperature 0, the run's output cap; nothing fetched from outside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.peers import PEERS
from tests.peer_endpoint import prompt_text, run_peer

pytest.importorskip("dspy", reason="DSPy is not installed (pip install 'hoptree[peers]')")

QUERIES = {
    "Eiffel": ("Eiffel Tower city", "river flowing through Paris"),
    "Bilbo": ("Bilbo Baggins novel", "The Hobbit first published"),
}
ANSWERS = {"Eiffel": "Seine", "Bilbo": "1936"}


def _field(name: str, value: str) -> str:
    return f"[[ ## {name} ## ]]\n{value}\n\n"


def _reply(body: dict[str, Any]) -> str:
    """DSPy's ChatAdapter format: the reasoning, then the asked field, then the end marker."""
    system, user = (m["content"] for m in body["messages"])
    topic = next(t for t in QUERIES if t in user.split("[[ ## question ## ]]")[1])
    if "`query`" in system:
        hop = 0 if "[[ ## context ## ]]\nN/A" in user else 1  # nothing gathered yet
        out = _field("query", QUERIES[topic][hop])
    else:
        out = _field("answer", ANSWERS[topic])
    return _field("reasoning", "Step by step.") + out + "[[ ## completed ## ]]"


async def test_dspy_multihop_runs_two_hops_on_hoptrees_passages_and_answers(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    run = await run_peer(
        "peer-dspy-multihop", _reply, settings, embeddings, tmp_path / "run", limit=2
    )
    # two hops (a query each) and an answer a question, at the run's URL with the run's key
    run.check_plumbing(calls=6, max_tokens=settings.llm.max_tokens)
    by_topic = run.by_topic(QUERIES)
    assert len(by_topic) == 2
    for topic, row in by_topic.items():
        assert row["error"] is None
        assert row["prediction"] == ANSWERS[topic] and row["peer"]["raw"] == ANSWERS[topic]
        assert row["peer"]["queries"] == list(QUERIES[topic])  # the retriever saw its queries
        assert row["llm_calls"] == 3 and row["prompt_tokens"] > 0
        assert row["peer"]["reasoning"] == "Step by step."
        assert row["peer"]["max_tokens"] == [settings.llm.max_tokens]
    eiffel = by_topic["Eiffel"]
    assert eiffel["em"] == 1 and by_topic["Bilbo"]["em"] == 0
    assert {"Eiffel Tower", "Seine"} <= set(eiffel["retrieved_titles"])
    assert eiffel["gold_recall"] == 1.0
    bodies = run.endpoint.bodies()
    assert all(b["max_completion_tokens"] == settings.llm.max_tokens for b in bodies)
    # the answer reads the passages both hops retrieved (hoptree's, as "title | text")
    answer_prompts = [prompt_text(b) for b in bodies if "`answer`" in prompt_text(b)]
    eiffel_answer = next(p for p in answer_prompts if "Eiffel" in p)
    for title in eiffel["retrieved_titles"]:
        assert f"{title} | " in eiffel_answer


def test_dspy_multihop_is_listed_with_its_install_step() -> None:
    spec = PEERS["peer-dspy-multihop"]
    assert spec.install.modules == ("dspy",)
    assert "hoptree[peers]" in spec.install.step
