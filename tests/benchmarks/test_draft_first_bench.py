"""``benchmarks/draft_first.py`` on small synthetic run folders: pairing by question id (the
files list their rows in different orders), the sign of ΔF1 (draft-first minus full), seconds,
escalation and first-answer times, the targets' verdicts, and slices whose runs are missing or
partial, reported with what exists and never filled in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_module import load_benchmark

df = load_benchmark("draft_first")


def full_row(qid: str, f1: float, seconds: float) -> dict[str, Any]:
    return {"id": qid, "f1": f1, "em": float(f1 == 1.0), "seconds": seconds, "planner": {}}


def draft_row(qid: str, f1: float, seconds: float, first: float, escalate: bool) -> dict[str, Any]:
    draft = {"short_answer": "x", "decision": {"escalate": escalate, "reason": "r"}}
    planner = {"draft": draft, "final_choice": {"source": "draft"}, "first_answer_s": first}
    return {"id": qid, "f1": f1, "em": float(f1 == 1.0), "seconds": seconds, "planner": planner}


def write_run(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rows_pair_by_id_and_the_delta_is_draft_first_minus_full(tmp_path: Path) -> None:
    # full: q0..q3 score 0, 0, 1, 1 (and q9, which draft-first lacks: left out); draft-first,
    # written in reverse order, scores q0 1, q1 0.5, q2 1, q3 0. By id: +1, +0.5, 0, -1, two
    # wins, a loss and a tie, +12.5 points; by file position it would be one win, one loss,
    # two ties, and the reverse subtraction -12.5
    full = write_run(
        tmp_path / "full",
        [full_row(f"q{i}", f1, 100.0 + i) for i, f1 in enumerate([0.0, 0.0, 1.0, 1.0])]
        + [full_row("q9", 1.0, 100.0)],
    )
    after = [
        draft_row("q3", 0.0, 50.0, 5.0, True),
        draft_row("q2", 1.0, 8.0, 8.0, False),
        draft_row("q1", 0.5, 6.0, 6.0, False),
        draft_row("q0", 1.0, 4.0, 4.0, False),
    ]
    draft = write_run(tmp_path / "draft", after)
    result = df.compare_slice(full, draft, 4, resamples=500, seed=0)
    assert result["n"] == 4
    assert (result["wins"], result["losses"], result["ties"]) == (2, 1, 1)
    assert result["f1_delta"] == 12.5
    assert (result["f1_before"], result["f1_after"]) == (50.0, 62.5)
    assert result["ci_low"] <= 12.5 <= result["ci_high"]
    # seconds of the paired rows only (q9's 100 s is not one of them)
    assert result["median_s_before"] == 101.5
    assert result["median_s_after"] == 7.0
    assert result["escalated"] == 0.25
    assert result["first_answer_median_s"] == 5.5
    assert "missing" not in result


def test_a_worse_draft_gives_a_negative_delta_and_missed_targets(tmp_path: Path) -> None:
    full = write_run(tmp_path / "full", [full_row(f"q{i}", 1.0, 10.0) for i in range(6)])
    draft = write_run(
        tmp_path / "draft", [draft_row(f"q{i}", 0.0, 20.0, 3.0, True) for i in range(6)]
    )
    result = df.compare_slice(full, draft, 6, resamples=500, seed=0)
    assert result["f1_delta"] == -100.0 and (result["wins"], result["losses"]) == (0, 6)
    verdicts = {t.what: t.met for t in df.slice_targets("hotpotqa_b", result)}
    assert verdicts == {
        "ΔF1 ≥ 0": False,
        "CI lower end ≥ -2": False,
        "median s at least 40% lower": False,
    }
    other = {t.what: t.met for t in df.slice_targets("musique", result)}
    assert other == {"CI lower end ≥ -2": False, "median s not higher": False}


def test_the_hotpotqa_speed_target_needs_forty_percent() -> None:
    def verdict(after: float) -> bool | None:
        s = {"f1_delta": 0.0, "ci_low": -1.0, "median_s_before": 100.0, "median_s_after": after}
        (speed,) = [t for t in df.slice_targets("hotpotqa_b", s) if "median s" in t.what]
        return speed.met

    assert verdict(60.0) is True
    assert verdict(61.0) is False
    wiki = {"ci_low": -1.9, "median_s_before": 100.0, "median_s_after": 100.0}
    assert all(t.met for t in df.slice_targets("2wiki", wiki))


def test_missing_and_partial_runs_are_reported_as_they_are(tmp_path: Path) -> None:
    v4, v5 = tmp_path / "v4", tmp_path / "v5"
    for key, n in (("hotpotqa_b", 100), ("2wiki", 163), ("musique", 87)):
        write_run(v4 / key / "full", [full_row(f"{key}{i}", 0.5, 100.0) for i in range(n)])
    # HotpotQA finished, 2Wiki 10 of 163, MuSiQue not started
    write_run(
        v5 / "hotpotqa_b" / "draft-first",
        [draft_row(f"hotpotqa_b{i}", 0.5, 20.0, 5.0, i < 25) for i in range(100)],
    )
    write_run(
        v5 / "2wiki" / "draft-first",
        [draft_row(f"2wiki{i}", 1.0, 30.0, 30.0, False) for i in range(10)],
    )
    first = write_run(
        v5 / "first-answer", [draft_row(f"a{i}", 1.0, 9.0, float(i), False) for i in range(1, 31)]
    )
    # the first router's run, HotpotQA only: a quarter of its answers scored 0 where now 0.5
    write_run(
        v5 / "hotpotqa_b" / "draft-first-old",
        [draft_row(f"hotpotqa_b{i}", 0.0 if i < 25 else 0.5, 8.0, 5.0, False) for i in range(100)],
    )
    out = tmp_path / "results" / "draft-first.json"
    code = df.main(
        [
            "--before",
            str(v4 / "{slice}" / "full"),
            "--after",
            str(v5 / "{slice}" / "draft-first"),
            "--earlier",
            str(v5 / "{slice}" / "draft-first-old"),
            "--first-answer",
            str(first),
            "--out",
            str(out),
            "--resamples",
            "200",
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    hotpot, wiki, musique = data["hotpotqa_b"], data["2wiki"], data["musique"]
    assert hotpot["n"] == 100 and "missing" not in hotpot
    assert hotpot["f1_delta"] == 0.0 and hotpot["escalated"] == 0.25
    assert [t["met"] for t in hotpot["targets"]] == [True, True, True]
    assert wiki["n"] == 10 and wiki["missing"] == "draft-first has 10 of 163 questions"
    assert wiki["f1_delta"] == 50.0
    assert musique["n"] == 0 and musique["f1_delta"] is None
    assert musique["missing"].startswith("no draft-first rows at")
    assert [t["met"] for t in musique["targets"]] == [None, None]
    # first answers 1..30 s: median 15.5, p90 27.1
    assert (data["first_answer_median_s"], data["first_answer_p90_s"]) == (15.5, 27.1)
    assert [t["met"] for t in data["first_answer"]["targets"]] == [False, False]
    text = out.with_suffix(".md").read_text()
    assert "| hotpotqa_b | 100/100 | 50.0 | 50.0 | +0.0 [" in text
    assert "| musique | 0/87 | n/a |" in text
    assert "| musique | CI lower end ≥ -2 | n/a | no data |" in text
    assert "| HotpotQA `_a` 1-30 | first answer median ≤ 10 s | 15.5 s | missed |" in text
    assert "- 2wiki: draft-first has 10 of 163 questions" in text
    earlier = data["earlier_router"]
    assert earlier["hotpotqa_b"]["f1_delta"] == 12.5 and earlier["hotpotqa_b"]["wins"] == 25
    assert earlier["2wiki"]["n"] == 0 and earlier["2wiki"]["missing"].startswith(
        "no first router rows"
    )
    assert "| hotpotqa_b | 100/100 | 37.5 | 50.0 | +12.5 [" in text
    assert "| 2wiki | 0 | n/a |" in text


def test_a_folder_pattern_without_the_slice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        df.main(["--after", str(tmp_path / "draft-first"), "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        df.main(["--earlier", str(tmp_path / "old"), "--out", str(tmp_path / "x.json")])


def test_the_chain_end_replay_changes_only_chains_held_unsupported() -> None:
    subs = [
        {"id": "q1", "query": "father of Henrik", "needs": [], "answered": True, "finding": "Ole"},
        {"id": "q2", "query": "birthplace of Ole", "needs": ["q1"], "answered": True},
    ]
    subs[1]["finding"] = "Flora"
    row = {
        "id": "a",
        "question": "What is the place of birth of Henrik's father?",
        "answers": ["Flora"],
        "prediction": "Bergen",
        "f1": 0.0,
        "planner": {
            "sub_queries": subs,
            "final_choice": {"source": "draft", "reason": "chain answer unsupported: the draft"},
        },
    }
    replayed = df.chain_end_replayed(row)
    assert (replayed["prediction"], replayed["f1"], replayed["replayed"]) == ("Flora", 1.0, True)
    open_plan = {**row, "planner": {**row["planner"], "final_choice": {"reason": "plan open"}}}
    assert df.chain_end_replayed(open_plan) == open_plan
    unchained = {**row, "planner": {**row["planner"], "sub_queries": subs[:1]}}
    assert df.chain_end_replayed(unchained)["prediction"] == "Bergen"


def test_the_findings_ab_pools_slices_without_mixing_their_ids(tmp_path: Path) -> None:
    # both tuning slices number their questions q0, q1: pooled, "a/q0" and "b/q0" stay apart
    # (pooled by bare id, b's rows would overwrite a's and the pool would hold 2, not 4).
    # batched minus reader: slice a +1 and 0, slice b 0 and -0.5: pooled +0.5 - 0.5 = +12.5
    pattern = str(tmp_path / "{slice}" / "{arm}")
    reader = {"a": [0.0, 1.0], "b": [1.0, 1.0]}
    batched = {"a": [1.0, 1.0], "b": [1.0, 0.5]}
    for arm, scores in (("reader", reader), ("batched", batched)):
        for key, f1s in scores.items():
            rows = [draft_row(f"q{i}", f1, 30.0, 5.0, True) for i, f1 in enumerate(f1s)]
            write_run(Path(pattern.format(slice=key, arm=arm)), rows)
    arms = (pattern.replace("{arm}", "reader"), pattern.replace("{arm}", "batched"))
    ab = df.findings_ab(arms, {"a": 2, "b": 2}, resamples=200, seed=0)
    assert ab["a"]["f1_delta"] == 50.0 and (ab["a"]["wins"], ab["a"]["losses"]) == (1, 0)
    assert ab["b"]["f1_delta"] == -25.0 and (ab["b"]["wins"], ab["b"]["losses"]) == (0, 1)
    pooled = ab["pooled"]
    assert (pooled["n"], pooled["questions"]) == (4, 4)
    assert pooled["f1_delta"] == 12.5 and (pooled["wins"], pooled["losses"]) == (1, 1)
    text = "\n".join(df.findings_ab_lines(ab))
    assert "| pooled | 4/4 | 75.0 | 87.5 | +12.5 [" in text
