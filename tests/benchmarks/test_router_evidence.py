"""``benchmarks/router_evidence.py`` on hand-made rows and passages: the draft's evidence read
with hoptree's rules, a rule that only vetoes today's plans, the fit on one half, and the
refusal to read rows under a ``fresh`` folder. No model, no index, no shared data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_module import load_benchmark

re_ = load_benchmark("router_evidence")

QUESTION = "Where was the director of film Ronnie Rocket born?"
SHOWN = [
    re_.Shown(
        1, "p1", "Ronnie Rocket", "Ronnie Rocket is an unfinished film by David Lynch.", 0.06
    ),
    re_.Shown(2, "p2", "David Lynch", "David Lynch was born in Missoula, Montana.", 0.05),
    re_.Shown(3, "p3", "Missoula", "Missoula is a city in Montana.", 0.04),
]


def _row(qid: str, draft: str, final: str, *, escalate: bool = True, **more: Any) -> dict:
    return {
        "id": qid,
        "question": QUESTION,
        "answers": ["Missoula, Montana"],
        "prediction": final,
        "f1": 1.0 if final == "Missoula, Montana" else 0.0,
        "seconds": 30.0,
        "planner": {
            "draft": {
                "short_answer": draft,
                "seconds": 5.0,
                "signals": {"shape": "chain", "supported": True, "top_score": 0.06},
                "decision": {"escalate": escalate},
                "citation_ids": ["p1"],
                **more,
            }
        },
    }


def test_the_draft_span_in_the_subjects_passage_and_in_a_bridge() -> None:
    # the hop-1 shortcut: the director's name, in the film's own passage
    ev = re_.evidence(QUESTION, "David Lynch", ["p1"], SHOWN)
    assert (ev.names, ev.named, ev.all_named) == (1, 1, True)
    assert ev.span_rank == 1 and ev.span_passages == 2  # p2 is titled by it
    assert ev.named_span and ev.titled_span and ev.cited_span
    # the answer sits only in a passage that does not name the film: no support by the rule
    ev = re_.evidence(QUESTION, "Missoula", ["p2"], SHOWN)
    assert ev.span_rank == 2 and ev.span_passages == 2  # "Missoula" holds it too
    assert not ev.named_span and not ev.titled_span and ev.cited_span
    # a bridge: a passage about something else that names the film holds the span
    bridge = [*SHOWN, re_.Shown(4, "p4", "Lynch films", "Ronnie Rocket was shot in Missoula.")]
    ev = re_.evidence(QUESTION, "Missoula", [], bridge)
    assert ev.named_span and not ev.titled_span and not ev.cited_span


def test_names_not_shown_yes_no_and_empty_drafts() -> None:
    ev = re_.evidence("Was Ronnie Rocket filmed in Zagreb?", "yes", ["p1"], SHOWN)
    assert (ev.names, ev.named, ev.all_named) == (2, 1, False)
    # a yes/no draft has no span: the cited passage naming a question's name stands for it
    assert ev.named_span and ev.span_rank == 1
    ev = re_.evidence(QUESTION, "unknown", ["p1"], SHOWN)
    assert not ev.named_span and ev.span_rank is None and ev.span_passages == 0
    assert re_.evidence(QUESTION, "x", [], []).terms_shown == 0


def test_question_of_reads_the_recorded_row() -> None:
    q = re_.question_of("s", _row("a", "David Lynch", "Missoula, Montana"), SHOWN)
    assert (q.key, q.draft_f1, q.final_f1, q.planned, q.plan_s) == ("s:a", 0.0, 1.0, True, 25.0)
    assert re_.span_place(q) == "about"
    stood = re_.question_of("s", _row("b", "Missoula, Montana", "x", escalate=False), SHOWN)
    assert not stood.planned and stood.plan_s == 0.0
    assert re_.span_place(stood) == "none"  # only the director's passage holds it
    assert re_.span_place(re_.question_of("s", _row("c", "Zagreb", "x"), SHOWN)) == "no span"


def test_agreement_counts_cited_ids_support_and_top_score() -> None:
    pairs = [
        (_row("a", "David Lynch", "y"), SHOWN),  # cited p1 shown, supported, same top score
        (_row("b", "Zagreb", "y", citation_ids=["p9"]), SHOWN),  # p9 not shown, unsupported
        (_row("c", "David Lynch", "y", citation_ids=[]), SHOWN[1:]),  # other top score
    ]
    got = re_.agreement(pairs)
    assert (got.rows, got.cited_rows, got.cited_in) == (3, 2, 1)
    assert (got.supported_same, got.top_same) == (2, 2)
    assert got.line("s") == "| s | 3 | 1/2 (50%) | 2/3 (67%) | 2/3 (67%) |"


def _q(qid: str, draft: float, final: float, planned: bool = True, **ev: Any) -> Any:
    fields = dict(
        names=1,
        named=1,
        terms=2,
        terms_shown=2,
        span_rank=1,
        span_passages=1,
        named_span=True,
        titled_span=True,
        cited_span=True,
    )
    return re_.Question(
        "s", qid, draft, final, planned, 20.0 if planned else 0.0, "chain", None,
        re_.Evidence(**{**fields, **ev}),
    )  # fmt: skip


def test_a_rule_only_vetoes_todays_plans() -> None:
    qs = [
        _q("a", 0.0, 1.0, titled_span=False),  # fires: planned, the plan's 1.0 stands
        _q("b", 0.0, 1.0),  # vetoed: the draft's 0.0 answers, a loss, 20 s saved
        _q("c", 1.0, 1.0),  # vetoed: a tie, 20 s saved
        _q("d", 0.5, 0.5, planned=False, titled_span=False),  # today kept the draft: no plan
    ]
    out = re_.outcome("r", re_.RULES["span not in the subject's passage"], qs)
    assert (out.n, out.planned, out.today_planned) == (4, 1, 3)
    assert out.f1 == pytest.approx(100 * 2.5 / 4)
    assert (out.diff.wins, out.diff.losses) == (0, 1) and out.diff.mean == pytest.approx(-25.0)
    assert out.saved_s == pytest.approx(10.0) and out.plans_fewer and out.diff.high <= 0
    assert re_.oracle(qs[0]) and not re_.oracle(qs[2])


def test_fit_takes_the_fewest_plans_within_the_bar_else_the_most_planning() -> None:
    family = re_.Family("rank > {t}", (1, 2, 3), lambda q, t: (q.ev.span_rank or 9) > t)
    # rank 2 and 3 drafts are right: planning only beyond rank 1 costs nothing
    same = [_q(str(i), 1.0, 1.0, span_rank=r) for i, r in enumerate([2, 3] * 10)]
    assert re_.fit(family, [*same, _q("x", 0.0, 1.0, span_rank=None)]) == (3, True)
    # every veto loses: none meets the bar, the most planning threshold is returned
    lost = [_q(str(i), 0.0, 1.0, span_rank=1) for i in range(5)]
    assert re_.fit(family, lost) == (1, False)


def test_rows_under_a_fresh_folder_are_refused(tmp_path: Path) -> None:
    run = tmp_path / "fresh" / "2wiki" / "draft-first"
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text(json.dumps(_row("a", "x", "y")) + "\n")
    with pytest.raises(ValueError, match="fresh"):
        re_.read_rows(run)
    ok = tmp_path / "v7" / "draft-first"
    ok.mkdir(parents=True)
    later = _row("a", "z", "y")
    (ok / "details.jsonl").write_text(f"{json.dumps(_row('a', 'x', 'y'))}\n\n{json.dumps(later)}\n")
    assert re_.read_rows(ok) == {"a": later}  # a resumed run's later row wins


def test_gather_and_report_on_hand_made_runs(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(
        re_, "SLICES", {"tune/x": ("v6/x/df", re_.FIT), "x": ("v7/x/df", re_.JUDGE)}
    )
    for run, rows in {
        "v6/x/df": [_row("a", "David Lynch", "Missoula, Montana"), _row("b", "Missoula", "y")],
        "v7/x/df": [_row("c", "David Lynch", "Missoula, Montana")],
    }.items():
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = [
        {"slice": s, "id": i, "hits": [{**vars(h), "shown": h.text} for h in SHOWN]}
        for s, i in [("tune/x", "a"), ("tune/x", "b"), ("x", "c")]
    ]
    path = tmp_path / "passages.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    passages = re_.load_passages(path)
    assert passages[("x", "c")][1] == SHOWN[1]

    questions, agreements = re_.gather(tmp_path, passages)
    assert {s: len(qs) for s, qs in questions.items()} == {"tune/x": 2, "x": 1}
    assert agreements["x"].cited_in == 1
    text = re_.report(questions, agreements, "Nothing to adopt.")
    assert "| tune/x | 2 | 2 | 33.3 | 50.0 |" in text
    assert "| pooled v7 (judged) | today | 1 (100%) | 100.0 | | | |" in text
    assert text.rstrip().endswith("Nothing to adopt.")
