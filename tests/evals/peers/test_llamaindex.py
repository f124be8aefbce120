"""``peer-llamaindex-multistep``: LlamaIndex's multi-step query engine run through ``run_eval``
against a scripted endpoint. Each step's sub-question goes to hoptree's retriever (recorded,
scored) and is answered from hoptree's passages; a "None" sub-question ends the loop early,
otherwise the engine stops after its three steps; every call reaches the run's URL at
temperature 0 with the output cap; nothing is fetched from outside (tiktoken's encoding and
litellm's model map are read from installed files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.peers import PEERS
from evals.peers.offline import local_model_metadata
from tests.peer_endpoint import prompt_text, run_peer

local_model_metadata()  # litellm fetches its model map at import unless told not to
pytest.importorskip("llama_index.core", reason="LlamaIndex is not installed ('hoptree[peers]')")
pytest.importorskip("llama_index.llms.litellm", reason="llama-index-llms-litellm not installed")

# per topic: the sub-questions the transform writes (then "None" if fewer than three steps),
# what each is answered with, and the final answer
SUB_QUESTIONS = {
    "Eiffel": ["In which city is the Eiffel Tower?", "Which river flows through Paris?"],
    "Bilbo": [
        "Which novel has Bilbo Baggins as its title character?",
        "Who wrote The Hobbit?",
        "When was The Hobbit first published?",
    ],
}
SUB_ANSWERS = dict(
    zip(
        SUB_QUESTIONS["Eiffel"] + SUB_QUESTIONS["Bilbo"],
        ["Paris", "The Seine", "The Hobbit", "Tolkien", "1936"],
        strict=True,
    )
)
FINAL = {"Eiffel": "  Seine\n", "Bilbo": "1936"}
TRANSFORM = "The original question is as follows: "
# litellm's own pydantic models warn as they are built, on its first call
pytestmark = pytest.mark.filterwarnings("ignore:.*the `ReadOnly` qualifier:UserWarning")


def _reply(body: dict[str, Any]) -> str:
    text = prompt_text(body)
    if text.startswith(TRANSFORM):
        question = text.removeprefix(TRANSFORM).splitlines()[0]
        topic = next(t for t in SUB_QUESTIONS if t in question)
        reasoning = text.rsplit("Previous reasoning:", 1)[1]
        step = sum(line.startswith("- ") for line in reasoning.splitlines()) // 2
        asked = SUB_QUESTIONS[topic]
        return asked[step] if step < len(asked) else "None"
    query = text.rsplit("Query: ", 1)[1].splitlines()[0]
    if query in SUB_ANSWERS:
        return SUB_ANSWERS[query]
    return FINAL[next(t for t in SUB_QUESTIONS if t in query)]


async def test_multistep_engine_answers_sub_questions_from_hoptrees_passages(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    run = await run_peer(
        "peer-llamaindex-multistep", _reply, settings, embeddings, tmp_path / "run", limit=2
    )
    # a step is a transform call and an answer call; "None" ends Eiffel's loop at the third
    # transform; Bilbo's runs its three steps; then one final answer each
    run.check_plumbing(calls=(2 * 2 + 1 + 1) + (3 * 2 + 1), max_tokens=settings.llm.max_tokens)
    by_topic = run.by_topic(SUB_QUESTIONS)
    for topic, row in by_topic.items():
        asked = SUB_QUESTIONS[topic]
        assert row["error"] is None and row["warnings"] == []
        assert row["peer"]["queries"] == asked  # each sub-question reached hoptree's retriever
        assert row["peer"]["sub_qa"] == [[s, SUB_ANSWERS[s]] for s in asked]
        assert row["peer"]["raw"] == FINAL[topic]
        assert row["peer"]["max_tokens"] == [settings.llm.max_tokens]
    eiffel, bilbo = by_topic["Eiffel"], by_topic["Bilbo"]
    assert (eiffel["llm_calls"], bilbo["llm_calls"]) == (2 * 2 + 1 + 1, 3 * 2 + 1)
    assert (eiffel["prediction"], bilbo["prediction"]) == ("Seine", "1936")
    assert (eiffel["em"], bilbo["em"]) == (1, 0)
    assert {"Eiffel Tower", "Seine"} <= set(eiffel["retrieved_titles"])
    bodies = run.endpoint.bodies()
    assert all(b["max_tokens"] == settings.llm.max_tokens for b in bodies)  # litellm's name
    # the sub-questions are answered from hoptree's passages, shown with their titles
    shown = "\n".join(prompt_text(b) for b in bodies)
    for title in eiffel["retrieved_titles"]:
        assert f"title: {title}\n" in shown


def test_llamaindex_multistep_is_listed_with_its_install_step() -> None:
    assert "hoptree[peers]" in PEERS["peer-llamaindex-multistep"].install.step
