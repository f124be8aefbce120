"""MuSiQue-Ans files: detection, the open corpus deduplicated by title and text, and (below)
their questions, gold hops and the ids both evaluation settings give a paragraph."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evals.corpora import question_passages
from evals.datasets import DatasetError, EvalQuestion, GoldHop, load_questions
from evals.datasets import detect_format as dataset_format
from searchers.corpus import (
    CorpusError,
    detect_format,
    paragraph_id,
    paragraph_text_id,
    read_passages,
)
from tests.conftest import SHARED_DATA

MUSIQUE = SHARED_DATA / "musique" / "musique_ans_dev_174.jsonl"
needs_shared = pytest.mark.skipif(not MUSIQUE.is_file(), reason="../shared/data not present")


def paragraph(idx: int, title: str, text: str, supporting: bool = False) -> dict[str, Any]:
    return {"idx": idx, "title": title, "paragraph_text": text, "is_supporting": supporting}


def hop(hid: int, question: str, answer: str, idx: int) -> dict[str, Any]:
    return {"id": hid, "question": question, "answer": answer, "paragraph_support_idx": idx}


def musique_row(**overrides: Any) -> dict[str, Any]:
    """A 2-hop row whose distractor "Paris" has another text than the other row's "Paris"."""
    row: dict[str, Any] = {
        "id": "2hop__100_200",
        "question": "Which river flows through the capital of France?",
        "answer": "Seine",
        "answer_aliases": ["River Seine", "Seine", "the Seine"],
        "answerable": True,
        "paragraphs": [
            paragraph(0, "Paris", "Paris is the capital of France.", True),
            paragraph(1, "Seine", "The Seine  flows through\nParis.", True),
            paragraph(2, "Danube", "The Danube flows through Vienna."),
        ],
        "question_decomposition": [
            hop(100, "What is the capital of France?", "Paris", 0),
            hop(200, "Which river flows through #1 ?", "Seine", 1),
        ],
    }
    row.update(overrides)
    return row


def other_row() -> dict[str, Any]:
    """A 3-hop row sharing a paragraph (Seine, same text) and a title (Paris, other text)."""
    return musique_row(
        id="3hop1__300_400_500",
        question="Who founded the city in Texas named like the French capital?",
        answer="George Wright",
        answer_aliases=[],
        paragraphs=[
            paragraph(0, "Paris", "Paris is a city in Lamar County, Texas.", True),
            paragraph(1, "Seine", "The Seine flows through Paris."),
            paragraph(2, "Lamar County", "Lamar County lies in Texas.", True),
            paragraph(3, "George Wright", "George Wright founded Paris, Texas.", True),
        ],
        question_decomposition=[
            hop(300, "Paris >> located in the administrative territorial entity", "Texas", 0),
            hop(400, "#1 >> county", "Lamar County", 2),
            hop(500, "who founded #1", "George Wright", 3),
        ],
    )


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the open corpus


def test_detected_and_deduplicated_by_title_and_text(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "musique.jsonl", [musique_row(), other_row()])
    assert detect_format(path) == "musique"
    passages = list(read_passages(path))
    pairs = [(p.title, p.text) for p in passages]
    assert pairs == [
        ("Paris", "Paris is the capital of France."),
        ("Seine", "The Seine flows through Paris."),  # whitespace normalised: one Seine
        ("Danube", "The Danube flows through Vienna."),
        ("Paris", "Paris is a city in Lamar County, Texas."),  # same title, kept
        ("Lamar County", "Lamar County lies in Texas."),
        ("George Wright", "George Wright founded Paris, Texas."),
    ]
    ids = [p.id for p in passages]
    assert len(set(ids)) == len(ids)
    assert ids == [paragraph_text_id(t, x) for t, x in pairs]
    assert all(p.metadata == {"source": "musique.jsonl", "format": "musique"} for p in passages)


def test_paragraph_text_ids_are_readable_stable_and_apart_from_title_ids() -> None:
    first = paragraph_text_id("Paris", "Paris is the capital of France.")
    assert first.startswith("paris-") and first != paragraph_id("Paris")
    assert first == paragraph_text_id("Paris", "Paris is the capital of France.")
    assert first != paragraph_text_id("Paris", "Paris is a city in Texas.")
    # title and text are hashed apart: moving words between them changes the id
    assert paragraph_text_id("Ab", "c") != paragraph_text_id("A", "bc")


@pytest.mark.parametrize(
    ("paragraphs", "message"),
    [
        ("none", r"m\.jsonl:1: .*'paragraphs' list"),
        (["x"], r"m\.jsonl:1: MuSiQue paragraphs must be objects"),
        ([{"idx": "0", "title": "T", "paragraph_text": "t"}], r"integer 'idx'"),
        ([{"idx": 0, "title": None, "paragraph_text": "t"}], r"string 'title'"),
    ],
)
def test_bad_paragraphs_name_the_line(tmp_path: Path, paragraphs: Any, message: str) -> None:
    path = write_rows(tmp_path / "m.jsonl", [musique_row(paragraphs=paragraphs)])
    with pytest.raises(CorpusError, match=message):
        list(read_passages(path, "musique"))


