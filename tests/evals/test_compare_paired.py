"""``hoptree eval compare`` with the paired sections: run directories made here from rows (no
model), compared question by question below the means table, with the hop recall column and
the gains chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals.cli import eval_app
from evals.compare import (
    compare_columns,
    comparison_rows,
    path_differences,
    run_labels,
    with_hop_recall,
)
from tests.eval_script import finished_run

runner = CliRunner()
SHA = "ab" * 32
PNG = b"\x89PNG\r\n\x1a\n"
KINDS = ["bridge"] * 8 + ["comparison"] * 4


def write_run(
    root: Path,
    name: str,
    f1: list[float],
    *,
    pipeline: str | None = None,
    sha: str = SHA,
    hop_recall: list[float | None] | None = None,
) -> Path:
    """A finished run directory: rows with the fields compare reads, and their means."""
    rows: list[dict[str, Any]] = []
    for i, (kind, value) in enumerate(zip(KINDS, f1, strict=False)):
        exact = 1.0 if value == 1.0 else 0.0
        row = {"id": f"q{i:02d}", "type": kind, "f1": value, "em": exact, "acc": exact}
        row |= {"gold_recall": 1.0, "retrieval_success": exact, "llm_calls": 1, "seconds": 1.0}
        if hop_recall is not None:
            row["hop_recall"] = hop_recall[i]
        rows.append(row)
    return finished_run(root, name, rows, sha=sha, pipeline=pipeline)


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    """Twelve questions: bm25 F1 25, hybrid 33.3, full 58.3 (hop recall defined on 10 of 12),
    the oracle 83.3, the floor 8.3."""
    root = tmp_path / "runs"
    return [
        write_run(root, "bm25", [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        write_run(root, "hybrid", [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
        write_run(
            root,
            "full",
            [1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0],
            hop_recall=[1, 1, 1, 1, 0.5, 0.5, 0, 0, 1, 1, None, None],
        ),
        write_run(root, "oracle", [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0]),
        write_run(root, "no-retrieval", [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ]


def compare(*args: str) -> Any:
    result = runner.invoke(eval_app, ["compare", *args], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result


def test_compare_writes_the_paired_sections_below_the_table_and_a_gains_chart(
    runs: list[Path], tmp_path: Path
) -> None:
    markdown, plot = tmp_path / "out" / "compare.md", tmp_path / "out" / "compare.png"
    args = [*map(str, runs), "--markdown", str(markdown), "--plot", str(plot)]
    result = compare(*args, "--resamples", "1000", "--seed", "3")
    assert "paired gains over hybrid on 12 shared questions" in result.output
    text = markdown.read_text()
    lines = text.splitlines()
    assert lines[0].startswith("| run | dataset | setting | n | EM | F1 | Acc | Retrieval success")
    assert "| Gold recall | Hop recall | LLM calls/q |" in lines[0]
    assert "| 100.00 | 70.00 (10 of 12) | 1.00 |" in lines[4]  # full: gold, hop recall, calls
    assert "| 100.00 | n/a | 1.00 |" in lines[2]  # bm25 records no hop recall
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == [
        "## Paired gains (95% bootstrap CI, 1000 resamples, seed 3)",
        "## Headroom",
        "## By question type",
        "## Paired cost",  # every row records one call and one second: the same cost
    ]
    assert "| full | seconds | 12 | 0.0 [0.0, 0.0] | 0/0/12 | 1.0 | 1.0 | 0.0 |" in text
    assert "Each run minus `hybrid` (the best one-call RAG run" in text
    # (58.3 - 33.3) / (83.3 - 33.3): half the gap from the best one-call run to the oracle
    assert "| full | agent | 58.3 | +25.0 [" in text and "| 3/0/9 | 50.0% |" in text
    assert "| bridge | 8 | 37.5 | 50.0 | 75.0 | 100.0 | 12.5 |" in text
    assert "Note:" not in text
    assert plot.read_bytes()[:8] == PNG
    assert (tmp_path / "out" / "compare-gains.png").read_bytes()[:8] == PNG

    compare(*args, "--resamples", "1000", "--seed", "3")
    assert markdown.read_text() == text  # seeded: the report regenerates byte-identical
    compare(*args, "--resamples", "1000", "--seed", "4")
    assert "1000 resamples, seed 4" in markdown.read_text()


def test_runs_over_different_files_keep_todays_comparison(runs: list[Path], tmp_path: Path) -> None:
    other = write_run(tmp_path / "elsewhere", "bm25", [0, 1] * 6, sha="cd" * 32)
    markdown = tmp_path / "c.md"
    result = compare(str(runs[1]), str(other), "--markdown", str(markdown))
    text = markdown.read_text()
    assert "## " not in text and "paired gains" not in result.output
    assert "Hop recall" not in text  # neither run's rows record it
    assert "the runs differ in datasets" in text


def test_a_run_without_rows_keeps_its_row_in_the_table_and_loses_only_the_pairing(
    runs: list[Path], tmp_path: Path
) -> None:
    (runs[0] / "details.jsonl").unlink()
    markdown = tmp_path / "c.md"
    result = compare(str(runs[0]), str(runs[2]), "--markdown", str(markdown))
    assert "no paired statistics: no readable details.jsonl for bm25" in result.output
    text = markdown.read_text()
    assert text.splitlines()[2].startswith("| bm25 |") and "## Paired gains" not in text


def test_common_questions_rescore_hop_recall_with_the_means(
    runs: list[Path], tmp_path: Path
) -> None:
    short = write_run(tmp_path / "short", "bm25", [1, 1, 0, 0])  # the first four questions
    markdown = tmp_path / "c.md"
    compare(str(short), str(runs[2]), "--common", "--markdown", str(markdown))
    text = markdown.read_text()
    assert "| 100.00 | 100.00 | 1.00 |" in text.splitlines()[3]  # full's hop recall on q0-q3
    assert "On the 4 questions every run finished" in text
    assert "| full | agent | 4 | +50.0 [" in text


def test_compare_refuses_a_bootstrap_without_resamples(runs: list[Path]) -> None:
    result = runner.invoke(eval_app, ["compare", *map(str, runs), "--resamples", "0"])
    assert result.exit_code == 2 and "--resamples must be >= 1" in result.output


def test_hop_recall_is_a_mean_over_the_rows_that_define_it() -> None:
    rows = [{"hop_recall": 1.0}, {"hop_recall": 0.5}, {"hop_recall": None}, {}]
    metrics = with_hop_recall({"n": 4}, rows)
    assert (metrics["hop_recall"], metrics["hop_recall_n"]) == (75.0, 2)
    assert with_hop_recall({"n": 1}, [{"f1": 1.0}]) == {"n": 1}  # rows from before the field
    none = with_hop_recall({"n": 1}, [{"hop_recall": None}])
    columns = [key for key, _ in compare_columns([(Path("a"), none)])]
    assert "hop_recall" not in columns  # recorded, but defined nowhere: nothing to show
    runs = [(Path("a"), {**metrics, "pipeline": "full"}), (Path("b"), {**none, "pipeline": "x"})]
    at = [key for key, _ in compare_columns(runs)].index("hop_recall") + 1
    assert [row[at] for row in comparison_rows(runs)] == ["75.00 (2 of 4)", "n/a"]


# --------------------------------------------------------------------------- timing two settings


def timed_run(
    root: Path,
    name: str,
    seconds: list[float | None],
    *,
    predictions: list[str],
    calls: list[int],
    completion: list[int],
    first_answer: list[float] | None = None,
) -> Path:
    """A draft-first run directory of four questions with recorded seconds, calls and tokens
    (None: a row written before ``seconds`` existed has no such field)."""
    rows: list[dict[str, Any]] = []
    for i, (spent, answer) in enumerate(zip(seconds, predictions, strict=True)):
        row: dict[str, Any] = {"id": f"q{i}", "type": "bridge", "prediction": answer}
        row |= {"f1": 1.0 if answer.lower().strip(".") in ("beatles", "the beatles") else 0.0}
        row |= {"em": row["f1"], "acc": row["f1"], "gold_recall": 1.0}
        row |= {"llm_calls": calls[i], "prompt_tokens": 100 * calls[i]}
        row |= {"completion_tokens": completion[i]}
        if spent is not None:
            row["seconds"] = spent
        if first_answer is not None:
            row["planner"] = {"draft": {"decision": {"escalate": True}}}
            row["planner"]["first_answer_s"] = first_answer[i]
        rows.append(row)
    return finished_run(root, name, rows, sha=SHA, pipeline="draft-first")


@pytest.fixture
def hyde_arms(tmp_path: Path) -> list[Path]:
    """Two settings of one pipeline in directories of one name (``<arm>/hotpotqa/draft-first``,
    as an interleaved timing lays them out): without HyDE is faster on three questions of four
    and slower on one, and writes "beatles" where with HyDE wrote "The Beatles." (the same
    answer once normalised) and changes one other answer."""
    root = tmp_path / "one-at-a-time"
    with_hyde = timed_run(
        root / "with-hyde" / "hotpotqa",
        "draft-first",
        [60.0, 50.0, 40.0, 30.0],
        predictions=["The Beatles.", "Paris", "1998", "no"],
        calls=[5, 5, 4, 3],
        completion=[150, 140, 120, 60],
        first_answer=[14.0, 13.0, 12.0, 11.0],
    )
    without = timed_run(
        root / "without-hyde" / "hotpotqa",
        "draft-first",
        [50.0, 40.0, 41.0, 20.0],
        predictions=["beatles", "Paris", "1999", "No"],
        calls=[4, 5, 4, 2],
        completion=[100, 140, 120, 40],
        first_answer=[14.5, 12.0, 12.0, 11.5],
    )
    return [with_hyde, without]


def test_runs_with_one_pipeline_and_one_directory_name_are_told_apart_by_their_paths(
    hyde_arms: list[Path], tmp_path: Path
) -> None:
    markdown = tmp_path / "c.md"
    result = compare(*map(str, hyde_arms), "--markdown", str(markdown), "--resamples", "500")
    assert "distinct labels" not in result.output
    text = markdown.read_text()
    assert text.splitlines()[2].startswith("| draft-first (with-hyde) |")
    assert text.splitlines()[3].startswith("| draft-first (without-hyde) |")
    assert "| draft-first (without-hyde) | agent | 4 |" in text  # paired statistics


def test_labels_that_are_distinct_already_stay_as_they_were() -> None:
    def labels(*runs: tuple[str, str]) -> list[str]:
        return run_labels([(Path(path), {"pipeline": p}) for path, p in runs])

    assert labels(("runs/a/bm25", "bm25"), ("runs/a/full", "full")) == ["bm25", "full"]
    assert labels(("x/full", "full"), ("y/full-k8", "full")) == ["full (full)", "full (full-k8)"]
    # a run whose label is distinct keeps it beside two that collide
    assert labels(("a/full", "full"), ("b/full", "full"), ("b/bm25", "bm25")) == [
        "full (a)",
        "full (b)",
        "bm25",
    ]


def test_path_differences_drop_what_all_paths_share_or_keep_the_shortest_distinct_tail() -> None:
    paths = [
        Path("r/with-hyde/hotpotqa/draft-first/"),
        Path("./r/without-hyde/hotpotqa/draft-first"),
    ]
    assert path_differences(paths) == ["with-hyde", "without-hyde"]
    assert path_differences([Path("a/run"), Path("a/b/run")]) == ["a/run", "b/run"]
    assert path_differences([Path("a/run"), Path("a/run/")]) == ["a/run", "a/run #2"]


def test_the_paired_cost_says_how_much_faster_and_whether_answers_changed(
    hyde_arms: list[Path], tmp_path: Path
) -> None:
    markdown = tmp_path / "c.md"
    result = compare(*map(str, hyde_arms), "--markdown", str(markdown), "--resamples", "500")
    assert "paired cost against draft-first (with-hyde) on 4 shared questions" in result.output
    text = markdown.read_text()
    assert "## Paired cost" in text
    # seconds: -10, -10, +1, -10: a mean of -7.25, three faster, one slower; medians 40.5, 45
    assert "| seconds | 4 | -7.2 [-10.0, -1.8] | 3/1/0 | 40.5 | 45.0 | -10.0 |" in text
    # the draft came 0.5 s later twice, 1 s sooner once: no difference in the mean
    assert "| first answer s | 4 | 0.0 [-0.6, +0.5] | 1/2/1 | 12.0 | 12.5 | +0.2 |" in text
    assert "| LLM calls | 4 | -0.50 [-1.00, 0.00] | 2/0/2 | 4.00 | 4.50 | -0.50 |" in text
    assert "| completion tokens | 4 | -18 [-38, 0] | 2/0/2 | 110.0 | 130.0 | -10.0 |" in text
    # "beatles" is "The Beatles." once normalised, "No" is "no"; only 1999 is another answer
    assert "`draft-first (without-hyde)` 1 of 4." in text
    assert "Seconds compare only between runs made interleaved" in text
    assert "1 of 4." in result.output and "Seconds compare only" in result.output


def test_rows_without_seconds_are_left_out_of_the_seconds_with_a_note(tmp_path: Path) -> None:
    common = {"predictions": ["a", "b", "c", "d"], "calls": [2, 2, 2, 2]}
    old = timed_run(tmp_path / "old", "run", [None, None, 30.0, 40.0], completion=[9] * 4, **common)
    new = timed_run(tmp_path / "new", "run", [10.0, 10.0, 20.0, 20.0], completion=[9] * 4, **common)
    markdown = tmp_path / "c.md"
    compare(str(old), str(new), "--markdown", str(markdown), "--resamples", "500")
    text = markdown.read_text()
    # over q2 and q3 only: -10 and -20, not the -20 a missing 0 would have made of q0 and q1
    assert (
        "| draft-first (new) | seconds | 2 | -15.0 [-20.0, -10.0] | 2/0/0 | 20.0 | 35.0 |" in text
    )
    assert (
        "`draft-first (new)`: 2 of the 4 shared questions have a row without `seconds` "
        "(written before it was recorded), left out of the seconds statistics, not counted as 0."
    ) in text
    assert "| draft-first (new) | LLM calls | 4 | 0.00 [0.00, 0.00] | 0/0/4 |" in text


def test_a_directory_appended_one_question_at_a_time_is_scored_over_all_its_rows(
    hyde_arms: list[Path], tmp_path: Path
) -> None:
    """``--offset i --limit 1`` appended into one directory leaves metrics.json describing the
    last invocation only; the comparison re-scores the directory's rows and says so."""
    import json

    metrics_file = hyde_arms[0] / "metrics.json"
    metrics = json.loads(metrics_file.read_text())
    metrics_file.write_text(json.dumps({**metrics, "n": 1, "offset": 3, "limit": 1}))
    markdown = tmp_path / "c.md"
    result = compare(*map(str, hyde_arms), "--markdown", str(markdown), "--resamples", "500")
    text = markdown.read_text()
    assert "| draft-first (with-hyde) | dev_tiny.jsonl | open | 4 |" in text
    note = (
        "draft-first (with-hyde): metrics.json covers 1 of the 4 rows of details.jsonl (its last "
        "run's selection, --offset 3 --limit 1); its row above is re-scored over all 4"
    )
    assert f"Note: {note}." in text
    assert "metrics.json covers 1 of the 4" in result.output
    assert "the runs differ in sizes" not in text
    # metrics.json that covers every row is read as it is, with no note
    assert "draft-first (without-hyde): metrics.json covers" not in text


