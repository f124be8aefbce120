"""Corpus readers and chunking on small fixtures and on rows of the real shared data files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from searchers.chunking import chunk_paragraphs, count_tokens, markdown_sections
from searchers.corpus import (
    CorpusError,
    detect_format,
    expand_sources,
    paragraph_id,
    read_passages,
)
from searchers.text import split_sentences
from tests.locations import REPO, TESTS

DATA = TESTS / "data"
SHARED = REPO.parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")


def _head(src: Path, dst: Path, n: int) -> Path:
    with src.open(encoding="utf-8") as fh:
        dst.write_text("".join(itertools.islice(fh, n)), encoding="utf-8")
    return dst


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("passages.jsonl", "jsonl"),
        ("hotpot_hf.jsonl", "hotpotqa"),
        ("flashrag_hotpot.jsonl", "flashrag"),
        ("flashrag_2wiki.jsonl", "flashrag"),
        ("guide.md", "text"),
        ("river_notes.txt", "text"),
    ],
)
def test_detect_format(name: str, expected: str) -> None:
    assert detect_format(DATA / name) == expected


def test_detect_format_rejects_questions_without_context(tmp_path: Path) -> None:
    nq = tmp_path / "nq.jsonl"
    nq.write_text('{"question": "who?", "answer": ["me"]}\n')
    with pytest.raises(CorpusError, match="nothing to index"):
        detect_format(nq)


def test_detect_format_unknown_suffix_asks_for_format(tmp_path: Path) -> None:
    odd = tmp_path / "data.bin"
    odd.write_bytes(b"\x00\x01")
    with pytest.raises(CorpusError, match="--format"):
        detect_format(odd)


# --------------------------------------------------------------------------- jsonl


def test_jsonl_reader_keeps_ids_titles_metadata_and_skips_blank_lines() -> None:
    passages = list(read_passages(DATA / "passages.jsonl"))
    assert [p.id for p in passages] == ["seine", "paris", "thames", "danube", "tolkien", "hobbit"]
    assert passages[0].title == "Seine"
    assert passages[0].metadata == {"kind": "river"}
    assert passages[1].metadata == {}


def test_jsonl_reader_names_the_malformed_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n\n{"id": "b", "text": oops}\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3"):
        list(read_passages(bad, "jsonl"))


def test_jsonl_reader_requires_text(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "title": "no body"}\n')
    with pytest.raises(CorpusError, match=r":1: a passage needs a string 'text'"):
        list(read_passages(bad, "jsonl"))


def test_jsonl_reader_derives_stable_ids_and_reads_flashrag_contents(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text(
        '{"title": "A", "text": "alpha"}\n{"id": 7, "contents": "\\"Bee Title\\"\\nbee body"}\n'
    )
    first = list(read_passages(f))
    again = list(read_passages(f))
    assert [p.id for p in first] == [p.id for p in again]
    assert first[0].id.startswith("c-")
    assert (first[1].id, first[1].title, first[1].text) == ("7", "Bee Title", "bee body")


# --------------------------------------------------------------------------- question files


def test_hotpotqa_hf_layout_dedupes_by_title_and_joins_sentences() -> None:
    passages = list(read_passages(DATA / "hotpot_hf.jsonl"))
    titles = [p.title for p in passages]
    assert titles == ["Eiffel Tower", "Seine", "Danube", "Vienna"]  # Danube once, first wins
    seine = passages[1]
    assert seine.text == "The Seine is a river in northern France. It flows through Paris."
    assert seine.id == paragraph_id("Seine")
    assert seine.metadata["source"] == "hotpot_hf.jsonl"


def test_hotpotqa_original_list_layout(tmp_path: Path) -> None:
    f = tmp_path / "orig.jsonl"
    row = {"question": "q", "context": [["T1", ["a.", " b."]], ["T2", ["c."]], ["T1", ["x"]]]}
    f.write_text(json.dumps(row) + "\n")
    passages = list(read_passages(f))
    assert [(p.title, p.text) for p in passages] == [("T1", "a. b."), ("T2", "c.")]


def test_flashrag_layouts_sentences_and_content() -> None:
    hotpot = list(read_passages(DATA / "flashrag_hotpot.jsonl"))
    assert [p.title for p in hotpot] == ["The Hobbit", "Bilbo Baggins", "Frodo Baggins"]
    wiki = list(read_passages(DATA / "flashrag_2wiki.jsonl"))
    assert wiki[0].title == "Polish-Russian War (film)"
    # 2Wiki sentences carry no leading space: joined with one space all the same
    assert wiki[0].text.startswith("Polish-Russian War (Wojna polsko-ruska) is a 2009")
    assert wiki[1].id == paragraph_id("Xawery Żuławski")
    assert wiki[1].id.startswith("xawery-zulawski-")


def test_paragraph_ids_differ_for_titles_with_the_same_slug() -> None:
    assert paragraph_id("Ed Wood") != paragraph_id("Ed wood")
    assert paragraph_id("Ed Wood") == paragraph_id("Ed Wood")


def test_forced_format_mismatch_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r":1: a FlashRAG row needs 'metadata.context'"):
        list(read_passages(DATA / "hotpot_hf.jsonl", "flashrag"))


@needs_shared
@pytest.mark.parametrize(
    ("rel", "fmt", "rows"),
    [
        ("hotpotqa/dev_hard_300_a.jsonl", "hotpotqa", 5),
        ("hotpotqa/dev_first200_minus_holdout_flashrag.jsonl", "flashrag", 5),
        ("2wikimultihopqa/dev_first100_flashrag.jsonl", "flashrag", 5),
    ],
)
def test_real_shared_rows(tmp_path: Path, rel: str, fmt: str, rows: int) -> None:
    sample = _head(SHARED / rel, tmp_path / Path(rel).name, rows)
    assert detect_format(sample) == fmt
    passages = list(read_passages(sample))
    expected_titles: list[str] = []
    for line in sample.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        ctx = row["context"] if fmt == "hotpotqa" else row["metadata"]["context"]
        expected_titles += [t for t in ctx["title"] if t not in expected_titles]
    assert [p.title for p in passages] == expected_titles
    assert len({p.id for p in passages}) == len(passages)
    assert all(p.text and "  " not in p.text for p in passages)
    # every supporting-fact title found in a context maps to a passage id (the evals rely on
    # it); FlashRAG's HotpotQA file lacks many gold paragraphs in its contexts, hence the filter
    ids = {p.id for p in passages}
    for line in sample.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        meta = row if fmt == "hotpotqa" else row["metadata"]
        present = [t for t in meta["supporting_facts"]["title"] if t in meta["context"]["title"]]
        assert {paragraph_id(t) for t in present} <= ids


@needs_shared
def test_real_hotpotqa_file_open_corpus_size() -> None:
    passages = list(read_passages(SHARED / "hotpotqa" / "dev_hard_300_a.jsonl"))
    assert len(passages) == 2966  # 300 questions x 10 paragraphs, deduplicated by title
    assert len({p.title for p in passages}) == len(passages)


# --------------------------------------------------------------------------- text and markdown


def test_markdown_titles_from_headings_and_code_fences_ignored() -> None:
    passages = list(read_passages(DATA / "guide.md"))
    titles = [p.title for p in passages]
    assert titles == [
        "Field Guide",
        "Field Guide > The Seine",
        "Field Guide > The Seine > Bridges",
        "Field Guide > The Danube",
    ]
    assert "not a heading" in passages[1].text  # the fenced comment stayed in its section
    assert passages[2].metadata["headings"] == ["Field Guide", "The Seine", "Bridges"]


def test_plain_text_title_from_file_name_and_ids_stable() -> None:
    first = list(read_passages(DATA / "river_notes.txt"))
    assert {p.title for p in first} == {"river notes"}
    assert [p.id for p in first] == [p.id for p in read_passages(DATA / "river_notes.txt")]


def test_long_text_is_chunked_at_sentence_boundaries(tmp_path: Path) -> None:
    sentences = [
        f"Sentence {i} talks about the river number {i} and its bridges." for i in range(60)
    ]
    f = tmp_path / "long.txt"
    f.write_text(" ".join(sentences[:30]) + "\n\n" + " ".join(sentences[30:]))
    passages = list(read_passages(f, max_tokens=100))
    assert len(passages) > 5
    for p in passages:
        assert count_tokens(p.text) <= 134  # 100, or 4/3 of it when a short tail was merged
        assert p.text.endswith("bridges.")  # no sentence cut in half
    rejoined = " ".join(p.text.replace("\n\n", " ") for p in passages)
    assert rejoined == " ".join(sentences)


def test_split_sentences_keeps_abbreviations_and_initials() -> None:
    text = 'Dr. Smith met J. R. R. Tolkien in the U.S. Army. "Quoted end." Then 1990 came.'
    assert split_sentences(text) == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. Army.",
        '"Quoted end."',
        "Then 1990 came.",
    ]


def test_chunking_splits_an_overlong_sentence_and_merges_a_short_tail() -> None:
    long_sentence = " ".join(["word"] * 250) + "."
    chunks = chunk_paragraphs([long_sentence], max_tokens=100)
    assert all(count_tokens(c) <= 100 for c in chunks)
    assert " ".join(chunks).split() == long_sentence.split()
    merged = chunk_paragraphs(["A " * 90 + "end.", "Tiny tail."], max_tokens=100)
    assert len(merged) == 1 and merged[0].endswith("Tiny tail.")


def test_markdown_sections_heading_stack() -> None:
    sections = markdown_sections("# A\n\nx\n\n## B\n\ny\n\n# C\n\nz\n")
    assert [s.headings for s in sections] == [("A",), ("A", "B"), ("C",)]


def test_expand_sources_walks_directories_sorted(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# B\n\nbody")
    (tmp_path / "a.txt").write_text("body")
    (tmp_path / "ignored.bin").write_bytes(b"\x00")
    (tmp_path / ".hidden.txt").write_text("x")
    assert expand_sources([tmp_path]) == [tmp_path / "a.txt", tmp_path / "sub" / "b.md"]
    with pytest.raises(CorpusError, match="no such file"):
        expand_sources([tmp_path / "missing.jsonl"])