@needs_shared
def test_real_musique_rows(tmp_path: Path) -> None:
    sample = tmp_path / "musique_head.jsonl"
    with MUSIQUE.open(encoding="utf-8") as fh:
        sample.write_text("".join(itertools.islice(fh, 20)), encoding="utf-8")
    assert detect_format(sample) == "musique"
    passages = list(read_passages(sample))
    pairs = {(p.title, p.text) for p in passages}
    assert len(pairs) == len(passages) == len({p.id for p in passages})
    assert len({p.title for p in passages}) < len(passages)  # titles collide in 20 rows already


# --------------------------------------------------------------------------- questions


def test_questions_aliases_types_and_supporting_paragraphs(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "musique.jsonl", [musique_row(), other_row()])
    assert dataset_format(path) == "musique"
    first, second = load_questions(path)
    assert first.answers == ["Seine", "River Seine", "the Seine"]  # canonical first, once
    assert second.answers == ["George Wright"]
    assert (first.type, second.type) == ("2hop", "3hop")  # 3hop1 -> 3hop
    assert first.supporting_titles == ["Paris", "Seine"]
    assert first.supporting_ids == [
        paragraph_text_id("Paris", "Paris is the capital of France."),
        paragraph_text_id("Seine", "The Seine flows through Paris."),
    ]
    assert second.paragraphs[0] == ("Paris", "Paris is a city in Lamar County, Texas.")
    assert not first.titles_identify_paragraphs


def test_gold_hops_follow_the_decomposition(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "musique.jsonl", [musique_row(), other_row()])
    first, second = load_questions(path)
    assert first.gold_hops == [
        GoldHop(
            question="What is the capital of France?",
            answer="Paris",
            passage_id=paragraph_text_id("Paris", "Paris is the capital of France."),
            title="Paris",
        ),
        GoldHop(
            question="Which river flows through #1 ?",
            answer="Seine",
            passage_id=paragraph_text_id("Seine", "The Seine flows through Paris."),
            title="Seine",
        ),
    ]
    assert [h.answer for h in second.gold_hops] == ["Texas", "Lamar County", "George Wright"]
    # the two "Paris" hops point at two different paragraphs
    assert second.gold_hops[0].passage_id != first.gold_hops[0].passage_id
    assert first.gold_hops_skipped == second.gold_hops_skipped == 0


def test_a_hop_without_its_paragraph_is_skipped_and_counted(tmp_path: Path) -> None:
    row = musique_row(question_decomposition=[hop(1, "q1", "a1", 0), hop(2, "q2", "a2", 9)])
    [question] = load_questions(write_rows(tmp_path / "m.jsonl", [row]))
    assert [h.answer for h in question.gold_hops] == ["a1"]
    assert question.gold_hops_skipped == 1


def test_the_open_index_and_the_distractor_setting_agree_on_ids(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "musique.jsonl", [musique_row(), other_row()])
    indexed = {(p.title, p.text): p.id for p in read_passages(path)}
    for question in load_questions(path):
        own = question_passages(question)
        assert [(p.title, p.text) for p in own] == question.paragraphs
        assert [p.id for p in own] == [indexed[(p.title, p.text)] for p in own]
        ids = {p.id for p in own}
        assert {h.passage_id for h in question.gold_hops} <= ids
        assert set(question.supporting_ids) <= ids


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"answer": 3}, r"m\.jsonl:1: 'answer' must be a string"),
        ({"answer_aliases": "x"}, r"'answer_aliases' must be a list of strings"),
        ({"question_decomposition": {}}, r"'question_decomposition' must be a list"),
        ({"question_decomposition": [{"question": "q"}]}, r"need string 'question' and 'answer'"),
        ({"paragraphs": [paragraph(0, "A", "a"), paragraph(0, "B", "b")]}, r"idx 0 repeats"),
        ({"paragraphs": [{"idx": 0}]}, r"m\.jsonl:1: .*string 'title'"),
    ],
)
def test_bad_rows_name_the_line(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    path = write_rows(tmp_path / "m.jsonl", [musique_row(**overrides)])
    with pytest.raises(DatasetError, match=message):
        load_questions(path)


def test_paragraph_ids_must_match_the_paragraphs() -> None:
    with pytest.raises(ValueError, match="1 paragraph ids for 2 paragraphs"):
        EvalQuestion("q", "?", ["a"], [], paragraphs=[("A", "a"), ("B", "b")], paragraph_ids=["x"])


@needs_shared
def test_the_shared_musique_file() -> None:
    questions = load_questions(MUSIQUE)
    assert len(questions) == 174
    assert Counter(q.type for q in questions) == {"2hop": 119, "3hop": 32, "4hop": 23}
    assert all(len(q.gold_hops) == int(q.type[0]) for q in questions)
    assert sum(q.gold_hops_skipped for q in questions) == 0
    indexed = {p.id for p in read_passages(MUSIQUE)}
    assert len(indexed) == 2704  # 174 x 20 paragraphs, 2334 titles
    for q in questions:
        assert set(q.passage_ids()) <= indexed
        assert {h.passage_id for h in q.gold_hops} <= set(q.supporting_ids)
