"""The evaluation runner end to end: real tantivy, FAISS and embeddings, a scripted chat model
(``tests/eval_script.py``); what each pipeline does is ``tests/evals/test_pipelines.py``.

The chat model is a ``RoutedChatModel``: it answers each prompt kind with what the test scripted
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

from agent.runtime.llm_cache import SQLiteLLMCache
from agent.settings import Settings
from evals.pipelines import HOPTREE_PIPELINES, PipelineError
from evals.report import read_details
from evals.run_directory import PIPELINE_PLANNER_FIELDS, EvalRunError, RunConfig
from evals.runner import run_eval, write_metrics_only
from searchers.corpus import file_sha256
from tests.eval_script import (
    REQUIRED_METRICS,
    ROW_FIELDS,
    TINY,
    context,
    rows,
    scripted_chat,
    scripted_settings,
)


@pytest.fixture
def eval_settings(settings: Settings) -> Settings:
    return scripted_settings(settings)


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
    # is a span of a passage naming its query's subject: no verify call. Inside the plan the
    # dense searcher embeds each query as written and writes no HyDE passage, even for the one
    # query that fails coverage (``[planner.search] max_rewrites`` is 0).
    routes = [name for name, _ in chat_full.seen]
    assert {r: routes.count(r) for r in set(routes)} == {
        "decompose": 3,
        "rewrite": 5,
        "summarize": 5,
        "answer": 3,
    }
    assert full["llm_calls_per_question"] == pytest.approx(16 / 3, abs=0.01)
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
    assert row["llm_calls"] == 6 and row["llm_cache_hits"] == 0
    assert row["prompt_tokens"] == 60 and row["cache_hit_prompt_tokens"] == 0

    again = scripted_chat(cache=cache)
    config = RunConfig(dataset=TINY, pipeline="full", out=tmp_path / "again", limit=1)
    metrics = await run_eval(config, context(eval_settings, again, embeddings))
    assert again.seen == []  # every call came from the cache
    (row,) = rows(tmp_path / "again")
    assert row["llm_calls"] == 6 and row["llm_cache_hits"] == 6
    assert row["prompt_tokens"] == 0 and row["cache_hit_prompt_tokens"] == 60
    assert metrics["llm_cache_hits_per_question"] == 6.0
    assert (
        metrics["prompt_tokens_without_cache_per_question"] == first["prompt_tokens_per_question"]
    )
    assert (
        "served from the cache: 6.00 a question" in (tmp_path / "again" / "report.md").read_text()
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


async def test_each_row_carries_the_batch_label_of_the_invocation_that_wrote_it(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    for limit, batch in ((1, "chunk 1"), (2, "chunk 2"), (3, None)):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="bm25", out=out, limit=limit, batch=batch),
            context(eval_settings, scripted_chat(), embeddings),
        )
    labels = {r["id"]: r.get("batch") for r in rows(out)}
    assert labels == {"tiny-1": "chunk 1", "tiny-2": "chunk 2", "tiny-3": None}
    assert "batch" not in next(r for r in rows(out) if r["id"] == "tiny-3")


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
        update={"planner": eval_settings.planner.model_copy(update={"answer_sources": 8})}
    )
    out = tmp_path / "full"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(wider, scripted_chat(), embeddings),
    )
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["planner"] == {"planner.answer_sources": 8}
    with pytest.raises(EvalRunError, match=r"planner: \{'planner.answer_sources': 8\} there"):
        await run_eval(
            RunConfig(dataset=TINY, pipeline="full", out=out, limit=2),
            context(eval_settings, scripted_chat(), embeddings),
        )
    await run_eval(
        RunConfig(dataset=TINY, pipeline="bm25", out=tmp_path / "bm25", limit=1),
        context(wider, scripted_chat(), embeddings),
    )
    assert "planner" not in json.loads((tmp_path / "bm25" / "run.json").read_text())


async def refused_then_resumed(
    out: Path, settings: Settings, embeddings: Any, change: tuple[str, str, Any], limit: int
) -> None:
    """The ``full`` run in ``out`` with one recorded value changed (``change``: the section of
    ``run.json``, the key, the older value) is refused, naming the value; with that section
    removed, as a run recorded before the section existed, it resumes to ``limit``."""
    section, key, older = change
    run_file = out / "run.json"
    recorded = json.loads(run_file.read_text())
    recorded[section][key] = older
    run_file.write_text(json.dumps(recorded))
    config = RunConfig(dataset=TINY, pipeline="full", out=out, limit=limit)
    with pytest.raises(EvalRunError, match=re.escape(f"{{{key!r}: {older!r}}} there")):
        await run_eval(config, context(settings, scripted_chat(), embeddings))
    del recorded[section]
    run_file.write_text(json.dumps(recorded))
    metrics = await run_eval(config, context(settings, scripted_chat(), embeddings))
    assert metrics["n"] == limit


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
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["planner_settings"]["planner.open_plan_answer"] == "one_call"
    assert recorded["planner_settings"]["budgets.max_rounds"] == eval_settings.budgets.max_rounds
    assert "planner" not in recorded  # nothing differs from the defaults
    # as an older default: refused; a run recorded before the key resumes
    await refused_then_resumed(
        out, eval_settings, embeddings, ("planner_settings", "planner.open_plan_answer", "chain"), 2
    )


async def test_a_planner_run_made_when_its_pipeline_set_another_value_is_not_resumed(
    eval_settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    """A planner pipeline's own settings (``full``: one batched findings call, ``draft-first``:
    each hop read free) are set in the code, where no environment variable shows them:
    ``run.json`` records them, so rows made when the pipeline read its hops another way are
    not resumed under today's; a run recorded before this key resumes as it did."""
    out = tmp_path / "full"
    await run_eval(
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=1),
        context(eval_settings, scripted_chat(), embeddings),
    )
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["pipeline_planner"]["planner.findings_call"] == "batched"
    assert recorded["pipeline_planner"]["planner.searchers"] == ["sparse", "dense"]
    metrics = await run_eval(  # the same pipeline resumes
        RunConfig(dataset=TINY, pipeline="full", out=out, limit=2),
        context(eval_settings, scripted_chat(), embeddings),
    )
    assert metrics["n"] == 2
    # as the code once set it: refused; a run recorded before the key resumes
    await refused_then_resumed(
        out, eval_settings, embeddings, ("pipeline_planner", "planner.findings_call", "reader"), 3
    )


def test_every_planner_pipeline_sets_the_fields_left_out_of_the_planner_values() -> None:
    """What a planner pipeline sets (``pipeline_planner``) and what the configured values leave
    out (``PIPELINE_PLANNER_FIELDS``) are one set: a field in neither would be recorded nowhere."""
    planners = [spec for spec in HOPTREE_PIPELINES.values() if spec.planner_switches]
    assert {"full", "draft-first"} <= {spec.name for spec in planners}
    for spec in planners:
        assert set(spec.planner_switches) == PIPELINE_PLANNER_FIELDS, spec.name
    assert HOPTREE_PIPELINES["draft-first"].planner_switches["findings_call"] == "free"
    assert not HOPTREE_PIPELINES["bm25"].planner_switches


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