def test_settings_directories_pool_their_runs_of_one_path_into_one_paired_analysis(
    hyde_arms: list[Path], tmp_path: Path
) -> None:
    """``<setting>/<slice>/<pipeline>``: two slices, each timed under both settings; the paired
    cost is over the eight questions of both slices, each paired within its slice."""
    root = tmp_path / "one-at-a-time"
    for arm, seconds in (("with-hyde", [10.0] * 4), ("without-hyde", [4.0, 4.0, 4.0, 12.0])):
        timed_run(
            root / arm / "musique",
            "draft-first",
            seconds,
            predictions=["a", "b", "c", "d"],
            calls=[2] * 4,
            completion=[9] * 4,
        )
    timed_run(root / "with-hyde" / "2wiki", "draft-first", [1.0], predictions=["a"], calls=[1],
              completion=[1])  # fmt: skip
    markdown = tmp_path / "pooled.md"
    result = compare(
        str(root / "with-hyde"), str(root / "without-hyde"), "--markdown", str(markdown)
    )
    text = markdown.read_text()
    assert "| draft-first (with-hyde/hotpotqa) |" in text  # every run in the means table
    assert "| draft-first (without-hyde/musique) |" in text
    assert "`hotpotqa/draft-first`, `musique/draft-first`" in text
    # hotpotqa -10, -10, +1, -10 and musique -6 three times, +2: -45 over 8, 6 faster, 2 slower
    assert "| without-hyde | seconds | 8 | -5.6 [" in text and "| 6/2/0 |" in text
    assert "`without-hyde` 1 of 8." in text
    assert "left out, not below every settings directory: 2wiki/draft-first" in result.output


def test_settings_directories_and_runs_are_not_mixed(hyde_arms: list[Path]) -> None:
    root = hyde_arms[0].parents[1]  # with-hyde
    result = runner.invoke(eval_app, ["compare", str(root), str(hyde_arms[1])])
    assert result.exit_code == 2 and "not both" in result.output
    result = runner.invoke(eval_app, ["compare", str(root), str(root.parent / "without-hyde"),
                                      "--common"])  # fmt: skip
    assert result.exit_code == 2 and "--common compares runs" in result.output
