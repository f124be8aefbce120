"""Evaluation questions from HotpotQA / 2WikiMultihopQA / MuSiQue files, as one record.

Three layouts exist in the shared data (see its README):

- ``hotpotqa``: the Hugging Face ``hotpot_qa`` rows: ``id, question, answer, type, level,
  supporting_facts{title[], sent_id[]}, context{title[], sentences[][]}``. The original
  HotpotQA JSON layout (``context: [[title, [sentences]]]``, ``supporting_facts: [[title, i]]``)
  is read too, so a file converted either way loads the same.
- ``flashrag``: ``id, question, golden_answers[], metadata{type, level, supporting_facts,
  context{title[], sentences[][] | content[][]}}``; 2Wiki's ``golden_answers`` holds aliases.
- ``musique``: MuSiQue-Ans rows: ``id, question, answer, answer_aliases[], paragraphs[{idx,
  title, paragraph_text, is_supporting}], question_decomposition[{question, answer,
  paragraph_support_idx}]``; the type is the id's hop count (``2hop``, ``3hop``, ``4hop``).

Each becomes an ``EvalQuestion`` whose paragraphs are built exactly as the open-corpus reader
(``searchers.corpus.read_qa_paragraphs``) builds passages: sentences stripped and joined by single
spaces, first paragraph of a title wins (MuSiQue: first of a title and text). So a question's
distractor paragraphs and the open index hold the same text and ids (``EvalQuestion.passage_ids``),
and gold-paragraph recall and hop recall compare across settings.

Gold hops (``GoldHop``), the single-fact steps a question decomposes into, come from MuSiQue's
``question_decomposition`` and from 2Wiki's ``evidences`` triples; HotpotQA has none.

Every problem is a ``DatasetError`` naming ``FILE:LINE``: a run of 300 questions should fail
before the first model call, not at question 212.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from searchers.corpus import CorpusError, musique_paragraphs, paragraph_id, paragraph_text_id
from searchers.jsonl import json_objects
from searchers.text import normalize_space

# ``quality`` (multiple choice over long articles) is read by ``evals.quality.data`` and run by
# ``evals.quality.runner``; it is detected here so every command names the format alike.
DatasetFormat = Literal["auto", "hotpotqa", "flashrag", "musique", "quality"]
FORMATS: tuple[str, ...] = get_args(DatasetFormat)
MAX_LINES = 10_000_000  # a bound on the read loop; far beyond any evaluation file
_HOP_COUNT = re.compile(r"^(\d+hop)")  # MuSiQue ids: 2hop__1_2, 3hop1__1_2_3, 4hop3__...


class DatasetError(ValueError):
    """An evaluation file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class GoldHop:
    """One single-fact step of a question's gold decomposition and the paragraph that states it:
    what a planner's atomic query should ask, and the passage its search should find."""

    question: str  # MuSiQue's sub-question ("#1 >> relation" style); 2Wiki: "relation of subject"
    answer: str
    passage_id: str  # the paragraph's id in the open index (and in the distractor setting)
    title: str


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: list[str]  # gold aliases; the first is the canonical answer
    supporting_titles: list[str]
    paragraphs: list[tuple[str, str]] = field(default_factory=list)  # (title, text)
    type: str = ""
    # The paragraphs' ids, one per paragraph, when a title does not identify its paragraph
    # (MuSiQue); empty means ``paragraph_id(title)`` each, as for HotpotQA and 2Wiki.
    paragraph_ids: list[str] = field(default_factory=list)
    supporting_ids: list[str] = field(default_factory=list)  # open-index ids of the gold ones
    gold_hops: list[GoldHop] = field(default_factory=list)
    gold_hops_skipped: int = 0  # gold hops whose paragraph could not be found (left out)

    def __post_init__(self) -> None:
        if self.paragraph_ids and len(self.paragraph_ids) != len(self.paragraphs):
            raise ValueError(
                f"question {self.id}: {len(self.paragraph_ids)} paragraph ids for "
                f"{len(self.paragraphs)} paragraphs"
            )

    def passage_ids(self) -> list[str]:
        """The open-index id of each paragraph, in order: both settings must name a paragraph
        alike, or gold recall and hop recall would differ between them for no reason."""
        if self.paragraph_ids:
            return list(self.paragraph_ids)
        return [paragraph_id(title) for title, _text in self.paragraphs]

    @property
    def titles_identify_paragraphs(self) -> bool:
        """False when two paragraphs may share a title (MuSiQue): title matches then overcount,
        and gold recall must compare ids."""
        return not self.paragraph_ids


