"""The evaluation runner end to end: real tantivy, FAISS and embeddings, a scripted chat model.

The chat model is ``RoutedChatModel``: it answers each prompt kind with what the test scripted
(keyed on the question it is asked about), so the scores below are the runner's arithmetic on
known predictions, not a measurement of any model.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent.runtime.llm_cache import SQLiteLLMCache
from agent.settings import Settings
from evals.corpora import CorpusSetupError
from evals.datasets import load_questions
from evals.pipelines import PIPELINES, EvalContext, PipelineError
from evals.report import read_details
from evals.run_directory import EvalRunError, RunConfig
from evals.runner import run_eval, write_metrics_only
from searchers.corpus import file_sha256
from tests.routed_chat import RoutedChatModel

TINY = (
    Path(__file__).parent / "data_eval" / "eval_tiny_hotpot.jsonl"
)  # apart: tests/data is ingested whole
REQUIRED_METRICS = {
    "n",
    "em",
    "f1",
    "acc",
    "retrieval_success",
    "llm_calls_per_question",
    "seconds_per_question",
    "pipeline",
    "dataset",
}
ROW_FIELDS = {
    "id",
    "question",
    "answers",
    "prediction",
    "em",
    "f1",
    "acc",
    "retrieval_success",
    "gold_recall",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "error",
}
# The scripted "model" answers by topic: right on the Seine and on the yes/no question, wrong
# (1936 for 1937) on the Hobbit, so EM over the three questions is 2/3.
SCRIPTED = {"Eiffel": "Seine", "Bilbo": "1936", "Danube": "yes"}
FACTS = {
    "Eiffel": "The Seine flows through Paris, where the Eiffel Tower stands.",
    "Bilbo": "The Hobbit was first published in 1937.",
    "Danube": "Both the Danube and the Rhine flow through Germany.",
}


# The scripted plans: two hops for the two bridge questions (the second waits for the first's
# answer), the question itself for the yes/no one.
PLANS = {
    "Eiffel": ["city where the Eiffel Tower stands", "river that flows through #1"],
    "Bilbo": ["novel whose title character is Bilbo Baggins", "year #1 was first published"],
}
# What the findings call copies out of the passages, by a phrase of the query: spans the
# passages hold (1937, not the reader's 1936).
SPANS = {
    "Eiffel Tower stands": "Paris",
    "flows through Paris": "Seine",
    "Bilbo Baggins": "The Hobbit",
    "The Hobbit was first published": "1937",
    "Danube": "yes",
}


def findings(messages: list[BaseMessage]) -> str:
    items = []
    for line in str(messages[-1].content).splitlines():
        if line.startswith("Query "):
            number, query = line.removeprefix("Query ").split(": ", 1)
            span = next((v for k, v in SPANS.items() if k in query), "")
            items.append({"query": int(number), "answer": span, "passages": [1]})
    return json.dumps({"findings": items})


def _topic(messages: list[BaseMessage]) -> str:
    """The topic of the question or query a prompt is about (its first user line only: the
    passages below it mention other topics)."""
    first = str(messages[-1].content).strip().splitlines()[0]
    for key in SCRIPTED:
        if key in first:
            return key
    raise AssertionError(f"unscripted question: {first!r}")


def _first_line_after(messages: list[BaseMessage], prefix: str) -> str:
    first = str(messages[-1].content).strip().splitlines()[0]
    return first.removeprefix(prefix).strip()


def scripted_chat(**kwargs: Any) -> RoutedChatModel:
    def reply(**fields: object) -> str:
        return json.dumps(fields)

    return RoutedChatModel(
        routes={
            "rag_answer": lambda m: reply(answer=SCRIPTED[_topic(m)]),
            "closed_book": lambda m: reply(answer=SCRIPTED[_topic(m)]),
            "decompose": lambda m: reply(
                queries=PLANS.get(_topic(m)) or [_first_line_after(m, "Question:")]
            ),
            "rewrite": lambda m: reply(query=_first_line_after(m, "Query:")),
            "hyde": lambda m: reply(passage=FACTS[_topic(m)]),
            "summarize": findings,
            "verify": reply(sufficient=True, queries=[]),
            "answer": lambda m: reply(short_answer=SCRIPTED[_topic(m)], answer="As found [1]."),
        },
        **kwargs,
    )


@pytest.fixture
def eval_settings(settings: Settings) -> Settings:
    """No sparse feedback levels and one HyDE passage: the scripted model has no replies for
    the feedback prompts, and the tests are about the runner, not the refinement loops. The
    sparse searcher rewrites first (LevelRAG's order), so every pipeline's calls are fixed."""
    cfg = settings.searchers
    searchers = cfg.model_copy(
        update={
            "sparse": cfg.sparse.model_copy(update={"max_depth": 0, "original_first": False}),
            "dense": cfg.dense.model_copy(update={"max_rewrites": 1}),
        }
    )
    return settings.model_copy(update={"searchers": searchers})


def context(settings: Settings, chat: RoutedChatModel, embeddings: Any, **kw: Any) -> EvalContext:
    return EvalContext(
        chat=chat, settings=settings, embeddings=embeddings, model_label="scripted", **kw
    )


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "details.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------- end to end


async def test_open_setting_bm25_and_full_write_details_metrics_and_report(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat()
    out = tmp_path / "bm25"
    events: list[str] = []

    @contextlib.contextmanager
    def index_progress() -> Iterator[Callable[[str, int, int], None]]:
        events.append("open")
        yield lambda stage, done, total: events.append(stage)
        events.append("close")

    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out),
        context(eval_settings, chat, embeddings),
        index_progress=index_progress,
    )
    # the build's progress display is open around the build only, and saw its stages
    assert events[0] == "open" and events[-1] == "close" and "dense" in events
    assert set(metrics) >= REQUIRED_METRICS
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk == metrics
    assert metrics["n"] == 3 and metrics["pipeline"] == "bm25" and metrics["setting"] == "open"
    assert metrics["em"] == pytest.approx(200 / 3, abs=0.01)
    assert metrics["llm_calls_per_question"] == 1.0
    assert metrics["prompt_tokens_per_question"] == 10.0  # the scripted model bills 10 per call
    assert metrics["errors"] == 0
    assert metrics["model"] == "scripted" and metrics["dataset"] == "tests/data_eval/" + TINY.name
    assert chat.count("rag_answer") == 3

    details = {r["id"]: r for r in rows(out)}
    assert set(details) == {"tiny-1", "tiny-2", "tiny-3"}
    for row in details.values():
        assert set(row) >= ROW_FIELDS
    # BM25 top-5 over the whole open corpus: the Hobbit paragraph holds 1937
    assert details["tiny-2"]["prediction"] == "1936" and details["tiny-2"]["f1"] == 0.0
    assert details["tiny-2"]["retrieval_success"] == 1.0
    assert details["tiny-3"]["retrieval_success"] is None  # yes/no
    assert metrics["retrieval_success_n"] == 2
    # the open corpus is the union of the file's paragraphs (Seine appears twice, indexed once)
    assert "The Lord of the Rings" in details["tiny-1"]["retrieved_titles"]

    report = (out / "report.md").read_text()
    assert "| EM |" in report and "![" in report and "metrics.png" in report
    assert (out / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the open index lives under the data dir, keyed by the file's sha256, and is reused
    index_dir = eval_settings.data_dir / "eval-indexes" / file_sha256(TINY)
    manifest = (index_dir / "manifest.json").read_text()
    assert json.loads(manifest)["passages"] == 8

    chat_full = scripted_chat()
    out_full = tmp_path / "full"
    full = await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out_full),
        context(eval_settings, chat_full, embeddings),
    )
    assert (index_dir / "manifest.json").read_text() == manifest  # not rebuilt
    assert set(full) >= REQUIRED_METRICS and full["pipeline"] == "full"
    # the scripted reader writes "1936" for tiny-2 as it does for bm25, but the planned chain
    # resolved: its last hop's supported finding is the short answer
    assert full["em"] == 100.0
    # per question: decompose, a sparse rewrite per atomic query (LevelRAG's order here), one
    # findings call per round, the answer; the two bridge questions run two hops. Every finding
    # is a span of a passage naming its query's subject: no verify call. The dense searcher
    # probes each query as written and writes a HyDE passage for the one that fails coverage.
    routes = [name for name, _ in chat_full.seen]
    assert {r: routes.count(r) for r in set(routes)} == {
        "decompose": 3,
        "rewrite": 5,
        "hyde": 1,
        "summarize": 5,
        "answer": 3,
    }
    assert full["llm_calls_per_question"] == pytest.approx(17 / 3, abs=0.01)
    details = {r["id"]: r for r in rows(out_full)}
    # the summaries state the facts: the context the answer step saw holds the gold answer
    assert details["tiny-1"]["retrieval_success"] == 1.0
    assert details["tiny-2"]["retrieval_success"] == 1.0
    assert details["tiny-1"]["gold_recall"] == 1.0
    assert (out_full / "report.md").is_file() and (out_full / "metrics.png").is_file()
    # each row says what the planner did: two rounds (the second hop waited for "Paris"), its
    # atomic queries with their findings, and why it stopped
    planner = details["tiny-1"]["planner"]
    assert planner["rounds"] == 2 and planner["stopped"] == "sufficient"
    assert [q["origin"] for q in planner["sub_queries"]] == ["decompose", "decompose"]
    assert [(q["query"], q["finding"]) for q in planner["sub_queries"]] == [
        ("city where the Eiffel Tower stands", "Paris"),
        ("river that flows through Paris", "Seine"),
    ]
    assert planner["sources"][:2] == ["Eiffel Tower", "Seine"]
    chained = details["tiny-2"]["planner"]["citation_check"]
    assert chained["plan_resolved"] and details["tiny-2"]["prediction"] == chained["chain_end"]
    assert full["planner_queries_per_question"] == pytest.approx(5 / 3, abs=0.01)
    assert full["planner_stopped"] == {"sufficient": 3}
    assert (
        "Planner: 1.67 rounds and 1.67 atomic queries a question, 0.00 of them follow-ups. "
        "Stopped: sufficient 3." in (out_full / "report.md").read_text()
    )
    assert "planner" not in rows(out)[0]  # vanilla RAG rows carry no planner record


async def test_a_run_served_from_the_llm_cache_says_what_it_would_cost(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """A planner run that repeats another's calls spends no tokens; its rows say how many
    calls came from the cache and what they cost the first time."""
    cache = SQLiteLLMCache(tmp_path / "cache.sqlite")
    config = RunConfig(dataset=TINY, pipeline="full", out=tmp_path / "first", limit=1)
    first = await run_eval(config, context(eval_settings, scripted_chat(cache=cache), embeddings))
    (row,) = rows(tmp_path / "first")
    assert row["llm_calls"] == 7 and row["llm_cache_hits"] == 0
    assert row["prompt_tokens"] == 70 and row["cache_hit_prompt_tokens"] == 0

    again = scripted_chat(cache=cache)
    config = RunConfig(dataset=TINY, pipeline="full", out=tmp_path / "again", limit=1)
    metrics = await run_eval(config, context(eval_settings, again, embeddings))
    assert again.seen == []  # every call came from the cache
    (row,) = rows(tmp_path / "again")
    assert row["llm_calls"] == 7 and row["llm_cache_hits"] == 7
    assert row["prompt_tokens"] == 0 and row["cache_hit_prompt_tokens"] == 70
    assert metrics["llm_cache_hits_per_question"] == 7.0
    assert (
        metrics["prompt_tokens_without_cache_per_question"] == first["prompt_tokens_per_question"]
    )
    assert (
        "served from the cache: 7.00 a question" in (tmp_path / "again" / "report.md").read_text()
    )


# --------------------------------------------------------------------------- resume


async def test_resume_runs_only_unfinished_questions(
    eval_settings: Settings, embeddings: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    first = scripted_chat()
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=2),
        context(eval_settings, first, embeddings),
    )
    assert metrics["n"] == 2 and first.count("rag_answer") == 2
    assert (
        metrics["resumed"] is False and "| started / finished |" in (out / "report.md").read_text()
    )
    capsys.readouterr()

    # "killed" after two questions: the same command with a larger limit runs one more
    second = scripted_chat()
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=3),
        context(eval_settings, second, embeddings),
    )
    assert second.count("rag_answer") == 1
    assert metrics["n"] == 3 and metrics["ran_now"] == 1
    # the report says this was a resume and keeps when the first question finished
    first_row = min(r["finished_at"] for r in rows(out))
    assert metrics["resumed"] is True and metrics["first_row_at"] == first_row
    assert f"(first question finished {first_row})" in (out / "report.md").read_text()
    # stderr is no terminal here: one plain line for the question that ran, counted after the two
    progress_lines = [line for line in capsys.readouterr().err.splitlines() if "] tiny-" in line]
    assert len(progress_lines) == 1 and progress_lines[0].startswith("[3/3] tiny-3")
    assert "EM" in progress_lines[0] and "F1" in progress_lines[0]
    ids = [r["id"] for r in rows(out)]
    assert sorted(ids) == ["tiny-1", "tiny-2", "tiny-3"] and len(ids) == len(set(ids))

    # a finished run reruns for free
    third = scripted_chat()
    await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out), context(eval_settings, third, embeddings)
    )
    assert third.seen == []

    # killed in the middle of writing a line: the torn line is dropped and that question reruns
    details = out / "details.jsonl"
    text = details.read_text()
    details.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1] + '{"id": "tiny-3", "pred')
    fourth = scripted_chat()
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out),
        context(eval_settings, fourth, embeddings),
    )
    assert fourth.count("rag_answer") == 1 and metrics["n"] == 3
    ids = [r["id"] for r in rows(out)]
    assert sorted(ids) == ["tiny-1", "tiny-2", "tiny-3"]

    # a smaller limit reports on its own selection, and leaves the other rows in place
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=1),
        context(eval_settings, scripted_chat(), embeddings),
    )
    assert metrics["n"] == 1 and len(rows(out)) == 3


async def test_metrics_only_rescores_a_stopped_run_without_a_model(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, concurrency=2),
        context(eval_settings, scripted_chat(), embeddings),
    )
    # a run of two questions at once stopped with a hole: questions 1 and 3 finished, not 2
    details = out / "details.jsonl"
    kept = [line for line in details.read_text().splitlines() if '"id": "tiny-2"' not in line]
    # ... and question 2 is being written right now: metrics-only reads around the torn tail
    # and leaves it to the run that is appending
    details.write_text("\n".join(kept) + '\n{"id": "tiny-2", "pred')
    (out / "report.md").unlink()
    hole = r"1 of the 3 .* the first 1 are all finished: --limit 1"
    with pytest.raises(EvalRunError, match=hole):
        write_metrics_only(RunConfig(dataset=TINY, pipeline="bm25", out=out))
    assert json.loads((out / "metrics.json").read_text())["n"] == 3  # a refusal writes nothing

    metrics = write_metrics_only(RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=1))
    assert metrics["n"] == 1 and metrics["ran_now"] == 0 and metrics["model"] == "scripted"
    assert json.loads((out / "metrics.json").read_text())["n"] == 1
    # the questions ran two at a time, not at this command's default of one
    assert metrics["concurrency"] == 2
    assert "| rescored |" in (out / "report.md").read_text() and metrics["metrics_only"]
    # the rows of the questions after the hole stay where they are, the torn tail too
    assert details.read_text().endswith('\n{"id": "tiny-2", "pred')
    assert sorted(r["id"] for r in read_details(out)) == ["tiny-1", "tiny-3"]
    # with no earlier metrics the run's concurrency is unknown, not this command's
    (out / "metrics.json").unlink()
    rescored = write_metrics_only(RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=1))
    assert rescored["concurrency"] is None

    # another run's directory, or one nothing ran in, is refused
    with pytest.raises(EvalRunError, match="holds another run"):
        write_metrics_only(RunConfig(dataset=TINY, pipeline="hybrid", out=out, limit=1))
    with pytest.raises(EvalRunError, match="nothing was run there yet"):
        write_metrics_only(RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "empty"))


async def test_a_directory_of_another_run_is_refused(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="no-retrieval", out=out, limit=1),
        context(eval_settings, scripted_chat(), embeddings),
    )
    with pytest.raises(EvalRunError, match=r"holds another run \(pipeline: 'no-retrieval' there"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=out),
            context(eval_settings, scripted_chat(), embeddings),
        )
    with pytest.raises(EvalRunError, match=r"k: 5 there, 2 now"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="no-retrieval", out=out),
            context(eval_settings, scripted_chat(), embeddings, k=2),
        )
    (out / "details.jsonl").write_text('{"id": "tiny-1"}\nnot json\n')
    with pytest.raises(EvalRunError, match=r"details\.jsonl:2: malformed row"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="no-retrieval", out=out),
            context(eval_settings, scripted_chat(), embeddings),
        )


# --------------------------------------------------------------------------- settings and pipelines


async def test_a_planner_run_records_its_non_default_settings_and_keeps_them(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """Rows made with other planner settings are another measurement: ``run.json`` names the
    settings that differ from the defaults, and a resume with other ones is refused. One-call
    runs do not read the planner's settings and record none."""
    wider = eval_settings.model_copy(
        update={"planner": eval_settings.planner.model_copy(update={"question_hits_first": 2})}
    )
    out = tmp_path / "full"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(wider, scripted_chat(), embeddings),
    )
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["planner"] == {"planner.question_hits_first": 2}
    with pytest.raises(EvalRunError, match=r"planner: \{'planner.question_hits_first': 2\} there"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="full", out=out, limit=2),
            context(eval_settings, scripted_chat(), embeddings),
        )
    await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "bm25", limit=1),
        context(wider, scripted_chat(), embeddings),
    )
    assert "planner" not in json.loads((tmp_path / "bm25" / "run.json").read_text())


