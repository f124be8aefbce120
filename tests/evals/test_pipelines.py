"""What each evaluation pipeline does, run by the runner over the tiny file with a scripted chat
model (``tests/eval_script.py``): every pipeline answers, the distractor setting, the oracle's
gold paragraphs, the tree pipeline without a tree, and failing questions that still count
their calls. The runner itself (rows, resume, metrics) is ``tests/evals/test_runner.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.corpora import CorpusSetupError
from evals.datasets import load_questions
from evals.pipelines import HOPTREE_PIPELINES as PIPELINES
from evals.run_directory import RunConfig
from evals.runner import run_eval
from tests.eval_script import (
    TINY,
    context,
    rows,
    scripted_chat,
    scripted_settings,
)


@pytest.fixture
def eval_settings(settings: Settings) -> Settings:
    return scripted_settings(settings)


async def test_distractor_setting_retrieves_among_the_questions_own_paragraphs(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "distractor"
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="hybrid", out=out, setting="distractor", progress=True),
        context(eval_settings, scripted_chat(), embeddings, k=2),
    )
    assert metrics["setting"] == "distractor" and metrics["n"] == 3
    own = {q.id: {t for t, _ in q.paragraphs} for q in load_questions(TINY)}
    for row in rows(out):
        assert row["retrieved_titles"] and set(row["retrieved_titles"]) <= own[row["id"]]
        assert len(row["retrieved_titles"]) == 2
    assert not (eval_settings.data_dir / "eval-indexes").exists()  # nothing shared was built


@pytest.mark.parametrize("pipeline", [p for p in PIPELINES if p != "full+tree"])
async def test_every_pipeline_answers(
    pipeline: str, eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat()
    metrics = await run_eval(
        RunConfig(
            dataset=TINY, pipeline=pipeline, out=tmp_path / "run", setting="distractor", limit=1
        ),
        context(eval_settings, chat, embeddings),
    )
    [row] = rows(tmp_path / "run")
    assert row["error"] is None, row["error"]
    assert row["prediction"] == "Seine" and metrics["em"] == 100.0
    assert row["llm_calls"] == len(chat.seen) and row["prompt_tokens"] == 10 * len(chat.seen)
    assert row["code"] and metrics["code_versions"] == {row["code"]: 1}
    if pipeline == "no-retrieval":  # nothing to score, rather than a search that failed
        assert row["retrieval_success"] is None and row["gold_recall"] is None
        assert row["retrieved_titles"] == [] and metrics["retrieval_success"] is None
    else:
        assert row["retrieval_success"] == 1.0
    if pipeline == "no-decompose":
        assert chat.count("decompose") == 0
    if pipeline == "no-summarize":
        assert chat.count("summarize") == 0
    if pipeline in ("sparse-searcher", "dense-searcher"):
        assert chat.count("rewrite" if pipeline == "sparse-searcher" else "hyde") == 1


async def test_the_tree_pipeline_without_a_tree_fails_before_any_question(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat()
    with pytest.raises(CorpusSetupError, match=r"has none; build one with `hoptree tree build"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="full+tree", out=tmp_path / "open"),
            context(eval_settings, chat, embeddings),
        )
    with pytest.raises(CorpusSetupError, match="distractor setting has no RAPTOR tree"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="full+tree", out=tmp_path / "d", setting="distractor"),
            context(eval_settings, chat, embeddings),
        )
    assert chat.seen == []
    assert not (tmp_path / "open" / "details.jsonl").exists()


async def test_a_failing_question_is_a_scored_row_and_the_run_goes_on(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat(fail={"rag_answer"})
    out = tmp_path / "run"
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out), context(eval_settings, chat, embeddings)
    )
    assert metrics["n"] == 3 and metrics["errors"] == 3 and metrics["em"] == 0.0
    for row in rows(out):
        assert "scripted failure of the rag_answer call" in row["error"]
        assert row["prediction"] == "" and row["llm_calls"] == 1
    assert "Failed questions" in (out / "report.md").read_text()


async def test_a_planner_question_that_fails_late_still_counts_its_calls(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """The planner's answer step is its last call: a question that fails there has spent
    every call it made before, and its row says so instead of 0. With no supported finding to
    fall back on (the findings call failed too) the question fails; with one, it is answered
    from the findings without the model, a degraded answer whose row carries the reason."""
    failing = scripted_chat(fail={"summarize", "answer", "rag_answer"})
    out = tmp_path / "failed"
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(eval_settings, failing, embeddings),
    )
    assert metrics["errors"] == 1
    [row] = rows(out)
    assert "answer" in row["error"] and row["prediction"] == ""
    assert row["llm_calls"] == len(failing.seen) > 1
    assert row["prompt_tokens"] > 0
    degraded = scripted_chat(fail={"answer"})
    out = tmp_path / "degraded"
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(eval_settings, degraded, embeddings),
    )
    [row] = rows(out)
    assert metrics["errors"] == 0 and row["error"] is None
    assert any("without the model" in w for w in row["warnings"])
    assert row["llm_calls"] == len(degraded.seen) > 1


async def test_concurrent_questions_keep_their_own_counts(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat()
    out = tmp_path / "run"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="dense-searcher", out=out, concurrency=3),
        context(eval_settings, chat, embeddings),
    )
    details = rows(out)
    assert len(details) == 3
    # HyDE then the answer: two calls each, never another question's
    assert [r["llm_calls"] for r in details] == [2, 2, 2]
    assert [r["prompt_tokens"] for r in details] == [20, 20, 20]


async def test_the_oracle_reads_the_gold_paragraphs_only(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """The ceiling pipeline: the same reader as vanilla RAG, shown exactly the question's
    supporting paragraphs, whatever else its context held; no retriever is opened."""
    chat = scripted_chat()
    await run_eval(
        RunConfig(dataset=TINY, pipeline="oracle", out=tmp_path / "run", limit=3),
        context(eval_settings, chat, embeddings),
    )
    for row in rows(tmp_path / "run"):
        assert row["retrieved_titles"] == row["supporting_titles"]
        assert row["gold_recall"] == 1.0
    shown = [text for route, text in chat.seen if route == "rag_answer"]
    titles = [re.findall(r"^\[\d+\] ([^:]+):", text, re.MULTILINE) for text in shown]
    assert sorted(map(sorted, titles)) == sorted(
        sorted(r["supporting_titles"]) for r in rows(tmp_path / "run")
    )
    assert not (eval_settings.data_dir / "eval-indexes").exists()  # nothing was indexed


async def test_the_oracle_shares_one_call_rags_characters_among_the_gold_paragraphs(
    eval_settings: Settings, embeddings: Any
) -> None:
    from evals.corpora import Corpus
    from evals.datasets import EvalQuestion
    from evals.pipelines import HOPTREE_PIPELINES as PIPELINES
    from searchers.corpus import paragraph_id

    long_text = " ".join(
        f"Sentence {i} of a long paragraph about the river Arlen." for i in range(40)
    )
    question = EvalQuestion(
        id="q", question="Which river is it?", answers=["Arlen"],
        supporting_titles=["A", "B"], paragraphs=[("A", long_text), ("B", long_text), ("C", "x")],
        supporting_ids=[paragraph_id("A"), paragraph_id("B")], type="bridge",
    )  # fmt: skip
    chat = scripted_chat()
    ctx = context(eval_settings, chat, embeddings)
    await PIPELINES["oracle"].run(ctx, Corpus(name="none", retrievers={}), question)
    [prompt] = [text for route, text in chat.seen if route == "rag_answer"]
    lines = re.findall(r"^\[\d+\] (.*)$", prompt, re.MULTILINE)
    assert len(lines) == 2  # the gold paragraphs only
    # 5 passages of 350 characters for one-call RAG: 875 for each of two gold paragraphs
    assert all(350 < len(line) <= 875 + 10 for line in lines), [len(x) for x in lines]
