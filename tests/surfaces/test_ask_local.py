"""One question end to end, as a user runs it: `hoptree index build` then `hoptree ask --json`,
in a subprocess, with the real local model, real tantivy, FAISS and embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import run_hoptree
from tests.locations import TESTS

DATA = TESTS / "data" / "passages.jsonl"


@pytest.mark.llm
def test_ask_json_answers_a_two_hop_question(local_chat, tmp_path: Path) -> None:
    env = {
        "HOPTREE_DATA_DIR": str(tmp_path / "data"),
        "HOPTREE_LLM__GGUF_PATH": local_chat.details["gguf"],
        "HOPTREE_BUDGETS__MAX_ROUNDS": "2",
        "HOPTREE_PLANNER__SEARCH__MAX_REWRITES": "1",
        # the plan runs after the draft whatever the draft's confidence: both are the plumbing
        "HOPTREE_PLANNER__ROUTER": "always",
    }
    built = run_hoptree(
        ["index", "build", str(DATA), "--index", str(tmp_path / "idx")], env, tmp_path
    )
    assert built.returncode == 0, built.stderr
    question = "Which river flows through the city where the Eiffel Tower stands?"
    proc = run_hoptree(["ask", "--index", str(tmp_path / "idx"), "--json", question], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for key in ("answer", "short_answer", "citations", "sub_queries", "llm_calls"):
        assert key in result, key
    assert result["short_answer"].strip()
    # the draft came first, cited, with the real model's log-probabilities for the router
    draft = result["draft"]
    assert draft["short_answer"].strip() and draft["citations"]
    assert draft["signals"]["logprob_min"] is not None and draft["decision"]["escalate"]
    assert result["first_answer_s"] <= result["seconds"]
    assert result["sub_queries"] and all(q["query"] for q in result["sub_queries"])
    searched = {s["searcher"] for q in result["sub_queries"] for s in q["searches"]}
    assert searched == {"sparse", "dense"}
    ids = {json.loads(line)["id"] for line in DATA.read_text().splitlines() if line.strip()}
    assert result["citations"] and {c["id"] for c in result["citations"]} <= ids
    assert 3 <= result["llm_calls"] <= 80
    assert result["prompt_tokens"] > 0
    # the two passages that answer it reach the evidence: Paris (the tower) and the Seine
    fused = {pid for q in result["sub_queries"] for pid in q["passage_ids"]}
    assert {"paris", "seine"} <= fused
