"""Both question layouts load into one record; bad files fail with FILE:LINE before any run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.corpora import question_passages
from evals.datasets import DatasetError, GoldHop, detect_format, load_questions
from searchers.corpus import paragraph_id, read_qa_paragraphs
from tests.conftest import SHARED_DATA
from tests.locations import TESTS

DATA = TESTS / "data"


def write_lines(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def hf_row(**overrides: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "h1",
        "question": "Which river flows through Paris?",
        "answer": "Seine",
        "type": "bridge",
        "supporting_facts": {"title": ["Seine"], "sent_id": [0]},
        "context": {
            "title": ["Seine", "Paris"],
            "sentences": [["The Seine.", " A river."], ["Paris."]],
        },
    }
    row.update(overrides)
    return row


def test_hugging_face_hotpotqa_layout() -> None:
    path = DATA / "hotpot_hf.jsonl"
    assert detect_format(path) == "hotpotqa"
    questions = load_questions(path)
    first = questions[0]
    assert first.id == "q1"
    assert first.question.startswith("Which river flows through the city")
    assert first.answers == ["Seine"]
    assert first.supporting_titles == ["Eiffel Tower", "Seine"]
    assert first.type == "bridge"
    titles = [t for t, _ in first.paragraphs]
    assert titles[:2] == ["Eiffel Tower", "Seine"]
    # sentences stripped and joined by one space, exactly as the open index stores them
    indexed = {p.title: p.text for p in read_qa_paragraphs(path, "hotpotqa")}
    for title, text in first.paragraphs:
        assert indexed[title] == text
        assert "  " not in text and not text.startswith(" ")


def test_flashrag_layouts_with_sentences_and_content() -> None:
    hotpot = load_questions(DATA / "flashrag_hotpot.jsonl")
    assert detect_format(DATA / "flashrag_hotpot.jsonl") == "flashrag"
    assert hotpot[0].answers == ["J. R. R. Tolkien"]
    assert hotpot[0].supporting_titles == ["The Hobbit"]
    assert hotpot[0].paragraphs[0] == (
        "The Hobbit",
        "The Hobbit is a novel by J. R. R. Tolkien. It was published in 1937.",
    )
    wiki = load_questions(DATA / "flashrag_2wiki.jsonl")  # 2Wiki: context.content
    assert wiki[0].type == "compositional"
    assert wiki[0].supporting_titles == ["Polish-Russian War (film)", "Xawery Żuławski"]
    assert wiki[0].paragraphs[1][1].endswith("He is the son of actress Małgorzata Braunek.")


def test_golden_answer_aliases_are_kept_in_order_without_duplicates(tmp_path: Path) -> None:
    row = {
        "id": "w1",
        "question": "Where?",
        "golden_answers": ["Missoula", "Missoula, Montana", "Missoula", " "],
        "metadata": {"context": {"title": ["Missoula"], "content": [["A city."]]}},
    }
    questions = load_questions(write_lines(tmp_path / "w.jsonl", [row]))
    assert questions[0].answers == ["Missoula", "Missoula, Montana"]
    assert questions[0].supporting_titles == []


def test_original_hotpotqa_list_layout(tmp_path: Path) -> None:
    row = {
        "_id": "o1",
        "question": "Which river?",
        "answer": "Seine",
        "supporting_facts": [["Seine", 0], ["Paris", 1], ["Seine", 1]],
        "context": [["Seine", ["The Seine.", " A river."]], ["Paris", ["Paris."]]],
    }
    [question] = load_questions(write_lines(tmp_path / "o.jsonl", [row]))
    assert question.id == "o1"
    assert question.supporting_titles == ["Seine", "Paris"]
    assert question.paragraphs == [("Seine", "The Seine. A river."), ("Paris", "Paris.")]


def test_repeated_titles_keep_the_first_paragraph(tmp_path: Path) -> None:
    context = {"title": ["A", "A", "B"], "sentences": [["first"], ["second"], ["b"]]}
    [question] = load_questions(write_lines(tmp_path / "d.jsonl", [hf_row(context=context)]))
    assert question.paragraphs == [("A", "first"), ("B", "b")]


def test_limit_blank_lines_and_missing_ids(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        "\n" + json.dumps(hf_row(id=None)) + "\n\n" + json.dumps(hf_row(id=7)) + "\n",
        encoding="utf-8",
    )
    questions = load_questions(path)
    # no id: the line number, stable for an unchanged file; integer ids become strings
    assert [q.id for q in questions] == ["line-2", "7"]
    assert [q.id for q in load_questions(path, limit=1)] == ["line-2"]
    assert load_questions(path, limit=0) == []


def wiki_official_row(**overrides: object) -> dict[str, object]:
    """2Wiki's own layout: a distractor titled exactly as the evidence's subject beside the gold
    "(film)" page, a subject cased otherwise than its page, and one named nowhere."""
    row: dict[str, object] = {
        "_id": "w-official",
        "type": "compositional",
        "question": "Where did the director of film The Serpent's Egg die?",
        "answer": "Fårö",
        "context": [
            ["The Serpent's Egg", ["The Serpent's Egg is a novel."]],
            ["The Serpent's Egg (film)", ["The Serpent's Egg is a 1977 film by Ingmar Bergman."]],
            ["Ingmar Bergman", ["Ingmar Bergman died on Fårö."]],
            ["Liv Ullmann", ["Liv Ullmann is an actress."]],
        ],
        "supporting_facts": [["The Serpent's Egg (film)", 0], ["Ingmar Bergman", 0]],
        "evidences": [
            ["The Serpent's Egg", "director", "Ingmar Bergman"],
            ["ingmar bergman", "place of death", "Fårö"],
            ["LIV ULLMANN", "occupation", "actress"],
            ["Ingrid von Rosen", "spouse", "Ingmar Bergman"],
        ],
    }
    row.update(overrides)
    return row


def test_2wiki_evidences_are_gold_hops(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "w.jsonl", [wiki_official_row()])
    assert detect_format(path) == "hotpotqa"
    [question] = load_questions(path)
    film = "The Serpent's Egg (film)"
    assert question.gold_hops == [
        # a supporting title containing the subject wins over a distractor named exactly so
        GoldHop("director of The Serpent's Egg", "Ingmar Bergman", paragraph_id(film), film),
        GoldHop(
            "place of death of ingmar bergman",
            "Fårö",
            paragraph_id("Ingmar Bergman"),
            "Ingmar Bergman",
        ),
        # no supporting title fits: any context title, case-insensitively
        GoldHop("occupation of LIV ULLMANN", "actress", paragraph_id("Liv Ullmann"), "Liv Ullmann"),
    ]
    assert question.gold_hops_skipped == 1  # "Ingrid von Rosen" names no paragraph
    assert question.supporting_ids == [paragraph_id(film), paragraph_id("Ingmar Bergman")]
    assert question.titles_identify_paragraphs
    own = {p.id for p in question_passages(question)}
    assert {h.passage_id for h in question.gold_hops} <= own


def test_flashrag_evidences_under_metadata_and_none_for_hotpotqa(tmp_path: Path) -> None:
    row = {
        "id": "f1",
        "question": "Who directed it?",
        "golden_answers": ["Ingmar Bergman"],
        "metadata": {
            "context": {"title": ["The Serpent's Egg (film)"], "content": [["A film."]]},
            "supporting_facts": {"title": ["The Serpent's Egg (film)"], "sent_id": [0]},
            "evidences": [["The Serpent's Egg", "director", "Ingmar Bergman"]],
        },
    }
    [question] = load_questions(write_lines(tmp_path / "f.jsonl", [row]))
    assert [h.title for h in question.gold_hops] == ["The Serpent's Egg (film)"]
    [hotpot] = load_questions(write_lines(tmp_path / "h.jsonl", [hf_row()]))
    assert hotpot.gold_hops == [] and hotpot.gold_hops_skipped == 0
    assert hotpot.supporting_ids == [paragraph_id("Seine")]


@pytest.mark.parametrize("evidences", [{"a": 1}, [["s", "r"]], [["s", "r", 3]]])
def test_malformed_evidences_name_the_line(tmp_path: Path, evidences: object) -> None:
    path = write_lines(tmp_path / "w.jsonl", [wiki_official_row(evidences=evidences)])
    with pytest.raises(DatasetError, match=r"w\.jsonl:1: 'evidences'"):
        load_questions(path)


@pytest.mark.parametrize(
    ("lines", "fmt", "message"),
    [
        (["{not json"], "auto", r"q\.jsonl:1: malformed JSON"),
        ([json.dumps(hf_row()), "[1, 2]"], "auto", r"q\.jsonl:2: expected a JSON object"),
        (
            [json.dumps({"id": "x", "question": "q?"})],
            "auto",
            r"q\.jsonl:1: unknown question layout",
        ),
        (
            [json.dumps(hf_row())],
            "flashrag",
            r"q\.jsonl:1: a FlashRAG row needs 'metadata.context'",
        ),
        ([json.dumps(hf_row(question=""))], "auto", r"q\.jsonl:1: missing or empty 'question'"),
        ([json.dumps(hf_row(answer=""))], "auto", r"q\.jsonl:1: no gold answer"),
        ([json.dumps(hf_row(answer=3))], "auto", r"q\.jsonl:1: 'answer' must be a list of strings"),
        (
            [json.dumps(hf_row(context={"title": ["a"], "sentences": []}))],
            "auto",
            r"q\.jsonl:1: context needs equally long",
        ),
        (
            [json.dumps(hf_row()), "", json.dumps(hf_row())],
            "auto",
            r"q\.jsonl:3: id 'h1' repeats line 1",
        ),
        ([json.dumps(hf_row())], "squad", r"unknown dataset format 'squad'"),
        ([""], "auto", r"no questions in the file"),
    ],
)
def test_bad_input_names_the_file_and_line(
    tmp_path: Path, lines: list[str], fmt: str, message: str
) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_questions(path, fmt)


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.jsonl: no such file"):
        load_questions(tmp_path / "nope.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(hf_row()).encode() + b"\n" + b'{"question": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match=r"latin1\.jsonl:\d+: not UTF-8"):
        load_questions(path)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared evaluation data not present")
def test_the_shared_evaluation_files_load() -> None:
    hard = load_questions(SHARED_DATA / "hotpotqa" / "dev_hard_300_a.jsonl", limit=50)
    assert len(hard) == 50 and all(len(q.paragraphs) == 10 for q in hard)
    assert all(
        q.supporting_titles and set(q.supporting_titles) <= {t for t, _ in q.paragraphs}
        for q in hard
    )
    wiki = load_questions(SHARED_DATA / "2wikimultihopqa" / "dev_first100_flashrag.jsonl")
    assert len(wiki) == 100
    assert max(len(q.answers) for q in wiki) > 5  # aliases
    assert {q.type for q in wiki} == {
        "compositional",
        "comparison",
        "bridge_comparison",
        "inference",
    }
    flash = load_questions(
        SHARED_DATA / "hotpotqa" / "dev_first200_minus_holdout_flashrag.jsonl", limit=5
    )
    assert flash[0].answers == ["yes"]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared evaluation data not present")
def test_the_shared_2wiki_official_file_has_gold_hops() -> None:
    wiki = load_questions(SHARED_DATA / "2wikimultihopqa" / "dev_163_official.jsonl")
    assert len(wiki) == 163
    hops = [h for q in wiki for h in q.gold_hops]
    skipped = sum(q.gold_hops_skipped for q in wiki)
    assert len(hops) + skipped == 422 and skipped == 18
    for q in wiki:  # every hop's paragraph is one of the question's own
        assert {h.passage_id for h in q.gold_hops} <= set(q.passage_ids())
    first = wiki[0].gold_hops[0]
    assert (first.title, first.answer) == ("The Serpent's Egg (film)", "Ingmar Bergman")
