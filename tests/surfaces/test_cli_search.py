"""`hoptree search`: the trace rendering, its errors, and one real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from agent.cli.search import render_trace
from searchers.passages import Hit, Passage
from searchers.searcher import Attempt, SearchResult, Verdict
from tests.cli_process import run_hoptree


def result() -> SearchResult:
    attempts = [
        Attempt(
            0, "rewrite", '"Tinted Windows"', hit_ids=["a", "b"], verdict=Verdict(False, False, 0.5)
        ),
        Attempt(
            1,
            "extend",
            '"Tinted Windows" "gig"',
            parent=0,
            depth=1,
            hit_ids=["b"],
            verdict=Verdict(True, True, 1.0),
        ),
        Attempt(
            2, "filter", '"Tinted Windows" -"album"', parent=0, depth=1, note="x: no new query"
        ),
    ]
    hits = [Hit(Passage("b", "Tinted Windows (band)", "first gig in Austin"), 1.5, "sparse")]
    return SearchResult("sparse", "first gig?", hits, attempts, 1, True, "sufficient", 5, 1234.0)


def test_trace_is_a_tree_with_verdicts_and_the_best_marked() -> None:
    console = Console(record=True, width=200)
    console.print(render_trace(result()))
    text = console.export_text()
    lines = text.splitlines()
    assert "stopped: sufficient" in lines[0] and "5 LLM calls" in lines[0]
    extend_line = next(line for line in lines if "#1 extend" in line)
    assert "sufficient" in extend_line and "<- best" in extend_line
    assert lines.index(extend_line) > next(i for i, ln in enumerate(lines) if "#0 rewrite" in ln)
    assert "no new query" in text
    assert extend_line.index("#1") > lines[1].index("#0")  # children are indented below


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search_cli")
    corpus = root / "corpus.jsonl"
    rows = [
        {
            "id": "p1",
            "title": "Tinted Windows (band)",
            "text": "Tinted Windows played their first gig in Austin, Texas.",
        },
        {"id": "p2", "title": "Austin", "text": "Austin is the capital of Texas."},
        {"id": "p3", "title": "Window film", "text": "Window film reduces glare."},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    proc = run_hoptree(["index", "build", str(corpus), "--index", str(root / "idx")], {}, root)
    assert proc.returncode == 0, proc.stderr
    return root / "idx"


def test_unknown_searcher_is_a_clear_error(small_index: Path, tmp_path: Path) -> None:
    proc = run_hoptree(
        ["search", "--index", str(small_index), "--searcher", "nope", "q"], {}, tmp_path
    )
    assert proc.returncode == 2
    assert "no searcher named 'nope'" in proc.stderr and "sparse" in proc.stderr


def test_empty_query_is_refused(small_index: Path, tmp_path: Path) -> None:
    proc = run_hoptree(["search", "--index", str(small_index), "   "], {}, tmp_path)
    assert proc.returncode == 2 and "empty" in proc.stderr


@pytest.mark.llm
def test_real_sparse_search_json(small_index: Path, tmp_path: Path, local_chat) -> None:
    env = {
        "HOPTREE_DATA_DIR": str(tmp_path / "data"),
        "HOPTREE_LLM__GGUF_PATH": local_chat.details["gguf"],
        "HOPTREE_LLM__LOCAL_CTX": "4096",
        "HOPTREE_BUDGETS__SEARCHER_MAX_LLM_CALLS": "4",
    }
    args = [
        "search",
        "--index",
        str(small_index),
        "--searcher",
        "sparse",
        "--json",
        "-k",
        "2",
        "Where did Tinted Windows play their first gig?",
    ]
    proc = run_hoptree(args, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["searcher"] == "sparse" and out["llm_calls"] <= 4
    assert out["attempts"] and out["attempts"][0]["operation"] in {"rewrite", "original"}
    assert {"id", "title", "score", "text"} <= set(out["hits"][0])
    assert len(out["hits"]) <= 2


def test_search_json_piped_reports_progress_on_stderr(small_index: Path, tmp_path: Path) -> None:
    """stdout holds the one JSON document; the start and the end of the search are lines on
    stderr (a stand-alone search may rewrite for minutes on the local model)."""
    from tests.routed_chat import RoutedChatModel
    from tests.routed_endpoint import routed_endpoint
    from tests.surfaces.test_mcp_cli import rewrite

    with routed_endpoint(RoutedChatModel(routes={"rewrite": rewrite})) as url:
        env = {
            "HOPTREE_DATA_DIR": str(tmp_path / "data"),
            "HOPTREE_LLM__BASE_URL": url,
            "HOPTREE_LLM__MODEL": "scripted",
            "HOPTREE_LLM__API_KEY": "unused",
            "HOPTREE_LLM__MAX_RETRIES": "0",
            "HOPTREE_BUDGETS__SEARCHER_MAX_LLM_CALLS": "2",
        }
        args = ["search", "--index", str(small_index), "--json", "-k", "2", "Tinted Windows gig"]
        proc = run_hoptree(args, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["searcher"] == "sparse" and out["hits"][0]["id"] == "p1"
    assert "sparse searching 'Tinted Windows gig'" in proc.stderr
    assert f"sparse stopped ({out['stopped']}): " in proc.stderr
