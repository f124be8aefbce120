"""Reading documents for the tree: text/markdown, QuALITY jsonl, L-CiteEval NarrativeQA json,
question files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchers.corpus import read_qa_paragraphs
from tests.conftest import SHARED_DATA
from tree.documents import DocumentError, clean_text, html_to_text, read_documents

LONGDOC = SHARED_DATA / "longdoc"

GUTENBERG = """\ufeffThe Project Gutenberg EBook of A Tale, by Someone

Title: A Tale of Two Tests

*** START OF THIS PROJECT GUTENBERG EBOOK A TALE ***

It was the best of tests.
It was the worst of tests.

Chapter two began.

*** END OF THIS PROJECT GUTENBERG EBOOK A TALE ***

This and all associated files of various formats will be found in the license...
"""


def test_html_paragraphs() -> None:
    text = html_to_text(
        "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1>"
        "<p>First\nline wrapped.</p><p>Second &amp; last.<br/>Broken line.</p></body></html>"
    )
    assert "p{}" not in text and "T\n" not in text
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    assert paragraphs == ["Title", "First\nline wrapped.", "Second & last.", "Broken line."]


def test_gutenberg_header_and_license_are_stripped() -> None:
    text = clean_text(GUTENBERG)
    assert text.startswith("It was the best of tests.")
    assert text.endswith("Chapter two began.")
    assert "license" not in text and "\ufeff" not in text


def test_quality_jsonl_is_one_document_per_article(tmp_path: Path) -> None:
    row = {
        "article_id": "52845",
        "title": "The Girl",
        "article": ["<html>\n", "<p>\n", "  She danced.\n", "</p>\n", "<p>He watched.</p>\n"],
        "question1": "Why?",
    }
    path = tmp_path / "quality.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "question1": "Who?"}) + "\n")
    (doc,) = read_documents([path])
    assert (doc.id, doc.title) == ("52845", "The Girl")
    assert doc.text == "She danced.\n\nHe watched."


def test_narrativeqa_json_items(tmp_path: Path) -> None:
    items = [
        {"id": "b1", "question": "q", "context": GUTENBERG},
        {"id": "b2", "question": "q", "context": "ï»¿Plain book text. The end."},
    ]
    path = tmp_path / "nqa.json"
    path.write_text(json.dumps(items))
    first, second = read_documents([path])
    assert (first.id, first.title) == ("b1", "A Tale of Two Tests")
    assert second.text == "Plain book text. The end." and second.title == "b2"
    (only,) = read_documents([path], only=["b2"])
    assert only.id == "b2"
    with pytest.raises(DocumentError, match="no document with id 'zz'"):
        read_documents([path], only=["zz"])


def test_text_and_markdown_files(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Heading One\n\nSome text here.\n")
    (tmp_path / "plain.txt").write_text("Just words.\n")
    (tmp_path / "skip.bin").write_bytes(b"\x00\x01")
    docs = read_documents([tmp_path])
    assert [(d.id, d.title) for d in docs] == [("notes", "Heading One"), ("plain", "plain")]


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="no such file"):
        read_documents([tmp_path / "missing.txt"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no article"}\n')
    with pytest.raises(DocumentError, match="no 'article'"):
        read_documents([bad])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "same.txt").write_text("One text.")
    (tmp_path / "b" / "same.txt").write_text("Another text.")
    with pytest.raises(DocumentError, match="appears twice"):
        read_documents([tmp_path / "a", tmp_path / "b"])


@pytest.mark.skipif(not LONGDOC.is_dir(), reason="../shared/data/longdoc not present")
def test_the_shared_longdoc_files() -> None:
    docs = read_documents(
        [LONGDOC / "quality_example_2articles.jsonl", LONGDOC / "lciteeval_narrativeqa_6.json"]
    )
    assert len(docs) == 7  # one QuALITY article (on two lines) + six NarrativeQA items
    assert docs[0].title == "The Girl in His Mind"
    assert "<p>" not in docs[0].text and "chocoletto girl" in docs[0].text
    flopsy = next(d for d in docs if d.title == "The Tale of the Flopsy Bunnies")
    assert "Thomasina Tittlemouse" in flopsy.text
    assert "PROJECT GUTENBERG" not in flopsy.text.upper()[-3000:]


@pytest.mark.parametrize(
    ("relative", "fmt"),
    [
        ("hotpotqa/dev_hard_300_a.jsonl", "hotpotqa"),
        ("2wikimultihopqa/dev_first100_flashrag.jsonl", "flashrag"),
        ("musique/musique_ans_dev_174.jsonl", "musique"),
    ],
)
def test_a_question_file_gives_the_open_index_paragraphs(relative: str, fmt: str) -> None:
    """`full+tree` evaluates a tree over the eval file: its leaves must carry the index's ids
    and titles, or gold-paragraph recall would never count them."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{relative} is not in ../shared/data (a clone without the shared data)")
    documents = read_documents([path])
    passages = list(read_qa_paragraphs(path, fmt))
    assert len(documents) == len(passages) > 100
    assert [(d.id, d.title, d.text) for d in documents] == [
        (p.id, p.title, p.text) for p in passages
    ]


def test_a_broken_question_file_names_the_line(tmp_path: Path) -> None:
    good = {"id": "q1", "question": "?", "answer": "a", "context": [["T", ["Some text."]]]}
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": "q2", "question": "?"}) + "\n")
    with pytest.raises(DocumentError, match=r"questions\.jsonl:2: a HotpotQA row needs 'context'"):
        read_documents([path])
