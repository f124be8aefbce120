"""QuALITY files: the committed layout, the release's one-set-per-line layout, the old flat
example, and the errors that must stop a run before any model starts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evals.datasets import DatasetError, detect_format, load_questions, resolve_format
from evals.quality.corpora import leaf_passages
from evals.quality.data import load_articles, select_questions
from tests.conftest import SHARED_DATA
from tests.locations import REPO
from tests.quality_chat import TINY

SUBSET = REPO / "evals" / "data" / "quality"
EXAMPLE = SHARED_DATA / "longdoc" / "quality_example_2articles.jsonl"


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def release_row(article_id: str, set_id: str, article: str, questions: list[dict]) -> dict:
    return {"article_id": article_id, "set_unique_id": set_id, "title": "T", "article": article,
            "questions": questions}  # fmt: skip


def question(qid: str, gold: int = 1, hard: int = 0, text: str = "Who?") -> dict[str, Any]:
    return {"question_unique_id": qid, "question": text, "options": ["a", "b", "c", "d"],
            "gold_label": gold, "difficult": hard}  # fmt: skip


def test_the_tiny_article_loads_with_its_options_gold_and_hard_flags() -> None:
    assert detect_format(TINY) == "quality" and resolve_format(TINY) == "quality"
    [article] = load_articles(TINY)
    assert article.id == "tiny-0001" and article.title == "The Keeper of Tarn Island"
    assert [q.gold for q in article.questions] == [2, 3, 1, 3]
    assert [q.hard for q in article.questions] == [False, False, True, True]
    assert [q.kind for q in article.questions] == ["easy", "easy", "hard", "hard"]
    first = article.questions[0]
    assert len(first.options) == 4 and first.gold_letter == "B"
    assert first.article_id == "tiny-0001"
    assert "ninety-one steps" in article.text


def test_leaves_are_the_trees_leaves_with_the_trees_ids() -> None:
    [article] = load_articles(TINY)
    leaves = leaf_passages(article)
    assert [p.id for p in leaves] == [f"tiny-0001#{n}" for n in range(len(leaves))]
    assert all(p.metadata["layer"] == 0 and p.metadata["tokens"] <= 100 for p in leaves)
    assert " ".join(" ".join(p.text for p in leaves).split()) == " ".join(article.text.split())


def test_the_release_layout_merges_an_articles_sets(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dev.jsonl",
        [
            release_row("20", "20_A", "Story twenty.", [question("20_A_1", 2)]),
            release_row("7", "7_A", "Story seven.", [question("7_A_1", hard=1)]),
            release_row("20", "20_B", "Story twenty.", [question("20_B_1", 4, 1)]),
        ],
    )
    articles = load_articles(path)
    assert [a.id for a in articles] == ["20", "7"]  # order of first appearance
    assert [q.id for q in articles[0].questions] == ["20_A_1", "20_B_1"]
    assert [q.id for q in select_questions(articles)] == ["20_A_1", "20_B_1", "7_A_1"]
    assert [q.id for q in select_questions(articles, offset=1, limit=1)] == ["20_B_1"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([release_row("1", "s", "x", [question("q", gold=5)])], r"dev\.jsonl:1: .*gold_label"),
        ([release_row("1", "s", "x", [{**question("q"), "options": ["only"]}])], "2 to 10"),
        ([release_row("1", "s", "x", [question("q", hard=2)])], "'difficult' must be 0 or 1"),
        ([release_row("", "s", "x", [question("q")])], "missing 'article_id'"),
        (
            [release_row("1", "s", "x", [question("q")]), release_row("1", "t", "y", [])],
            r"dev\.jsonl:2: article '1' differs",
        ),
        (
            [
                release_row("1", "s", "x", [question("q")]),
                release_row("2", "t", "y", [question("q", text="Other?")]),
            ],
            "question id 'q' repeats line 1",
        ),
        ([{"article_id": "1", "text": "no questions"}], "not a QuALITY row"),
    ],
)
def test_bad_rows_name_the_file_and_line(tmp_path: Path, rows: list[dict], message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_articles(write(tmp_path / "dev.jsonl", rows))


def test_the_hotpot_loader_sends_quality_files_to_their_runner() -> None:
    with pytest.raises(DatasetError, match=r"runs through evals\.quality\.runner"):
        load_questions(TINY)


@pytest.mark.skipif(not EXAMPLE.is_file(), reason="../shared/data is not beside the clone")
def test_the_flat_example_loads_once_without_hard_flags() -> None:
    [article] = load_articles(EXAMPLE)  # two identical rows: one article, five questions
    assert article.id == "52845" and len(article.questions) == 5
    assert [q.gold for q in article.questions] == [2, 3, 4, 1, 4]
    assert {q.hard for q in article.questions} == {None}
    assert article.text.startswith("THE GIRL IN HIS MIND") and "<" not in article.text[:200]


def test_the_committed_subset_matches_its_provenance() -> None:
    data = SUBSET / "quality_dev_subset.jsonl"
    if not data.is_file():
        pytest.skip("the QuALITY subset is not committed in this checkout")
    provenance = (SUBSET / "PROVENANCE.md").read_text(encoding="utf-8")
    assert hashlib.sha256(data.read_bytes()).hexdigest() in provenance
    articles = load_articles(data)
    assert [a.id for a in articles] == [
        *("52845", "30029", "62139", "63523", "63401"),
        *("62476", "63041", "30035", "61285", "62261"),
    ]
    questions = [q for a in articles for q in a.questions]
    assert len(questions) == 181 and sum(bool(q.hard) for q in questions) == 109
    assert all(q.hard is not None and len(q.options) == 4 for q in questions)
    assert all(len({q.id.rsplit("_", 1)[0] for q in a.questions}) == 2 for a in articles)
