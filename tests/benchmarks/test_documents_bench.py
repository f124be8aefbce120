"""``benchmarks/documents_bench.py`` without running it: its PDF holds the facts on the pages
the report checks citations against, its watch of the model-server folder reads records and
leases as ``agent.runtime.shared_server`` writes them, and a stub run's report cannot pass for
the product's numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType

import pytest

from searchers.corpus import read_passages
from tests.benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("documents_bench")


def test_the_pdf_puts_each_fact_on_its_page(bench: ModuleType, tmp_path: Path) -> None:
    printed = bench.make_gazetteer(tmp_path / "gazetteer.pdf")
    passages = list(read_passages(tmp_path / "gazetteer.pdf"))
    assert {p.metadata["page"] for p in passages} == set(printed) == set(range(1, 10))
    for page, fact in bench.FACTS.items():
        assert fact in printed[page]
        holding = [p for p in passages if fact in " ".join(p.text.split())]
        assert [p.metadata["page"] for p in holding] == [page]
    assert bench.ANSWER in bench.FACTS[bench.ANSWER_PAGE]
    again = tmp_path / "again.pdf"
    bench.make_gazetteer(again)
    assert again.read_bytes() == (tmp_path / "gazetteer.pdf").read_bytes()  # index kept on rerun


def test_the_watch_reads_the_record_and_the_leases(bench: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "model-server"
    (root / "leases").mkdir(parents=True)
    (root / "server.json").write_text(json.dumps({"pid": 4321, "port": 5555}))
    (root / "leases" / f"{os.getpid()}-abc").write_text("1")
    (root / "leases" / "77-def").write_text("1")
    watch = bench.ServerWatch(tmp_path)
    watch.sample()
    assert watch.servers == {4321: 5555} and watch.lease_pids == {os.getpid(), 77}


def _state(bench: ModuleType, mode: str) -> dict:
    run = {
        "pid": 10, "seconds": 40.0, "wall_s": 50.0, "llm_calls": 9, "short_answer": "1712",
        "citations": [{"n": 1, "label": "Gazetteer > Towns of the west p. 7", "page": 7,
                       "text": "Quenton was founded in 1712 by Mara Vell."}],
        "model_servers": {"99": 5555}, "ask_leased": True, "stub_calls": 9,
    }  # fmt: skip
    beside = {**run, "serve_pid": 20, "serve_leased": True}
    fingerprint = {"mode": mode, "question": bench.QUESTION, "pages": 9}
    if mode == "stub":
        fingerprint["stub_latency_s"] = 0.2
    return {
        "fingerprint": fingerprint,
        "machine": {"machine": "x86_64", "cores": 2, "python": "3.11", "niceness": 19},
        "sessions": [{"date": "today", "load_start": 1.0, "load_end": 1.0, "busy": []}],
        "index": {"pages": 9, "passages": 9, "wall_s": 5.0},
        "phase_a": {**run, **bench.pages_check(run)},
        "phase_b": {"alone": [run], "idle": [beside], "busy": [beside]},
    }


def test_a_stub_report_says_so_first(bench: ModuleType) -> None:
    text = bench.report(_state(bench, "stub"), 1)
    assert text.startswith("> **STUB RUN: not the product's numbers.**")
    embedded = bench.report(_state(bench, "embedded"), 1)
    assert "STUB" not in embedded
    assert "[1] Gazetteer > Towns of the west p. 7" in embedded
    assert "| 1.00 |" in embedded and "pid 99, leased by ask and serve" in embedded
