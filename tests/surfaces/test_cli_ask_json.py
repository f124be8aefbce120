"""`hoptree ask --json` in a child process with stdout and stderr piped, as a script runs it:
stdout is exactly one JSON document that names the searchers the planner used, and the
progress lines arrive on stderr while the question runs. The chat model is the routed
two-hop script behind an OpenAI-compatible endpoint on 127.0.0.1; the index is real."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_process import run_hoptree
from tests.planner_scripts import two_hop_chat
from tests.routed_endpoint import routed_endpoint
from tests.surfaces.test_mcp_cli import rewrite
from tests.surfaces.test_mcp_server import QUESTION, index_dir  # noqa: F401 (index_dir is a fixture)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    chat = two_hop_chat()
    chat.routes["rewrite"] = rewrite
    with routed_endpoint(chat) as url:
        yield url


def ask_env(endpoint: str, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "HOPTREE_DATA_DIR": str(data_dir),
        "HOPTREE_LLM__BASE_URL": endpoint,
        "HOPTREE_LLM__MODEL": "scripted",
        "HOPTREE_LLM__API_KEY": "unused",
        "HOPTREE_LLM__MAX_RETRIES": "0",
        "HOPTREE_LLM__TIMEOUT_S": "60",
        **extra,
    }


def test_ask_json_piped_keeps_stdout_json_and_progress_on_stderr(
    index_dir: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
) -> None:
    env = ask_env(endpoint, tmp_path / "data", HOPTREE_PLANNER__SEARCHERS="sparse")
    proc = run_hoptree(["ask", "--index", str(index_dir), "--json", QUESTION], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # the whole of stdout: one JSON document, nothing else
    assert proc.stdout.count("\n") == 1
    assert result["short_answer"] == "the Seine"
    assert result["searchers"] == ["sparse"]
    lines = [line for line in proc.stderr.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    # the draft comes first: the question searched as written, read once, shown at once
    draft_at = next(i for i, line in enumerate(lines) if "draft answer after" in line)
    planning_at = next(i for i, line in enumerate(lines) if "planning the search" in line)
    assert draft_at < planning_at, proc.stderr
    assert lines[planning_at].endswith("planning the search (searchers: sparse)"), proc.stderr
    assert result["draft"]["decision"]["escalate"] is True  # a chain: the router plans it
    # --json keeps the draft as it reached the person: its answer and citations
    assert result["draft"]["short_answer"] == "Seine"
    assert {c["id"] for c in result["draft"]["citations"]} == {"seine"}
    assert result["final_choice"] == {"source": "plan", "reason": "resolved agrees with the draft"}
    # stderr shows the draft's cited answer and its sources' titles under its line
    assert any(re.search(r"  draft: .*\[\d\]", line) for line in lines), proc.stderr
    assert any(line.endswith("Seine") and "  Sources: [" in line for line in lines), proc.stderr
    assert result["first_answer_s"] <= result["seconds"]
    assert any("planned 2 atomic queries" in line for line in lines), proc.stderr
    assert any("answer written" in line for line in lines), proc.stderr

    quiet = run_hoptree(
        ["ask", "--index", str(index_dir), "--json", "--quiet", QUESTION], env, tmp_path
    )
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["short_answer"] == "the Seine"
    assert "planning the search" not in quiet.stderr and "draft" not in quiet.stderr


def test_ask_over_an_index_with_a_tree_searches_the_tree_unasked(
    index_dir: Path,  # noqa: F811
    endpoint: str,
    embeddings,
    tmp_path: Path,
) -> None:
    """No HOPTREE_PLANNER__SEARCHERS: the index's tree makes ``tree`` one of the searchers,
    and the result says so. The tree's summaries are the scripted builder's."""
    import asyncio
    import shutil

    from tests.scripted_chat import ScriptedChatModel
    from tests.surfaces.test_mcp_server import DATA
    from tests.tree.test_build import reply
    from tree.build import TreeBuilder, TreeConfig
    from tree.documents import read_documents
    from tree.store import save_tree

    index = tmp_path / "idx"
    shutil.copytree(index_dir, index)
    builder = TreeBuilder(
        ScriptedChatModel(replies=[reply] * 100),
        embeddings,
        TreeConfig(clustering="leiden", chunk_tokens=40),
        embedding_model="all-MiniLM-L6-v2",
    )
    save_tree(asyncio.run(builder.build(read_documents([DATA]))), index / "tree")
    env = ask_env(endpoint, tmp_path / "data", HOPTREE_PLANNER__SEARCH__MAX_LLM_CALLS="1")
    proc = run_hoptree(["ask", "--index", str(index), "--json", QUESTION], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["searchers"] == ["sparse", "dense", "tree"]
    searched = {s["searcher"] for q in result["sub_queries"] for s in q["searches"]}
    assert "tree" in searched
    assert "planning the search (searchers: sparse, dense, tree)" in proc.stderr
