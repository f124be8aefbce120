"""The plumbing benchmark's report (``benchmarks/peer_plumbing.py``) on hand-made rows: no
model, no shared data."""

from __future__ import annotations

from tests.benchmark_module import load_benchmark

pp = load_benchmark("peer_plumbing")


def _row(qid: str, gold: str, **readings: str) -> dict:
    row = {"slice": "s", "id": qid, "answers": [gold], "same_retrieval": True}
    row.update({"bm25": gold, "peer": "", "peer_raw": "", **readings})
    row.setdefault("flashrag-whole", row["peer_raw"])
    return row


def test_the_report_pairs_every_reading_with_the_one_call_row() -> None:
    rows = [
        _row("a", "Paris", **{"rag_answer-whole": "Paris", "flashrag-windows": "Lyon"}),
        _row("b", "Seine", **{"rag_answer-whole": "Loire", "flashrag-windows": "Seine"}),
        _row("c", "1921", **{"rag_answer-whole": "1921", "flashrag-windows": "1922"}),
    ]
    rows[0]["peer_raw"] = rows[0]["peer"] = rows[0]["flashrag-whole"] = "Paris"
    text = pp.report(rows)
    assert "gives the peer's recorded reply: 3/3" in text
    assert "the same five BM25 titles retrieved again as both rows recorded: 3/3" in text
    # bm25 is right on all three; FlashRAG's prompt over windows on one, whole on one
    assert "| hoptree prompt, windows (the `bm25` row) | 100.0 |  |" in text
    assert "| FlashRAG prompt, windows | 33.3 | -66.7" in text and "0/2" in text
    assert "| hoptree prompt, whole | 66.7 | -33.3" in text
    assert "| s | 3 | 100.0 | 66.7 | 33.3 |" in text  # the by-dataset table
    assert pp.dataset_of("fresh/hotpotqa") == pp.dataset_of("hotpotqa_b") == "hotpotqa"


def test_a_reply_that_differs_from_the_peers_is_counted() -> None:
    row = _row("a", "Paris", **{"rag_answer-whole": "Paris", "flashrag-windows": "Paris"})
    row["peer_raw"], row["flashrag-whole"] = "Paris", "Paris, France"
    assert "gives the peer's recorded reply: 0/1" in pp.report([row])
