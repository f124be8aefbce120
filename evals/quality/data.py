"""QuALITY files as articles with their multiple-choice questions.

QuALITY (Pang et al., 2022) asks four-option questions about ~5,000-token stories and articles;
a question is HARD when most annotators working under time pressure got it wrong. Three layouts
are read, all as one ``Article`` per ``article_id``:

- the official v1.x release (``QuALITY.v1.0.1.htmlstripped.dev``): one line per question *set*
  (one writer's questions), the article repeated on each of its sets' lines; ``questions`` hold
  ``question``, ``question_unique_id``, ``options``, ``gold_label`` (1-based) and ``difficult``;
- hoptree's committed subset (``evals/data/quality/``): the same field names, one line per
  article with the questions of all its sets, so the file is the release's own records, only
  grouped;
- the old flat example task (``question{i}``, ``question{i}option{j}``, ``question{i}_gold_label``,
  the article as the text of a list of HTML lines), which has no HARD flag.

Sets of one article are merged; an article whose text differs between its lines, a question id
seen twice with different content, or a gold label outside the options is a ``DatasetError``
naming ``FILE:LINE``, raised before any model starts.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.datasets import DatasetError
from searchers.jsonl import json_objects
from tree.documents import SourceDocument, clean_text, guess_title

MAX_LINES = 100_000  # the whole release has ~2,000 lines
MAX_FLAT_QUESTIONS = 100  # question1..questionN of the flat layout; real files stop near 10
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class ChoiceQuestion:
    id: str
    article_id: str
    question: str
    options: tuple[str, ...]
    gold: int  # 1-based, as QuALITY numbers it
    hard: bool | None = None  # None: the file does not say (the flat example)

    @property
    def gold_letter(self) -> str:
        return LETTERS[self.gold - 1]

    @property
    def kind(self) -> str:
        """``hard``/``easy`` (``unknown`` without a flag): the row's ``type``, so the means per
        type that every run already reports are QuALITY's HARD and non-HARD accuracy."""
        return "unknown" if self.hard is None else ("hard" if self.hard else "easy")


@dataclass
class Article:
    id: str
    title: str
    raw: str  # the article as the file holds it
    source: str = ""
    questions: list[ChoiceQuestion] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Plain text with paragraph breaks, as the tree reader cleans any document."""
        return clean_text(self.raw)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw.encode("utf-8")).hexdigest()

    def document(self) -> SourceDocument:
        return SourceDocument(id=self.id, title=self.title, text=self.text, source=self.source)


def is_quality_record(record: dict[str, Any]) -> bool:
    return "article" in record and ("questions" in record or "question1" in record)


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    with handle:
        yield from json_objects(handle, path, error=DatasetError, max_lines=MAX_LINES)


def _article_text(where: str, value: Any) -> str:
    """The flat example stores its HTML as the printed form of a Python list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: 'article' must be non-empty text")
    if value.startswith("['") or value.startswith('["'):
        try:
            lines = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        if isinstance(lines, list) and all(isinstance(v, str) for v in lines):
            return "".join(lines)
    return value


def _options(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(o, str) for o in value):
        raise DatasetError(f"{where}: 'options' must be a list of strings")
    options = tuple(" ".join(o.split()) for o in value)
    if not 2 <= len(options) <= len(LETTERS) or not all(options):
        raise DatasetError(f"{where}: a question needs 2 to {len(LETTERS)} non-empty options")
    return options


def _question(
    where: str, article_id: str, qid: str, text: Any, options: Any, gold: Any, hard: Any
) -> ChoiceQuestion:
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: question {qid!r} has no text")
    opts = _options(f"{where}: question {qid!r}", options)
    if isinstance(gold, bool) or not isinstance(gold, int) or not 1 <= gold <= len(opts):
        raise DatasetError(
            f"{where}: question {qid!r} needs a 'gold_label' from 1 to {len(opts)}, got {gold!r}"
        )
    if hard is not None and hard not in (0, 1, True, False):
        raise DatasetError(f"{where}: question {qid!r}: 'difficult' must be 0 or 1")
    return ChoiceQuestion(
        id=qid,
        article_id=article_id,
        question=" ".join(text.split()),
        options=opts,
        gold=gold,
        hard=None if hard is None else bool(hard),
    )


def _set_questions(where: str, article_id: str, record: dict[str, Any]) -> list[ChoiceQuestion]:
    raw = record.get("questions")
    if not isinstance(raw, list):
        raise DatasetError(f"{where}: 'questions' must be a list")
    found = []
    set_id = str(record.get("set_unique_id") or article_id)
    for number, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: questions must be objects")
        qid = str(item.get("question_unique_id") or f"{set_id}_{number}")
        found.append(
            _question(
                where,
                article_id,
                qid,
                item.get("question"),
                item.get("options"),
                item.get("gold_label"),
                item.get("difficult"),
            )
        )
    return found


def _flat_questions(where: str, article_id: str, record: dict[str, Any]) -> list[ChoiceQuestion]:
    set_id = str(record.get("unique_id") or record.get("set_unique_id") or article_id)
    found = []
    for i in range(1, MAX_FLAT_QUESTIONS + 1):
        if f"question{i}" not in record:
            break
        options = []
        for j in range(1, len(LETTERS) + 1):
            if f"question{i}option{j}" not in record:
                break
            options.append(record[f"question{i}option{j}"])
        found.append(
            _question(
                where,
                article_id,
                f"{set_id}_{i}",
                record[f"question{i}"],
                options,
                record.get(f"question{i}_gold_label"),
                None,
            )
        )
    return found


def load_articles(path: Path) -> list[Article]:
    """Every article of a QuALITY file in order of first appearance, each with the questions of
    all its sets in file order. Question ids are unique across the file (resume relies on it)."""
    path = Path(path)
    articles: dict[str, Article] = {}
    seen: dict[str, tuple[ChoiceQuestion, int]] = {}
    for lineno, record in _records(path):
        where = f"{path}:{lineno}"
        if not is_quality_record(record):
            raise DatasetError(
                f"{where}: not a QuALITY row (needs 'article' and 'questions' or 'question1'); "
                f"keys {', '.join(sorted(record)[:8])}"
            )
        raw_id = record.get("article_id")
        if raw_id is None or str(raw_id).strip() == "":
            raise DatasetError(f"{where}: missing 'article_id'")
        article_id = str(raw_id)
        text = _article_text(where, record["article"])
        article = articles.get(article_id)
        if article is None:
            title = str(record.get("title") or guess_title(text, article_id))
            article = Article(article_id, title, text, source=str(record.get("source") or ""))
            articles[article_id] = article
        elif article.raw != text:
            raise DatasetError(f"{where}: article {article_id!r} differs from its earlier line")
        reader = _set_questions if "questions" in record else _flat_questions
        for question in reader(where, article_id, record):
            earlier = seen.get(question.id)
            if earlier is not None:
                if earlier[0] != question:
                    raise DatasetError(
                        f"{where}: question id {question.id!r} repeats line {earlier[1]} "
                        "with other content"
                    )
                continue  # the same set twice (the flat example repeats its row)
            seen[question.id] = (question, lineno)
            article.questions.append(question)
    if not articles:
        raise DatasetError(f"{path}: no articles in the file")
    return list(articles.values())


def select_questions(
    articles: list[Article], offset: int = 0, limit: int | None = None
) -> list[ChoiceQuestion]:
    """Questions in file order (article by article), ``offset`` skipped, at most ``limit``:
    the same selection rule as the other evaluation files."""
    questions = [q for a in articles for q in a.questions]
    end = None if limit is None else offset + limit
    return questions[offset:end]