async def test_a_planner_run_made_under_another_default_is_not_resumed(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """``run.json`` records every planner value, defaults included: rows made when a default
    was another ("open_plan_answer": "chain") are another measurement, so the run is not
    resumed under today's default; a run recorded before this key resumes as it did."""
    out = tmp_path / "full"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(eval_settings, scripted_chat(), embeddings),
    )
    run_file = out / "run.json"
    recorded = json.loads(run_file.read_text())
    assert recorded["planner_settings"]["planner.open_plan_answer"] == "one_call"
    assert recorded["planner_settings"]["budgets.max_rounds"] == eval_settings.budgets.max_rounds
    assert "planner" not in recorded  # nothing differs from the defaults
    recorded["planner_settings"]["planner.open_plan_answer"] = "chain"  # as an older default
    run_file.write_text(json.dumps(recorded))
    with pytest.raises(EvalRunError, match=r"\{'planner.open_plan_answer': 'chain'\} there"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="full", out=out, limit=2),
            context(eval_settings, scripted_chat(), embeddings),
        )
    del recorded["planner_settings"]  # a run recorded before the key
    run_file.write_text(json.dumps(recorded))
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=2),
        context(eval_settings, scripted_chat(), embeddings),
    )
    assert metrics["n"] == 2


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


async def test_an_offset_runs_a_later_slice_of_the_file(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """--offset 1 --limit 1: the second question only (a slice never used for tuning)."""
    out = tmp_path / "slice"
    chat = scripted_chat()
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, offset=1, limit=1),
        context(eval_settings, chat, embeddings),
    )
    assert [r["id"] for r in rows(out)] == ["tiny-2"]
    assert metrics["n"] == 1 and metrics["offset"] == 1 and chat.count("rag_answer") == 1
    with pytest.raises(EvalRunError, match="offset must be >= 0"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "b", offset=-1),
            context(eval_settings, chat, embeddings),
        )


