"""``benchmarks/router_agreement.py`` on tiny synthetic rows: a rule plans where it fires, keeps
the draft elsewhere, and is compared with the recorded final answers question by question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.benchmark_module import load_benchmark

ra = load_benchmark("router_agreement")


def _write(run: Path, rows: list[dict[str, Any]]) -> None:
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _draft_row(qid: str, draft: str, final: str, shape: str, logprob: float | None) -> dict:
    return {
        "id": qid,
        "answers": ["Tulsa"],
        "prediction": final,
        "f1": 1.0 if final == "Tulsa" else 0.0,
        "planner": {
            "draft": {
                "short_answer": draft,
                "signals": {"shape": shape, "logprob_min": logprob},
            }
        },
    }


def test_rules_replace_the_final_answer_with_the_draft_where_they_do_not_plan(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path / "df",
        [
            # a sure chain whose draft BM25 agrees with, and the plan fixed it: a rule that
            # keeps the draft loses this question
            _draft_row("a", "Boston", "Tulsa", "chain", -0.1),
            # the reads disagree: every rule plans it, the final answer stands
            _draft_row("b", "Tulsa", "Tulsa", "chain", -2.0),
            _draft_row("c", "no draft row", "Tulsa", "chain", None) | {"planner": {}},
        ],
    )
    _write(
        tmp_path / "bm",
        [
            {"id": "a", "prediction": "boston", "f1": 0.0},
            {"id": "b", "prediction": "Denver", "f1": 0.0},
            {"id": "c", "prediction": "Tulsa", "f1": 1.0},
        ],
    )
    qs = {q.id: q for q in ra.questions(tmp_path / "df", tmp_path / "bm")}
    assert set(qs) == {"a", "b"}  # a row without a draft is not a draft-first question
    assert qs["a"].agree and qs["a"].sure_chain and qs["a"].draft_f1 == 0.0
    assert not qs["b"].agree and not qs["b"].sure_chain
    assert not ra.RULES["disagree"](qs["a"]) and ra.RULES["disagree"](qs["b"])
    assert not ra.RULES["not a sure chain"](qs["a"]) and not ra.RULES["unsure"](qs["a"])

    lines = ra.slice_lines("s", list(qs.values()))
    assert lines[0] == "| s | 2 | 50.0 | 0.0 | 100.0 | 1 |"
    disagree = next(line for line in lines if "| disagree |" in line)
    assert "| 1 | 50.0 | -50.0 [" in disagree and disagree.endswith("| 0/1 |")
