"""`hoptree index build` and `hoptree retrieve` as a user runs them.

Most tests call the typer app in-process (CliRunner) with the session's real embedding model
injected, so the suite loads the model once; one test runs the real entry point in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_env import child_environment
from tests.locations import TESTS

DATA = TESTS / "data"


@pytest.fixture
def built(cli, tmp_path: Path) -> Path:
    index = tmp_path / "idx"
    result = cli(
        "index", "build", str(DATA / "passages.jsonl"), str(DATA / "hotpot_hf.jsonl"),
        "--index", str(index),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return index


def test_build_prints_a_table_and_rerun_adds_nothing(cli, built: Path) -> None:
    again = cli("index", "build", str(DATA / "passages.jsonl"), "--index", str(built), "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["changed"], report["added"], report["total"]) == (False, 0, 10)
    human = cli("index", "build", str(DATA), "--index", str(built))  # a directory source
    assert human.exit_code == 0, human.output
    assert "guide.md" in human.stdout and "river_notes.txt" in human.stdout
    assert "20 in the index" in human.stdout  # + the FlashRAG fixtures, markdown and text


@pytest.mark.parametrize("kind", ["sparse", "dense", "hybrid"])
def test_retrieve_json_hits_carry_the_contract_fields(cli, built: Path, kind: str) -> None:
    args = ["retrieve", "--index", str(built), "--retriever", kind, "-k", "3", "--json"]
    result = cli(*args, "Which river flows through Vienna?")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["retriever"] == kind and doc["k"] == 3
    assert len(doc["hits"]) == 3
    for hit in doc["hits"]:
        assert {"id", "title", "score", "text"} <= set(hit)
        assert hit["retriever"] == kind
    # the Danube paragraph is in both files (ids "danube" and "danube-<hash>"): either will do
    assert any(h["title"] == "Danube" for h in doc["hits"])


def test_retrieve_human_output_is_a_table(cli, built: Path) -> None:
    result = cli("retrieve", "--index", str(built), "--retriever", "sparse", "Eiffel Tower")
    assert result.exit_code == 0, result.output
    assert "Eiffel Tower" in result.stdout and "score" in result.stdout


def test_retrieve_prints_queries_and_passages_as_written(cli, built: Path) -> None:
    """A query like "a:b:c" is not emoji codes and "[bold]" not markup, from users or passages."""
    query = "Eiffel a:b:c [bold]x[/bold]"
    result = cli("retrieve", "--index", str(built), "--retriever", "sparse", query)
    assert result.exit_code == 0, result.output
    assert "a:b:c" in result.stdout and "[bold]x[/bold]" in result.stdout


def test_batch_mode_one_line_per_query_in_order(cli, built: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "a", "query": "Who wrote The Hobbit?"}\n'
        "\n"
        '{"id": 7, "query": "river through Paris"}\n'
        '{"question": "Which river flows through Vienna?"}\n'
    )
    result = cli(
        "retrieve", "--index", str(built), "--retriever", "hybrid", "-k", "2",
        "--queries", str(queries), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["query"]) for r in lines] == [
        ("a", "Who wrote The Hobbit?"),
        ("7", "river through Paris"),
        ("4", "Which river flows through Vienna?"),  # no id: the line number
    ]
    assert all(len(r["hits"]) == 2 for r in lines)
    assert {h["id"] for h in lines[0]["hits"]} & {"tolkien", "hobbit"}


def test_errors_exit_2_with_a_clear_message(cli, built: Path, tmp_path: Path) -> None:
    missing = cli("retrieve", "--index", str(tmp_path / "none"), "--retriever", "sparse", "x")
    assert missing.exit_code == 2 and "no index at" in missing.stderr
    empty = cli("retrieve", "--index", str(built), "--retriever", "sparse", "   ")
    assert empty.exit_code == 2 and "query is empty" in empty.stderr
    neither = cli("retrieve", "--index", str(built))
    assert neither.exit_code == 2 and "QUERY or --queries" in neither.stderr
    bad_kind = cli("retrieve", "--index", str(built), "--retriever", "magic", "x")
    assert bad_kind.exit_code == 2 and "sparse, dense, hybrid" in bad_kind.stderr

    queries = tmp_path / "bad.jsonl"
    queries.write_text('{"id": "a", "query": "fine"}\n{"id": "b", "query": }\n')
    malformed = cli("retrieve", "--index", str(built), "--queries", str(queries), "--json")
    assert malformed.exit_code == 2 and "bad.jsonl:2" in malformed.stderr
    assert malformed.stdout == ""  # validated before any result is printed
    queries.write_text('{"id": "a", "query": ""}\n')
    blank = cli("retrieve", "--index", str(built), "--queries", str(queries), "--json")
    assert blank.exit_code == 2 and "bad.jsonl:1: missing or empty 'query'" in blank.stderr

    bad_source = tmp_path / "broken.jsonl"
    bad_source.write_text('{"id": "x", "text": "ok"}\n{broken\n')
    broken = cli("index", "build", str(bad_source), "--index", str(built))
    assert broken.exit_code == 2 and "broken.jsonl:2" in broken.stderr
    bad_format = cli("index", "build", str(bad_source), "--index", str(built), "--format", "xml")
    assert bad_format.exit_code == 2 and "--format" in bad_format.stderr


def test_wrong_embedding_model_exits_2_naming_both(
    cli, built: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = tmp_path / "other-model"
    monkeypatch.setenv("HOPTREE_EMBEDDINGS__MODEL", str(other))
    result = cli("retrieve", "--index", str(built), "--retriever", "dense", "x")
    assert result.exit_code == 2
    assert "all-MiniLM-L6-v2" in result.stderr and "other-model" in result.stderr
    sparse = cli("retrieve", "--index", str(built), "--retriever", "sparse", "--json", "Danube")
    assert sparse.exit_code == 0  # the sparse index does not care about the embedding model
    build = cli("index", "build", str(DATA / "guide.md"), "--index", str(built))
    assert build.exit_code == 2 and "other-model" in build.stderr


def test_index_info_and_verify(cli, built: Path) -> None:
    info = cli("index", "info", "--index", str(built), "--json", "--verify")
    assert info.exit_code == 0, info.output
    doc = json.loads(info.stdout)
    assert doc["passages"] == 10 and doc["problems"] == []
    (built / doc["data_dir"] / "passages.jsonl").write_text("")
    damaged = cli("index", "info", "--index", str(built), "--verify")
    assert damaged.exit_code == 1 and "passages" in damaged.stderr


def test_real_entry_point_in_a_subprocess(tmp_path: Path) -> None:
    env = child_environment()
    env["HOPTREE_DATA_DIR"] = str(tmp_path / "data")
    index = tmp_path / "idx"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent.cli", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )

    build = run("index", "build", str(DATA / "flashrag_2wiki.jsonl"), "--index", str(index))
    assert build.returncode == 0, build.stderr
    result = run(
        "retrieve", "--index", str(index), "--retriever", "hybrid", "--json", "-k", "1",
        "Who is the mother of Xawery Żuławski?",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # stdout holds exactly one JSON document
    assert doc["hits"][0]["title"] == "Xawery Żuławski"