def _layout_of(record: dict[str, Any]) -> str | None:
    if isinstance(record.get("paragraphs"), list) and "question_decomposition" in record:
        return "musique"
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and "context" in metadata:
        return "flashrag"
    if "context" in record:
        return "hotpotqa"
    if "article" in record and ("questions" in record or "question1" in record):
        return "quality"
    return None


def detect_format(path: Path) -> str:
    """The layout of the first non-blank line: ``hotpotqa``, ``flashrag``, ``musique`` or
    ``quality``."""
    for lineno, record in _records(path):
        layout = _layout_of(record)
        if layout is None:
            keys = ", ".join(sorted(record)[:8])
            raise DatasetError(
                f"{path}:{lineno}: unknown question layout (fields: {keys}); expected a HotpotQA "
                "row with 'context', a FlashRAG row with 'metadata.context', a MuSiQue row with "
                "'paragraphs' and 'question_decomposition' or a QuALITY row with 'article' and "
                "'questions'"
            )
        return layout
    raise DatasetError(f"{path}: no questions in the file")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DatasetError(f"{path}: no such file") from exc
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror})") from exc
    with handle:
        yield from json_objects(handle, path, error=DatasetError, max_lines=MAX_LINES)


def _strings(where: str, value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where}: '{name}' must be a list of strings")
    return list(value)


def _context(where: str, context: Any) -> list[tuple[str, list[Any]]]:
    """(title, sentences) pairs of either context shape."""
    if isinstance(context, list):  # original HotpotQA: [[title, [sentences]], ...]
        pairs = []
        for item in context:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list)):
                raise DatasetError(f"{where}: context items must be [title, [sentences]]")
            pairs.append((str(item[0]), item[1]))
        return pairs
    if not isinstance(context, dict):
        raise DatasetError(f"{where}: 'context' must be an object or a list")
    key = "content" if "content" in context else "sentences"
    titles, bodies = context.get("title"), context.get(key)
    if not isinstance(titles, list) or not isinstance(bodies, list) or len(titles) != len(bodies):
        raise DatasetError(f"{where}: context needs equally long 'title' and '{key}' lists")
    for body in bodies:
        if not isinstance(body, list):
            raise DatasetError(f"{where}: context '{key}' entries must be lists of sentences")
    return [(str(t), b) for t, b in zip(titles, bodies, strict=True)]


def _paragraphs(where: str, context: Any) -> list[tuple[str, str]]:
    seen: set[str] = set()
    paragraphs = []
    for title, sentences in _context(where, context):
        if title in seen:  # 2Wiki repeats a title now and then; the first one wins, as in ingest
            continue
        text = normalize_space(" ".join(str(s).strip() for s in sentences))
        if text:
            seen.add(title)
            paragraphs.append((title, text))
    return paragraphs


def _supporting_titles(where: str, facts: Any) -> list[str]:
    if facts is None:
        return []
    if isinstance(facts, dict):
        titles = facts.get("title", [])
    elif isinstance(facts, list):  # original layout: [[title, sent_id], ...]
        if not all(isinstance(f, list) and f for f in facts):
            raise DatasetError(f"{where}: supporting_facts items must be [title, sent_id]")
        titles = [f[0] for f in facts]
    else:
        raise DatasetError(f"{where}: 'supporting_facts' must be an object or a list")
    return list(dict.fromkeys(_strings(where, titles, "supporting_facts.title")))


def _answers(where: str, value: Any, name: str) -> list[str]:
    answers = [value] if isinstance(value, str) else value
    answers = _strings(where, answers, name)
    answers = [a for a in answers if a.strip()]
    if not answers:
        raise DatasetError(f"{where}: no gold answer in '{name}'")
    return list(dict.fromkeys(answers))


