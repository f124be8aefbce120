"""Gold hops in a run: how ``score`` turns retrieved ids into hop recall (and gold recall by id
where titles repeat), and a MuSiQue file run end to end in both settings with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.datasets import EvalQuestion, GoldHop
from evals.pipelines import EvalContext, PipelineOutput
from evals.run_directory import RunConfig
from evals.runner import run_eval, score
from searchers.corpus import paragraph_text_id, read_passages
from tests.evals.test_musique import musique_row, other_row, write_rows
from tests.routed_chat import RoutedChatModel

PARIS = ("Paris", "Paris is the capital of France.")
PARIS_TEXAS = ("Paris", "Paris is a city in Lamar County, Texas.")
SEINE = ("Seine", "The Seine flows through Paris.")
IDS = {pair: paragraph_text_id(*pair) for pair in (PARIS, PARIS_TEXAS, SEINE)}


def musique_question() -> EvalQuestion:
    """A 2-hop MuSiQue-like question whose distractor shares the gold "Paris" title."""
    pairs = [PARIS, SEINE, PARIS_TEXAS]
    return EvalQuestion(
        id="2hop__1_2",
        question="Which river flows through the capital of France?",
        answers=["Seine"],
        supporting_titles=["Paris", "Seine"],
        paragraphs=pairs,
        type="2hop",
        paragraph_ids=[IDS[p] for p in pairs],
        supporting_ids=[IDS[PARIS], IDS[SEINE]],
        gold_hops=[
            GoldHop("capital of France", "Paris", IDS[PARIS], "Paris"),
            GoldHop("river through #1", "Seine", IDS[SEINE], "Seine"),
        ],
    )


def output(pairs: list[tuple[str, str]], **fields: Any) -> PipelineOutput:
    return PipelineOutput(
        prediction="Seine",
        retrieved_titles=[title for title, _ in pairs],
        retrieved_ids=[IDS[p] for p in pairs],
        **fields,
    )


def test_hop_recall_and_gold_recall_by_id_where_titles_repeat() -> None:
    row = score(musique_question(), output([PARIS_TEXAS, SEINE]))
    assert row["hop_recall"] == 0.5
    assert row["gold_recall"] == 0.5  # by title it would be 1.0: Paris, Texas is not gold
    assert "hop_queries_unmatched" not in row  # no per-query passages reported
    full = score(musique_question(), output([SEINE, PARIS]))
    assert full["hop_recall"] == 1.0 and full["gold_recall"] == 1.0


def test_per_query_passages_count_the_queries_that_found_no_gold_hop() -> None:
    per_query = [[IDS[PARIS_TEXAS]], [IDS[SEINE], IDS[PARIS_TEXAS]], []]
    row = score(musique_question(), output([PARIS_TEXAS, SEINE], query_passage_ids=per_query))
    assert row["hop_queries_unmatched"] == 2


def test_hop_recall_is_none_where_it_cannot_be_told() -> None:
    question = musique_question()
    # a pipeline that retrieves nothing by design
    blind = score(question, PipelineOutput(prediction="Seine"), retrieves=False)
    assert blind["hop_recall"] is None and blind["gold_recall"] is None
    # passages reported by title only (no ids): unknown, not zero; gold recall by title
    titles_only = PipelineOutput(prediction="Seine", retrieved_titles=["Paris", "Seine"])
    row = score(question, titles_only)
    assert row["hop_recall"] is None and row["gold_recall"] == 1.0
    # a search that found nothing at all did find no hop
    assert score(question, PipelineOutput(prediction=""))["hop_recall"] == 0.0
    # a question without gold hops (HotpotQA): scored by title as before
    hotpot = EvalQuestion("h1", "Which river?", ["Seine"], ["Seine"], [("Seine", "A river.")])
    plain = score(hotpot, PipelineOutput("Seine", retrieved_titles=["Seine"], retrieved_ids=["x"]))
    assert plain["hop_recall"] is None and plain["gold_recall"] == 1.0


# --------------------------------------------------------------------------- end to end


def reader() -> RoutedChatModel:
    return RoutedChatModel(routes={"rag_answer": json.dumps({"answer": "Seine"})})


@pytest.mark.parametrize("setting", ["open", "distractor"])
async def test_a_musique_file_runs_in_both_settings(
    setting: str, settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    dataset = write_rows(tmp_path / "musique.jsonl", [musique_row(), other_row()])
    out = tmp_path / setting
    ctx = EvalContext(chat=reader(), settings=settings, embeddings=embeddings, k=3)
    metrics = await run_eval(
        RunConfig(dataset=dataset, pipeline="hybrid", out=out, setting=setting), ctx
    )
    assert metrics["format"] == "musique" and metrics["n"] == 2 and metrics["errors"] == 0
    assert metrics["hop_recall_n"] == 2 and metrics["hop_recall"] is not None
    assert set(metrics["by_type"]) == {"2hop", "3hop"}
    rows = {r["id"]: r for r in map(json.loads, (out / "details.jsonl").read_text().splitlines())}
    assert rows["2hop__100_200"]["em"] == 1.0
    assert all(r["hop_recall"] is not None for r in rows.values())
    if setting == "open":  # the eval index holds each (title, text) once, by its content id
        index = settings.data_dir / "eval-indexes"
        assert index.is_dir()
        manifest = json.loads(next(index.glob("*/manifest.json")).read_text())
        assert manifest["passages"] == len(list(read_passages(dataset)))
