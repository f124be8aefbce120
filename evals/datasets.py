"""Evaluation questions from HotpotQA / 2WikiMultihopQA files, in either layout, as one record.

Two layouts exist in the shared data (see its README):

- ``hotpotqa``: the Hugging Face ``hotpot_qa`` rows: ``id, question, answer, type, level,
  supporting_facts{title[], sent_id[]}, context{title[], sentences[][]}``. The original
  HotpotQA JSON layout (``context: [[title, [sentences]]]``, ``supporting_facts: [[title, i]]``)
  is read too, so a file converted either way loads the same.
- ``flashrag``: ``id, question, golden_answers[], metadata{type, level, supporting_facts,
  context{title[], sentences[][] | content[][]}}``; 2Wiki's ``golden_answers`` holds aliases.

Both become an ``EvalQuestion`` whose paragraphs are built exactly as the open-corpus reader
(``searchers.corpus.read_qa_paragraphs``) builds passages: sentences stripped and joined by single
spaces, first paragraph of a title wins. So a question's distractor paragraphs and the open index
hold the same text, and titles match across settings (gold-paragraph recall relies on that).

Every problem is a ``DatasetError`` naming ``FILE:LINE``: a run of 300 questions should fail
before the first model call, not at question 212.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from searchers.chunking import normalize_space
from searchers.jsonl import json_objects

# ``quality`` (multiple choice over long articles) is read by ``evals.quality_data`` and run by
# ``evals.quality_runner``; it is detected here so every command names the format alike.
DatasetFormat = Literal["auto", "hotpotqa", "flashrag", "quality"]
FORMATS: tuple[str, ...] = get_args(DatasetFormat)
MAX_LINES = 10_000_000  # a bound on the read loop; far beyond any evaluation file


class DatasetError(ValueError):
    """An evaluation file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: list[str]  # gold aliases; the first is the canonical answer
    supporting_titles: list[str]
    paragraphs: list[tuple[str, str]] = field(default_factory=list)  # (title, text)
    type: str = ""


def _layout_of(record: dict[str, Any]) -> str | None:
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and "context" in metadata:
        return "flashrag"
    if "context" in record:
        return "hotpotqa"
    if "article" in record and ("questions" in record or "question1" in record):
        return "quality"
    return None


def detect_format(path: Path) -> str:
    """The layout of the first non-blank line: ``hotpotqa``, ``flashrag`` or ``quality``."""
    for lineno, record in _records(path):
        layout = _layout_of(record)
        if layout is None:
            keys = ", ".join(sorted(record)[:8])
            raise DatasetError(
                f"{path}:{lineno}: unknown question layout (fields: {keys}); expected a HotpotQA "
                "row with 'context', a FlashRAG row with 'metadata.context' or a QuALITY row "
                "with 'article' and 'questions'"
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


def parse_question(record: dict[str, Any], layout: str, where: str, lineno: int) -> EvalQuestion:
    """One row of the given layout; ``where`` is ``FILE:LINE`` for error messages."""
    if layout == "quality":
        raise DatasetError(
            f"{where}: a QuALITY file holds multiple-choice questions over articles; it runs "
            "through evals.quality_runner (hoptree eval run does that by itself)"
        )
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{where}: missing or empty 'question'")
    raw_id = record.get("id", record.get("_id"))
    if raw_id is not None and not isinstance(raw_id, str | int):
        raise DatasetError(f"{where}: 'id' must be a string or an integer")
    # Without an id, the line number: stable for an unchanged file, which is what resume needs.
    qid = str(raw_id) if raw_id is not None else f"line-{lineno}"
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
        raise DatasetError(f"unknown dataset format {layout!r}; expected hotpotqa or flashrag")
    return EvalQuestion(
        id=qid,
        question=question.strip(),
        answers=answers,
        supporting_titles=_supporting_titles(where, source.get("supporting_facts")),
        paragraphs=_paragraphs(where, source["context"]),
        type=str(source.get("type") or ""),
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
