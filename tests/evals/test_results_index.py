"""evals/results/INDEX.md lists every run folder, and evals/results/README.md's short tables say
what the generated files say.

A run folder is a folder under evals/results holding a ``run.json``. The index gives each one a
status (current, superseded, arm, record, check); a new run added without a row fails here, and
so does a row whose folder is gone or a run of the current suite (``chains``) not marked
current. The results README copies the scoreboard and a few numbers of the comparison tables so
that a newcomer reads the standing on one page; those copies are checked against the files
``hoptree eval suite --scoreboard`` and ``hoptree eval compare`` wrote, so they cannot drift.

Skips when the results folder is not in the checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evals.suite import CHAINS_SUITE, suite_runs
from tests.locations import REPO

RESULTS = REPO / "evals" / "results"
INDEX = RESULTS / "INDEX.md"
STATUSES = frozenset({"current", "superseded", "arm", "record", "check"})
_ROW = re.compile(
    r"^\|\s*`(?P<folder>[^`]+)`\s*\|\s*(?P<status>\w+)\s*\|(?P<what>.*)\|\s*(?P<by>[^|]*?)\s*\|$"
)

pytestmark = pytest.mark.skipif(not INDEX.is_file(), reason="no evals/results/INDEX.md here")


def index_rows(text: str) -> dict[str, tuple[str, str]]:
    """folder -> (status, superseded by) of every table row; a folder listed twice raises."""
    rows: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        folder = row["folder"]
        assert folder not in rows, f"{folder} is listed twice"
        rows[folder] = (row["status"], row["by"].strip().strip("`"))
    return rows


def run_folders(results: Path) -> set[str]:
    return {p.parent.relative_to(results).as_posix() for p in results.rglob("run.json")}


def index_problems(rows: dict[str, tuple[str, str]], on_disk: set[str]) -> list[str]:
    """What is wrong with an index against the folders on disk; empty when nothing is."""
    problems = [f"{f}: a run folder with no row in INDEX.md" for f in sorted(on_disk - set(rows))]
    problems += [f"{f}: listed, but no such run folder" for f in sorted(set(rows) - on_disk)]
    for folder, (status, by) in sorted(rows.items()):
        if status not in STATUSES:
            problems.append(f"{folder}: unknown status {status!r}")
        if (status == "superseded") != bool(by):
            problems.append(f"{folder}: a superseded run names what superseded it, no other does")
        if by and by not in rows:
            problems.append(f"{folder}: superseded by {by}, which is not listed")
    chains = {
        f"v4/{run.dataset}/{run.pipeline}"
        for run in suite_runs(list(CHAINS_SUITE.stages), suite=CHAINS_SUITE)
    }
    for folder in sorted(chains & on_disk):
        if rows.get(folder, ("",))[0] != "current":
            problems.append(f"{folder}: a run of the current suite, not marked current")
    for folder, (status, _by) in sorted(rows.items()):
        if status == "current" and folder.startswith("v4/") and folder not in chains:
            problems.append(f"{folder}: marked current, but the chains suite has no such run")
    return problems


def test_every_run_folder_is_listed_once_with_its_status() -> None:
    rows = index_rows(INDEX.read_text(encoding="utf-8"))
    assert index_problems(rows, run_folders(RESULTS)) == []


def test_the_index_check_fails_on_what_it_guards(tmp_path: Path) -> None:
    for folder in ("v4/musique/full", "v4/musique/full-old", "v9/new/bm25"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "run.json").write_text("{}")
    index = """| `v4/musique/full` | current | the agent | |
| `v4/musique/full-old` | superseded | earlier rows | `v4/musique/full` |
| `v4/musique/gone` | arm | a folder deleted since | |
"""
    problems = index_problems(index_rows(index), run_folders(tmp_path))
    assert problems == [
        "v9/new/bm25: a run folder with no row in INDEX.md",
        "v4/musique/gone: listed, but no such run folder",
    ]
    wrong = index_rows("| `v4/musique/full` | arm | x | |\n| `v4/x/y` | superseded | x | |\n")
    problems = index_problems(wrong, {"v4/musique/full", "v4/x/y"})
    assert "v4/musique/full: a run of the current suite, not marked current" in problems
    assert "v4/x/y: a superseded run names what superseded it, no other does" in problems
    with pytest.raises(AssertionError, match="listed twice"):
        index_rows("| `a/b` | arm | x | |\n| `a/b` | arm | y | |\n")


# --------------------------------------------------------------------------- the README's copies


def _table(text: str, header_start: str) -> list[list[str]]:
    """The rows (cells) of the first markdown table whose header starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


README = RESULTS / "README.md"


def test_the_readme_shows_the_scoreboard_as_written() -> None:
    board = (RESULTS / "v4" / "scoreboard.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    assert _table(readme, "| slice | paired") == _table(board, "| slice | paired")


def _f1_by_run(compare: str) -> dict[str, str]:
    """run -> mean F1 rounded as the README shows it, from a compare table's first table."""
    lines = compare.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    column = header.index("F1")
    shown = {}
    for row in _table(compare, "| run |"):
        named = re.fullmatch(r"[\w+-]+ \(([\w+-]+)\)", row[0])  # "full (full-e11e070)": its folder
        shown[named.group(1) if named else row[0]] = f"{float(row[column]):.1f}"
    return shown


def test_the_readme_f1_table_matches_each_slices_comparison() -> None:
    readme = README.read_text(encoding="utf-8")
    runs = ["no-retrieval", "bm25", "hybrid", "oracle", "full"]
    rows = _table(readme, "| slice (questions) |")
    assert len(rows) == 3
    for row in rows:
        link = re.search(r"\((v4/[^)]+/compare_common\.md)\)", row[-1])
        assert link, row
        shown = _f1_by_run((RESULTS / link.group(1)).read_text(encoding="utf-8"))
        assert row[1:6] == [shown[run] for run in runs], link.group(1)


def test_the_readme_ablations_match_the_musique_comparison() -> None:
    compare = (RESULTS / "v4" / "musique" / "compare_common.md").read_text(encoding="utf-8")
    written = {row[0]: row for row in _table(compare, "| run | step off |")}
    for run, _step, f1, delta, wlt in _table(
        README.read_text(encoding="utf-8"), "| run | step switched"
    ):
        assert [f1, delta, wlt] == [written[run][2], written[run][3], written[run][6]], run


def test_the_readme_quality_table_matches_its_report() -> None:
    report = (RESULTS / "quality" / "compare.md").read_text(encoding="utf-8")
    written = {row[0]: row for row in _table(report, "| pipeline | n |")}
    for pipeline, accuracy, hard, share in _table(
        README.read_text(encoding="utf-8"), "| pipeline | accuracy | HARD (109)"
    ):
        assert [accuracy, hard.split()[0], share] == [
            written[pipeline][2],
            written[pipeline][3].split()[0],
            written[pipeline][4],
        ], pipeline
