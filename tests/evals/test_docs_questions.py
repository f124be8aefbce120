"""The documentation question set (issue 65 item 4): questions over the Apache HTTP Server 2.4
manual that each need facts from two or more of its pages.

No model and no index: the file loads as ``hoptree eval run`` loads it, has at least 40 questions,
names two or more pages for each, every gold fact carries a quote, and a "which X or Y" question is
never answered "yes" or "no". Whether the quotes stand in the installed manual and the titles are
the index's is ``evals/data/docs/check_questions.py``'s job (it needs the apache2-doc package);
its matching rules are checked here on a made-up page.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from types import ModuleType

from evals.datasets import detect_format, load_questions
from tests.benchmark_module import load_script
from tests.locations import REPO

DOCS = REPO / "evals" / "data" / "docs"
QUESTIONS = DOCS / "apache_httpd_questions.jsonl"
SHAPES = {"bridge", "comparison", "yesno", "set"}
YES_NO = {"yes", "no"}
WHICH_OR = re.compile(r"\bwhich\b.*\bor\b", re.IGNORECASE | re.DOTALL)


def _rows() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text("utf-8").splitlines() if line]


@functools.cache
def _checker() -> ModuleType:
    return load_script(DOCS / "check_questions.py", "docs_check_questions")


def test_loads_as_flashrag_with_forty_questions_or_more():
    assert detect_format(QUESTIONS) == "flashrag"
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 40
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        assert q.answers and all(a.strip() for a in q.answers), q.id
        assert q.supporting_titles, q.id  # gold recall compares these with retrieved titles
        assert q.type in SHAPES, q.id


def test_every_question_needs_two_pages_or_more():
    for row in _rows():
        metadata = row["metadata"]
        evidence = metadata["evidence"]
        pages = metadata["pages"]
        assert len(set(pages)) >= 2, row["id"]
        assert pages == list(dict.fromkeys(e["page"] for e in evidence)), row["id"]
        for item in evidence:
            # relative to the manual's root, never a path of the machine that wrote it
            assert not item["page"].startswith("/") and item["page"].endswith(".html"), row["id"]
            assert item["fact"].strip() and item["quote"].strip(), row["id"]
        # the context the oracle reads: one entry per supporting title, the quotes as sentences
        context = metadata["context"]
        assert context["title"] == metadata["supporting_facts"]["title"], row["id"]
        quotes = [s for sentences in context["sentences"] for s in sentences]
        assert sorted(quotes) == sorted(e["quote"] for e in evidence), row["id"]


def test_which_questions_are_answered_by_an_entity_never_yes_or_no():
    rows = _rows()
    which_or = [r for r in rows if WHICH_OR.search(r["question"])]
    assert len(which_or) >= 10
    for row in which_or:
        gold = {a.strip().casefold() for a in row["golden_answers"]}
        assert not gold & YES_NO, row["id"]
    for row in rows:
        gold = {a.strip().casefold() for a in row["golden_answers"]}
        is_yes_no = row["metadata"]["type"] == "yesno"
        assert (gold <= YES_NO) == is_yes_no and (len(gold) == 1 or not is_yes_no), row["id"]


def test_shapes_are_mixed():
    counts = Counter(row["metadata"]["type"] for row in _rows())
    assert set(counts) == SHAPES
    assert counts["bridge"] >= 10 and counts["comparison"] >= 10
    assert 0 < counts["yesno"] <= len(_rows()) // 4


def test_checker_finds_quotes_in_one_passage_beside_their_anchor():
    check = _checker()
    pages = {
        "mod/a.html": [
            ("A page", check.norm("| Syntax: | `FooDirective on\\|off` |\n|---|---|\n")),
            ("A page", check.norm("Compatibility: Available in 2.4.9 and later")),
            ("A page > Usage", check.norm("Syntax: BarDirective\nAvailable in 2.4.7 and later")),
        ],
        "b.html": [("B page", check.norm("- `mod_a` - New module in 2.0."))],
    }
    owners = {"A page": {"mod/a.html"}, "A page > Usage": {"mod/a.html"}, "B page": {"b.html"}}

    def row(*evidence: dict) -> dict:
        return {"id": "q", "metadata": {"evidence": list(evidence)}}

    problems, warnings, titles, quotes = check.check_row(
        row(
            {
                "page": "mod/a.html",
                "quote": "Available in 2.4.7 and later",
                "anchor": "Syntax: Bar",
            },
            {"page": "b.html", "quote": "mod_a New module in 2.0"},
        ),
        pages,
        owners,
    )
    assert (problems, warnings) == ([], [])
    assert titles == ["A page > Usage", "B page"]
    assert quotes == {
        "A page > Usage": ["Available in 2.4.7 and later"],
        "B page": ["mod_a New module in 2.0"],
    }
    # the anchor must be in the quote's own passage, and one page is not enough
    problems, _warnings, _titles, _quotes = check.check_row(
        row({"page": "mod/a.html", "quote": "Available in 2.4.9 and later", "anchor": "FooDir"}),
        pages,
        owners,
    )
    assert any("no passage" in p for p in problems)
    assert any("fewer than two pages" in p for p in problems)
