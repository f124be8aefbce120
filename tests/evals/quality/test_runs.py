"""QuALITY runs end to end on the tiny bundled article: real tantivy, FAISS, embeddings and tree
builds (UMAP + GMM, Leiden), a scripted chat model for the summaries, the planner and the
multiple-choice reader. The scores checked are the runner's arithmetic on fixed replies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.corpora import CorpusSetupError
from evals.pipelines import EvalContext, PipelineError
from evals.quality.compare import write_comparison
from evals.quality.corpora import INDEX_SUBDIR, article_dir, leaf_passages
from evals.quality.data import load_articles
from evals.quality.pipelines import QUALITY_PIPELINES, retrieval_query
from evals.quality.runner import run_quality
from evals.run_directory import EvalRunError, RunConfig
from tests.quality_chat import TINY, QualityChat, quality_chat
from tree.store import load_tree

ROW_FIELDS = {
    "id", "article_id", "question", "options", "gold", "chosen", "prediction", "correct", "hard",
    "type", "em", "f1", "acc", "context", "context_tokens", "summary_tokens", "summary_share",
    "llm_calls", "prompt_tokens", "seconds", "error", "code", "finished_at",
}  # fmt: skip


@pytest.fixture
def eval_settings(settings: Settings) -> Settings:
    """No sparse feedback levels and one HyDE passage inside the planner: the scripted model has
    no replies for the feedback prompts, and these tests are about the QuALITY runs."""
    cfg = settings.searchers
    searchers = cfg.model_copy(
        update={
            "sparse": cfg.sparse.model_copy(update={"max_depth": 0, "original_first": False}),
            "dense": cfg.dense.model_copy(update={"max_rewrites": 1}),
        }
    )
    # the scripts answer each round's findings in one batched call (the planner as v4 measured
    # it); the reader's per-query findings are tested with the planner (test_planner_draft)
    planner = settings.planner.model_copy(update={"findings_call": "batched"})
    return settings.model_copy(update={"searchers": searchers, "planner": planner})


def context(settings: Settings, chat: QualityChat, embeddings: Any, **kw: Any) -> EvalContext:
    return EvalContext(
        chat=chat, settings=settings, embeddings=embeddings, model_label="scripted", **kw
    )


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "details.jsonl").read_text().splitlines()]


async def run(settings: Settings, embeddings: Any, out: Path, pipeline: str, **kw: Any) -> Any:
    chat = quality_chat()
    metrics = await run_quality(
        RunConfig(dataset=TINY, pipeline=pipeline, out=out, **kw),
        context(settings, chat, embeddings),
        progress=False,
    )
    return metrics, chat


async def test_leaves_scores_the_chosen_options_and_records_a_failure_row(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "leaves"
    metrics, chat = await run(eval_settings, embeddings, out, "leaves")
    found = rows(out)
    assert [r["id"] for r in found] == ["tiny_set1_1", "tiny_set1_2", "tiny_set2_1", "tiny_set2_2"]
    assert all(set(r) >= ROW_FIELDS for r in found)
    assert [r["prediction"] for r in found] == ["B", "A", "A", ""]
    assert [r["correct"] for r in found] == [1, 0, 1, 0]
    failed = found[3]
    assert failed["chosen"] is None and "unparseable reply" in failed["error"]
    assert failed["reply"] == "I cannot tell from these excerpts." and failed["llm_calls"] == 1
    assert metrics["accuracy"] == 50.0 and metrics["accuracy_hard"] == 50.0
    assert metrics["hard_n"] == 2 and metrics["accuracy_easy"] == 50.0
    assert metrics["unanswered"] == 1 and metrics["errors"] == 1
    assert metrics["by_type"]["hard"]["em"] == 50.0  # the shared per-type means agree
    # the reader saw at most the budget, all leaves of the article, no summary
    [article] = load_articles(TINY)
    leaves = {p.id for p in leaf_passages(article)}
    for row in found:
        assert {c["id"] for c in row["context"]} <= leaves
        assert row["context_tokens"] <= 2000 and row["summary_tokens"] == 0
    assert metrics["summary_share"] == 0.0
    assert chat.count("choice") == 4 and chat.count("summary") == 0
    assert (article_dir(eval_settings, article) / INDEX_SUBDIR / "manifest.json").is_file()
    assert not list(article_dir(eval_settings, article).glob("tree-*"))  # no tree was needed
    report = (out / "report.md").read_text()
    assert "| Accuracy | 50.0 |" in report and "| HARD accuracy | 50.0 (2 questions) |" in report
    assert (out / "metrics.png").read_bytes()[:4] == b"\x89PNG"


async def test_a_rerun_adds_nothing_and_a_longer_selection_runs_only_the_new_questions(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "bm25"
    first, _ = await run(eval_settings, embeddings, out, "bm25", limit=2)
    assert first["n"] == 2 and first["ran_now"] == 2
    again, chat = await run(eval_settings, embeddings, out, "bm25", limit=2)
    assert again["n"] == 2 and again["ran_now"] == 0 and chat.seen == []
    assert len(rows(out)) == 2
    more, chat = await run(eval_settings, embeddings, out, "bm25")
    assert more["n"] == 4 and more["ran_now"] == 2 and chat.count("choice") == 2
    assert len(rows(out)) == 4
    with pytest.raises(EvalRunError, match="holds another run"):
        await run(eval_settings, embeddings, out, "leaves")


@pytest.mark.parametrize("pipeline", ["tree-gmm", "tree-leiden"])
async def test_tree_pipelines_build_the_tree_once_and_record_summary_context(
    pipeline: str, eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / pipeline
    metrics, chat = await run(eval_settings, embeddings, out, pipeline)
    built = chat.count("summary")
    assert built >= 1 and chat.count("choice") == 4
    found = rows(out)
    # the whole tiny tree fits in the budget: every question's context holds summaries
    assert all(r["summary_tokens"] > 0 and 0 < r["summary_share"] < 1 for r in found)
    assert all(any(c["layer"] > 0 for c in r["context"]) for r in found)
    assert metrics["summary_share"] > 0 and metrics["questions_with_summary"] == 100.0
    [trees] = json.loads((out / "trees.json").read_text())
    clustering = pipeline.removeprefix("tree-")
    assert trees["article_id"] == "tiny-0001" and trees["clustering"] == clustering
    assert trees["summary_nodes"] == built and trees["llm_calls"] == built
    assert trees["build_seconds"] > 0 and trees["build_timing_complete"] is True
    assert metrics["trees"][clustering]["summary_nodes"] == built
    # the tree's leaves are the index's passages: the tree adds exactly its summaries
    [article] = load_articles(TINY)
    [tree_path] = article_dir(eval_settings, article).glob(f"tree-{clustering}-*")
    tree = load_tree(tree_path)
    assert [(n.id, n.text) for n in tree.layer(0)] == [
        (p.id, p.text) for p in leaf_passages(article)
    ]
    # another run (another directory, same data dir) reuses the stored tree
    _, again = await run(eval_settings, embeddings, tmp_path / "again", pipeline)
    assert again.count("summary") == 0 and again.count("choice") == 4
    [reused] = json.loads((tmp_path / "again" / "trees.json").read_text())
    assert reused["build_seconds"] == trees["build_seconds"]  # the build's own time, kept


async def test_leaves_ranks_the_leaves_as_the_tree_does_so_the_tree_adds_only_summaries(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    from tree.retrieval import TreeRetriever

    await run(eval_settings, embeddings, tmp_path / "leaves", "leaves")
    await run(eval_settings, embeddings, tmp_path / "tree", "tree-gmm")
    [article] = load_articles(TINY)
    [tree_path] = article_dir(eval_settings, article).glob("tree-gmm-*")
    tree = TreeRetriever(load_tree(tree_path), embeddings, token_budget=2000)
    questions = {q.id: q for q in article.questions}
    for row in rows(tmp_path / "leaves"):
        query = retrieval_query(questions[row["id"]])
        ranked = [h.id for h in tree.collapsed(query, layers=[0])]
        assert [c["id"] for c in row["context"]] == ranked  # same vectors, same order


async def test_runs_from_before_text_only_leaf_vectors_resume_only_without_dense(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    for pipeline, refused in (("leaves", True), ("bm25", False)):
        out = tmp_path / pipeline
        await run(eval_settings, embeddings, out, pipeline, limit=1)
        recorded = json.loads((out / "run.json").read_text())
        assert recorded["leaf_embedding"] == ("text" if refused else None)
        del recorded["leaf_embedding"]  # as a run before the change wrote it
        (out / "run.json").write_text(json.dumps(recorded))
        if refused:
            with pytest.raises(EvalRunError, match="leaf_embedding: None there, 'text' now"):
                await run(eval_settings, embeddings, out, pipeline, limit=2)
        else:
            metrics, _ = await run(eval_settings, embeddings, out, pipeline, limit=2)
            assert metrics["n"] == 2 and metrics["ran_now"] == 1


async def test_a_tree_variant_builds_its_own_tree_and_reports_beside_the_default(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    base, variant = tmp_path / "tree-leiden", tmp_path / "tree-leiden-fine"
    await run(eval_settings, embeddings, base, "tree-leiden")
    options = ("base_resolution=0.5", "max_words=40")
    metrics, chat = await run(
        eval_settings, embeddings, variant, "tree-leiden", tree_options=options
    )
    assert metrics["tree_options"] == {"base_resolution": 0.5, "max_words": 40}
    assert chat.count("summary") >= 1  # not the default tree: built anew
    [article] = load_articles(TINY)
    trees = sorted(article_dir(eval_settings, article).glob("tree-leiden-*"))
    assert len(trees) == 2
    shapes = [load_tree(path).config for path in trees]
    assert sorted(shape["clusterer"]["base_resolution"] for shape in shapes) == [0.5, 1.0]
    assert sorted(shape["max_words"] for shape in shapes) == [40, 100]
    [entry] = json.loads((variant / "trees.json").read_text())
    assert entry["tree"] == "leiden [base_resolution=0.5, max_words=40]"
    assert entry["clustering"] == "leiden" and entry["options"] == metrics["tree_options"]
    # the run directory holds that variant: the default (or another variant) is refused
    with pytest.raises(EvalRunError, match="holds another run"):
        await run(eval_settings, embeddings, variant, "tree-leiden")
    leaves = tmp_path / "leaves"
    await run(eval_settings, embeddings, leaves, "leaves")
    again = tmp_path / "leaves-again"  # a second run of a pipeline, in another directory
    await run(eval_settings, embeddings, again, "leaves")
    text = write_comparison([again, leaves, base, variant])
    label = "tree-leiden [base_resolution=0.5, max_words=40]"
    assert text.startswith("# QuALITY: 4 pipelines")
    order = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ")]
    assert order[1:5] == ["| leaves", "| leaves (leaves-again)", "| tree-leiden", f"| {label}"]
    assert "| leaves (leaves-again) minus leaves | +0.0 |" in text
    assert f"| {label} minus tree-leiden |" in text and f"| {label} minus leaves |" in text
    assert "| leiden [base_resolution=0.5, max_words=40] | 1 |" in text  # its tree totals row


async def test_leaves_at_a_smaller_budget_is_a_variant_set_against_each_tree(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    dirs = {name: tmp_path / name for name in ("leaves", "leaves-300", "tree-gmm")}
    await run(eval_settings, embeddings, dirs["leaves"], "leaves")
    await run(eval_settings, embeddings, dirs["tree-gmm"], "tree-gmm")
    chat = quality_chat()
    metrics = await run_quality(
        RunConfig(dataset=TINY, pipeline="leaves", out=dirs["leaves-300"]),
        context(eval_settings, chat, embeddings, context_tokens=300),
        progress=False,
    )
    assert metrics["context_tokens"] == 300
    assert all(r["context_tokens"] <= 300 for r in rows(dirs["leaves-300"]))
    text = write_comparison(list(dirs.values()))
    label = "leaves [context_tokens=300]"
    order = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ")]
    assert order[1:4] == ["| leaves", f"| {label}", "| tree-gmm"]
    assert f"| {label} minus leaves |" in text
    assert f"| tree-gmm minus {label} |" in text  # the summaries against the leaves they displace
    [row] = [line for line in text.splitlines() if line.startswith(f"| tree-gmm minus {label}")]
    assert re.search(r"\(leaves alone; tree-gmm's fill [0-9,]+ tokens\) \|$", row)
    assert f"| {label} minus {label} |" not in text and "tree-leiden minus leaves [" not in text
    flips = text.split("## Summaries in the questions that flip")[1].splitlines()
    [gmm] = [line for line in flips if line.startswith("| tree-gmm vs leaves |")]
    assert gmm.endswith("(4 of 4) |")  # every tree-gmm context on the tiny article has a summary


async def test_full_runs_the_planner_over_the_article_and_reads_its_passages(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "full"
    metrics, chat = await run(eval_settings, embeddings, out, "full", limit=1)
    [row] = rows(out)
    assert row["error"] is None and row["prediction"] == "B" and row["correct"] == 1
    assert chat.count("decompose") == 1 and chat.count("answer") == 1
    assert row["planner"]["sub_queries"] and row["context"]
    assert row["llm_calls"] == len(chat.seen) - chat.count("summary")  # tree builds apart
    assert json.loads((out / "trees.json").read_text())[0]["clustering"] == "leiden"
    assert metrics["accuracy"] == 100.0


async def test_every_pipeline_is_listed_and_unknown_names_fail_early(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    assert list(QUALITY_PIPELINES) == ["leaves", "bm25", "tree-gmm", "tree-leiden", "full"]
    with pytest.raises(PipelineError, match="unknown pipeline 'dense' for a QuALITY file"):
        await run(eval_settings, embeddings, tmp_path / "x", "dense")
    with pytest.raises(EvalRunError, match="--setting does not apply"):
        await run(eval_settings, embeddings, tmp_path / "y", "leaves", setting="distractor")
    chat = quality_chat()
    with pytest.raises(CorpusSetupError, match="no embedding model"):
        await run_quality(
            RunConfig(dataset=TINY, pipeline="leaves", out=tmp_path / "z"),
            EvalContext(chat=chat, settings=eval_settings, embeddings=None),
            progress=False,
        )
    assert chat.seen == []


async def test_the_report_compares_pipelines_on_common_questions_with_tree_stats(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    dirs = []
    for pipeline, limit in (("leaves", None), ("tree-gmm", 3), ("tree-leiden", None)):
        out = tmp_path / pipeline
        await run(eval_settings, embeddings, out, pipeline, limit=limit)
        dirs.append(out)
    markdown, plot = tmp_path / "cmp" / "quality.md", tmp_path / "cmp" / "quality.png"
    text = write_comparison(dirs, markdown=markdown, plot=plot)
    assert markdown.read_text() == text and plot.read_bytes()[:4] == b"\x89PNG"
    assert text.startswith("# QuALITY: 3 pipelines on the same 3 questions")
    table = [line for line in text.splitlines() if line.startswith("| leaves |")]
    assert table and "| 3 | 66.7 | 100.0 (1) | 0.0% |" in table[0]
    assert "| tree-leiden minus tree-gmm | +0.0 |" in text
    paired = [line for line in text.splitlines() if line.startswith("| tree-gmm minus leaves |")]
    assert paired and paired[0].split(" | ")[3].endswith("(p 1.00)")  # same answers: no split
    assert paired[0].split(" | ")[4] == "0 / 1 / 0"  # the one article: level
    per_article = text.split("## Accuracy per article")[1].splitlines()
    assert per_article[2] == "| article | questions (HARD) | leaves | tree-gmm | tree-leiden |"
    assert per_article[4].split(" | ")[1:] == ["3 (1)", "67", "67", "67 |"]
    assert "| tree-gmm minus bm25 | n/a |" in text  # no bm25 run given
    assert "## Trees per clustering method" in text and "| gmm | 1 |" in text
    assert "fewer" in text and "34 vs 141 (-76%)" in text


def test_articles_split_counts_articles_above_level_and_below() -> None:
    from evals.quality.compare import article_accuracy, articles_split

    article_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    first = {"outcomes": {"a1": True, "a2": False, "b1": True, "c1": False}}
    second = {"outcomes": {"a1": True, "a2": True, "b1": False, "c1": False}}
    runs = {
        name: {**metrics, "article_of": article_of}
        for name, metrics in (("x", first), ("y", second))
    }
    assert article_accuracy(runs["x"]) == {"A": 50.0, "B": 100.0, "C": 0.0}
    assert articles_split(runs, "x", "y") == "1 / 1 / 1"  # B above, C level, A below
    assert articles_split(runs, "y", "x") == "1 / 1 / 1"
    assert articles_split(runs, "x", "missing") == "n/a"


def test_the_sign_test_counts_only_the_questions_two_pipelines_disagree_on() -> None:
    from evals.quality.compare import sign_test_p

    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(3, 3) == 1.0
    assert sign_test_p(5, 0) == 2 / 32  # five of five one way: 2 * (1/2)^5
    assert abs(sign_test_p(8, 2) - 0.109375) < 1e-9  # 2 * (1 + 10 + 45) / 1024
    assert sign_test_p(2, 8) == sign_test_p(8, 2)