def _evidence_paragraph(
    subject: str, titles: Sequence[str], supporting: Sequence[str]
) -> str | None:
    """The title of the paragraph a 2Wiki evidence triple comes from.

    Supporting-fact titles are tried first (exact, case-insensitive, then one containing the
    subject or contained in it), and only then any context title (exact, case-insensitive):
    a context often holds a distractor titled exactly as the subject beside the gold paragraph
    with a qualifier ("The Serpent's Egg" and the supporting "The Serpent's Egg (film)").
    """
    subject = subject.strip()
    folded = subject.casefold()
    if not folded:
        return None
    present = set(titles)
    gold = [t for t in supporting if t in present]
    for title in gold:
        if title == subject:
            return title
    for title in gold:
        if title.casefold() == folded:
            return title
    for title in gold:
        if folded in title.casefold() or title.casefold() in folded:
            return title
    if subject in present:
        return subject
    return next((t for t in titles if t.casefold() == folded), None)


def _evidence_hops(
    where: str, evidences: Any, paragraphs: Sequence[tuple[str, str]], supporting: Sequence[str]
) -> tuple[list[GoldHop], int]:
    """2Wiki's gold hops, one per ``[subject, relation, object]`` triple whose paragraph is
    found; and how many triples were left out for want of one (18 of the shared sample's 422,
    mostly subjects named otherwise than their page: "Timothy Perry Shriver", "Timothy Shriver")."""
    if evidences is None:
        return [], 0
    if not isinstance(evidences, list):
        raise DatasetError(f"{where}: 'evidences' must be a list of [subject, relation, object]")
    titles = [title for title, _text in paragraphs]
    hops: list[GoldHop] = []
    skipped = 0
    for triple in evidences:
        if not (
            isinstance(triple, list)
            and len(triple) == 3
            and all(isinstance(v, str) for v in triple)
        ):
            raise DatasetError(f"{where}: 'evidences' items must be [subject, relation, object]")
        subject, relation, answer = (normalize_space(v) for v in triple)
        title = _evidence_paragraph(subject, titles, supporting)
        if title is None:
            skipped += 1
            continue
        hops.append(
            GoldHop(
                question=f"{relation} of {subject}",
                answer=answer,
                passage_id=paragraph_id(title),
                title=title,
            )
        )
    return hops, skipped


def _musique_question(record: dict[str, Any], where: str, qid: str, question: str) -> EvalQuestion:
    """A MuSiQue row: paragraphs once per (title, text) with their content ids, supporting ones
    from ``is_supporting``, gold hops from ``question_decomposition`` in order."""
    aliases = record.get("answer_aliases", [])
    if "answer" not in record:
        raise DatasetError(f"{where}: a MuSiQue row needs 'answer'")
    answer = record["answer"]
    if not isinstance(answer, str):
        raise DatasetError(f"{where}: 'answer' must be a string")
    answers = _answers(where, [answer, *_strings(where, aliases, "answer_aliases")], "answer")
    try:
        raw = musique_paragraphs(record, where)
    except CorpusError as exc:
        raise DatasetError(str(exc)) from exc
    items = record["paragraphs"]
    supporting_idx = {
        item["idx"] for item in items if isinstance(item, dict) and item.get("is_supporting")
    }
    by_idx: dict[int, tuple[str, str]] = {}
    seen: set[tuple[str, str]] = set()
    paragraphs: list[tuple[str, str]] = []
    for idx, title, text in raw:
        if idx in by_idx:
            raise DatasetError(f"{where}: paragraph idx {idx} repeats")
        by_idx[idx] = (title, text)
        if (title, text) not in seen:
            seen.add((title, text))
            paragraphs.append((title, text))
    supporting = [by_idx[i] for i, *_ in raw if i in supporting_idx]
    decomposition = record.get("question_decomposition")
    if not isinstance(decomposition, list):
        raise DatasetError(f"{where}: 'question_decomposition' must be a list")
    hops: list[GoldHop] = []
    skipped = 0
    for step in decomposition:
        if not (
            isinstance(step, dict)
            and isinstance(step.get("question"), str)
            and isinstance(step.get("answer"), str)
        ):
            raise DatasetError(
                f"{where}: 'question_decomposition' items need string 'question' and 'answer'"
            )
        found = by_idx.get(step.get("paragraph_support_idx"))
        if found is None:  # no such paragraph, or an empty one
            skipped += 1
            continue
        title, text = found
        hops.append(
            GoldHop(
                question=normalize_space(step["question"]),
                answer=normalize_space(step["answer"]),
                passage_id=paragraph_text_id(title, text),
                title=title,
            )
        )
    match = _HOP_COUNT.match(qid)
    return EvalQuestion(
        id=qid,
        question=question,
        answers=answers,
        supporting_titles=list(dict.fromkeys(title for title, _text in supporting)),
        paragraphs=paragraphs,
        type=match.group(1) if match else "",
        paragraph_ids=[paragraph_text_id(title, text) for title, text in paragraphs],
        supporting_ids=list(dict.fromkeys(paragraph_text_id(t, x) for t, x in supporting)),
        gold_hops=hops,
        gold_hops_skipped=skipped,
    )


