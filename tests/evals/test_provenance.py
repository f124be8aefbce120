"""``code_version``: the commit an eval row was made with, read from a real git checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evals.provenance import code_version


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_commit_and_whether_tracked_files_changed(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    commit = git(tmp_path, "rev-parse", "--short=7", "HEAD")
    assert code_version(tmp_path) == commit
    (tmp_path / "notes.txt").write_text("untracked files are not the code\n")
    code_version.cache_clear()
    assert code_version(tmp_path) == commit
    (tmp_path / "a.py").write_text("x = 2\n")
    code_version.cache_clear()
    assert code_version(tmp_path) == f"{commit}+dirty"


def test_committed_results_rewritten_by_a_run_are_not_the_code(tmp_path: Path) -> None:
    rows = tmp_path / "evals" / "results" / "v4" / "full"
    rows.mkdir(parents=True)
    (rows / "details.jsonl").write_text('{"id": "q1"}\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    commit = git(tmp_path, "rev-parse", "--short=7", "HEAD")
    (rows / "details.jsonl").write_text('{"id": "q1"}\n{"id": "q2"}\n')  # a resumed run
    code_version.cache_clear()
    assert code_version(tmp_path) == commit
    (tmp_path / "a.py").write_text("x = 2\n")
    code_version.cache_clear()
    assert code_version(tmp_path) == f"{commit}+dirty"


def test_outside_a_checkout_the_package_version(tmp_path: Path) -> None:
    code_version.cache_clear()
    assert code_version(tmp_path).startswith("hoptree ")


def test_results_name_their_dataset_without_an_absolute_path(tmp_path: Path) -> None:
    from evals.run_directory import REPOSITORY, dataset_label

    inside = REPOSITORY / "tests" / "data_eval" / "x.jsonl"
    beside = REPOSITORY.parent / "shared" / "data" / "hotpotqa" / "a.jsonl"
    assert dataset_label(inside) == "tests/data_eval/x.jsonl"
    assert dataset_label(beside) == "../shared/data/hotpotqa/a.jsonl"
    elsewhere = tmp_path / "mine" / "questions.jsonl"
    label = dataset_label(elsewhere)
    if not elsewhere.resolve().is_relative_to(REPOSITORY.parent):
        assert label == "questions.jsonl"
    assert not label.startswith("/")