async def test_a_type_runs_only_that_shape_of_question(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """--type comparison: the slice's comparison questions only, on the whole file's index."""
    out = tmp_path / "comparisons"
    chat = scripted_chat()
    metrics = await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=out, types=("comparison",)),
        context(eval_settings, chat, embeddings),
    )
    assert [r["id"] for r in rows(out)] == ["tiny-3"]
    assert metrics["n"] == 1 and metrics["types"] == ["comparison"]
    with pytest.raises(EvalRunError, match=r"no question of type inference .* bridge, comparison"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "b", types=("inference",)),
            context(eval_settings, chat, embeddings),
        )
    assert chat.count("rag_answer") == 1


async def test_bad_options_fail_before_any_question(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    chat = scripted_chat()
    ctx = context(eval_settings, chat, embeddings)
    with pytest.raises(PipelineError, match=r"unknown pipeline 'bm2'; known: no-retrieval, bm25"):
        await run_eval(RunConfig(dataset=TINY, pipeline="bm2", out=tmp_path / "a"), ctx)
    with pytest.raises(EvalRunError, match="unknown setting 'closed'"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "a", setting="closed"), ctx
        )
    with pytest.raises(EvalRunError, match="concurrency must be"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "a", concurrency=0), ctx
        )
    with pytest.raises(PipelineError, match="needs the embedding model"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="dense", out=tmp_path / "a"),
            context(eval_settings, chat, None),
        )
    with pytest.raises(PipelineError, match="k must be"):
        context(eval_settings, chat, embeddings, k=0)
    assert chat.seen == [] and not (tmp_path / "a").exists()


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
    from evals.pipelines import PIPELINES
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