def parse_question(record: dict[str, Any], layout: str, where: str, lineno: int) -> EvalQuestion:
    """One row of the given layout; ``where`` is ``FILE:LINE`` for error messages."""
    if layout == "quality":
        raise DatasetError(
            f"{where}: a QuALITY file holds multiple-choice questions over articles; it runs "
            "through evals.quality.runner (hoptree eval run does that by itself)"
        )
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{where}: missing or empty 'question'")
    raw_id = record.get("id", record.get("_id"))
    if raw_id is not None and not isinstance(raw_id, str | int):
        raise DatasetError(f"{where}: 'id' must be a string or an integer")
    # Without an id, the line number: stable for an unchanged file, which is what resume needs.
    qid = str(raw_id) if raw_id is not None else f"line-{lineno}"
    if layout == "musique":
        return _musique_question(record, where, qid, question.strip())
    if layout == "flashrag":
        metadata = record.get("metadata")
        if not isinstance(metadata, dict) or "context" not in metadata:
            raise DatasetError(f"{where}: a FlashRAG row needs 'metadata.context'")
        if "golden_answers" not in record:
            raise DatasetError(f"{where}: a FlashRAG row needs 'golden_answers'")
        answers = _answers(where, record["golden_answers"], "golden_answers")
        source = metadata
    elif layout == "hotpotqa":
        if "context" not in record:
            raise DatasetError(f"{where}: a HotpotQA row needs 'context'")
        if "answer" not in record:
            raise DatasetError(f"{where}: a HotpotQA row needs 'answer'")
        answers = _answers(where, record["answer"], "answer")
        source = record
    else:
        raise DatasetError(
            f"unknown dataset format {layout!r}; expected hotpotqa, flashrag or musique"
        )
    supporting = _supporting_titles(where, source.get("supporting_facts"))
    paragraphs = _paragraphs(where, source["context"])
    # 2Wiki's triples; a FlashRAG row may carry them in its metadata or beside it
    evidences = source.get("evidences", record.get("evidences"))
    hops, skipped = _evidence_hops(where, evidences, paragraphs, supporting)
    return EvalQuestion(
        id=qid,
        question=question.strip(),
        answers=answers,
        supporting_titles=supporting,
        paragraphs=paragraphs,
        type=str(source.get("type") or ""),
        supporting_ids=[paragraph_id(title) for title in supporting],
        gold_hops=hops,
        gold_hops_skipped=skipped,
    )


def resolve_format(path: Path, fmt: str = "auto") -> str:
    if fmt not in FORMATS:
        raise DatasetError(f"unknown dataset format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    return detect_format(path) if fmt == "auto" else fmt


def load_questions(
    path: Path, fmt: str = "auto", *, limit: int | None = None
) -> list[EvalQuestion]:
    """The first ``limit`` questions of the file (all when None), in file order.

    Ids must be unique: resuming a run skips finished ids, so a repeated id would silently
    skip a different question.
    """
    path = Path(path)
    if limit is not None and limit < 0:
        raise DatasetError(f"limit must be >= 0, got {limit}")
    layout = resolve_format(path, fmt)
    questions: list[EvalQuestion] = []
    first_line: dict[str, int] = {}
    for lineno, record in _records(path):
        if limit is not None and len(questions) >= limit:
            break
        where = f"{path}:{lineno}"
        question = parse_question(record, layout, where, lineno)
        if question.id in first_line:
            raise DatasetError(
                f"{where}: id {question.id!r} repeats line {first_line[question.id]}; "
                "question ids must be unique"
            )
        first_line[question.id] = lineno
        questions.append(question)
    return questions
