"""Hop reading from gold labels: one model call an item, minutes a run.

Whether a planner's chain resolves is decided by the reader taking a hop's answer out of a
passage it already holds; an end-to-end run measures that only through hours of planning and
searching. Here every gold hop of a question is read alone:

- MuSiQue: each step of ``question_decomposition`` with ``#n`` filled by the earlier steps'
  gold answers ("#2 >> shares border with" becomes "shares border with of Columbia"), shown
  with its support paragraph; 2Wiki: each evidence triple as "relation of subject", shown with
  the paragraph about its subject.
- Shown as the findings step shows an atomic query's passages: ``--shown mixed`` puts the gold
  paragraph among the two of the question's other paragraphs that rank highest for the hop by
  BM25 (the distractors a search for the hop brings), at a position that cycles over the three;
  ``--shown alone`` shows the gold paragraph only. Passages are windowed around the hop as the
  findings call windows them (``PlannerSettings.passage_chars``).
- Read by each ``--arm`` (``ARMS``): ``findings`` is today's findings call for one query (JSON:
  a span and its passage numbers); ``reader`` is one-call RAG's reader (a short answer alone).
- ``--phrasing planner``: the same hops as the recorded ``full`` run's planner searched them
  (``planning.planner_hops``: a query stands for the gold hop ``planning.judge`` matches it
  to), same gold paragraph and position, distractors ranked for the planner's text; a row's
  ``key`` is its gold hop's, so gold and planner rows of a hop pair (``gold_matched``: only the
  gold phrasing of those hops; ``--count``: the items per split, no model).
- Scored against the hop's gold answer (and the question's aliases when the hop's answer is the
  question's): exact match (the target's "exact-or-alias"), token F1, and whether the span is
  supported by a shown passage, empty, or restates the hop's subject.

Tuning and report halves are kept apart exactly as the report slices are: MuSiQue's first 87
questions of ``musique_ans_dev_174`` tune, its last 87 report; 2Wiki ``dev_163_official`` is
report only. Rows go to ``--out`` (one JSON line per item and arm, resumable: a rerun reads only
what is missing), and ``--summary`` writes the table and the JSON of ``benchmarks/results``.

    HOPTREE_LLM__CACHE=false HOPTREE_LLM__LOCAL_PARALLEL=2 HOPTREE_LLM__LOCAL_CTX=16384 \\
    python benchmarks/hop_reading.py --split musique_tune --arm findings --arm reader \\
        --sample 60 --out /tmp/hop-reading
    python benchmarks/hop_reading.py --split musique_tune --phrasing planner --count

Why one module of this length: the items, the arms that read them and the rows they leave share
``HopItem`` and the row key a resumed run skips by (``_row_key``), and ``--summary`` reads the
same rows back, so the pieces change together. How a recorded planner query is matched to a
gold hop is not here but in ``planning.py`` (``planner_hops``), so the two benchmarks agree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.language_models import BaseChatModel
from planning import planner_hops, rows_by_question

import prompts
from agent.checks.escalation import answer_logprobs
from agent.checks.evidence import support
from agent.planner.findings import (
    FINDINGS_MAX_TOKENS,
    RoundFindings,
    _findings_prompt,
    read_query,
)
from agent.settings import LLMSettings
from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.metrics import best_exact_match, best_f1
from searchers.passages import Hit, Passage, numbered_passages
from searchers.reader import read_short_answer
from searchers.searcher import RunScope
from searchers.structured_calls import ask
from searchers.text import normalize_answer_folded

# the embedded default; rows read by another model carry its name
DEFAULT_MODEL: str = LLMSettings.model_fields["local_model"].default
SHOWN = 3  # PlannerSettings.summary_passages: passages the findings call reads for a query
CHARS = 350  # PlannerSettings.passage_chars
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MUSIQUE = DATA / "musique" / "musique_ans_dev_174.jsonl"
TWOWIKI = DATA / "2wikimultihopqa" / "dev_163_official.jsonl"
# split -> (file, first question, one past the last); the report halves are never tuned on
SPLITS: dict[str, tuple[Path, int, int | None]] = {
    "musique_tune": (MUSIQUE, 0, 87),
    "musique_report": (MUSIQUE, 87, None),
    "2wiki_report": (TWOWIKI, 0, None),
}
PHRASINGS = ("gold", "planner", "gold_matched", "asked")
RECORDED = Path(__file__).resolve().parents[1] / "evals" / "results" / "v4"
# split -> the recorded ``full`` run whose planner queries phrase its hops (``--phrasing``)
ROWS: dict[str, Path] = {
    "musique_tune": RECORDED / "tune" / "musique" / "full" / "details.jsonl",
    "musique_report": RECORDED / "musique" / "full" / "details.jsonl",
    "2wiki_report": RECORDED / "2wiki" / "full" / "details.jsonl",
}
_REF = re.compile(r"#(\d+)")
_WORD = re.compile(r"\w+", re.UNICODE)
_PREPOSITIONS = {"with", "in", "of", "by", "for", "to", "at", "on", "from", "into", "as"}


@dataclass(frozen=True)
class HopItem:
    """One gold hop, ready to read: its text, its answers, and the passages shown for it."""

    qid: str
    hop: int  # 1-based position in the question's chain
    text: str
    answers: list[str]
    gold_id: str
    shown: list[tuple[str, str, str]]  # (passage id, title, text), in the order shown
    kind: str = ""  # the question's type (2hop, compositional, ...)
    phrasing: str = "gold"  # or "planner": the text is a recorded planner query for the hop
    query_id: str = ""  # the planner query's id in its recorded row
    asked: bool = True  # a planner query also names the hop's relation (``planning.judge``)

    @property
    def key(self) -> str:
        return f"{self.qid}#{self.hop}"

    def hits(self) -> list[Hit]:
        return [Hit(Passage(pid, title, text, {}), 1.0) for pid, title, text in self.shown]

    @property
    def gold_position(self) -> int:
        return [pid for pid, _t, _x in self.shown].index(self.gold_id) + 1


def hop_text(raw: str, earlier: Sequence[str]) -> str:
    """A gold sub-question with ``#n`` filled by the earlier hops' gold answers; MuSiQue's
    knowledge-base form "subject >> relation" reads as "relation of subject" ("shares border with
    subject" where the relation ends in a preposition), the form of 2Wiki's hops and of the
    planner's atomic queries."""

    def fill(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return earlier[n - 1] if 0 < n <= len(earlier) else match.group(0)

    text = _REF.sub(fill, raw).strip()
    if ">>" in text:
        subject, relation = (part.strip() for part in text.split(">>", 1))
        joint = " " if relation.split()[-1].casefold() in _PREPOSITIONS else " of "
        text = f"{relation}{joint}{subject}"
    return " ".join(text.split())


_PEOPLE_RELATIONS = {
    "performer", "spouse", "creator", "author", "composer", "father", "mother", "child",
    "sibling", "cast member", "director", "producer", "founded by", "screenwriter",
}  # fmt: skip


def asked_text(raw: str, earlier: Sequence[str]) -> str:
    """A gold sub-question asked as a question: MuSiQue's knowledge-base form "subject >>
    relation" as the planner would ask it ("What administrative territorial entity is Notus
    located in?", "What shares a border with Columbia?", "Who is the spouse of X?"); a step
    already written as a question is ``hop_text``'s."""
    if ">>" not in raw:
        return hop_text(raw, earlier)
    filled = hop_text(raw.replace(">>", "\x00"), earlier)  # fill #n, keep the parts apart
    subject, relation = (" ".join(part.split()) for part in filled.split("\x00", 1))
    rel = relation.casefold()
    if rel.startswith("located in the "):
        return f"What {relation[len('located in the ') :]} is {subject} located in?"
    if rel.startswith("contains "):
        return f"What {relation[len('contains ') :]} does {subject} contain?"
    if rel == "shares border with":
        return f"What shares a border with {subject}?"
    if rel == "member of":
        return f"What is {subject} a member of?"
    if rel.startswith("member of "):
        return f"What {relation[len('member of ') :]} is {subject} a member of?"
    if rel.split()[-1] in _PREPOSITIONS or rel.split()[0].endswith("ed"):
        return f"What is {subject} {relation}?"
    lead = "Who" if rel in _PEOPLE_RELATIONS else "What"
    return f"{lead} is the {relation} of {subject}?"


def _tokens(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def bm25_scores(
    query: str,
    docs: Sequence[str],
    *,
    tokens: Callable[[str], list[str]],
    k1: float = 1.2,
    b: float = 0.75,
) -> list[float]:
    """BM25 of ``query`` for each of ``docs``, the docs themselves the corpus (a handful of
    shown passages; no index is worth building for them)."""
    toks = [tokens(d) for d in docs]
    asked = set(tokens(query))
    avg = sum(map(len, toks)) / max(1, len(toks))
    df: Counter[str] = Counter(w for t in toks for w in set(t))
    scores = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in asked:
            if w in tf:
                idf = math.log(1 + (len(toks) - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / max(avg, 1)))
        scores.append(s)
    return scores


def bm25_order(query: str, docs: Sequence[str]) -> list[int]:
    """Indexes of ``docs`` from the best BM25 match for ``query`` down (ties keep file order):
    the question's own paragraphs are the corpus, as a search for the hop among them ranks it
    (plain lowercased words, no stemming: the distractors the committed rows were read with)."""
    scores = bm25_scores(query, docs, tokens=_tokens)
    return sorted(range(len(docs)), key=lambda i: (-scores[i], i))


def hop_items(question: EvalQuestion, shown: str, start: int = 0) -> list[HopItem]:
    """The question's gold hops as items; ``start`` turns the gold passage's position (items of
    one run cycle through the shown slots). Empty when a hop's paragraph is missing (the chain
    cannot be filled)."""
    if not question.gold_hops or question.gold_hops_skipped:
        return []
    paragraphs = _paragraphs(question)
    finals = {normalize_answer_folded(a) for a in question.answers}
    items: list[HopItem] = []
    earlier: list[str] = []
    for n, gold in enumerate(question.gold_hops, start=1):
        text = hop_text(gold.question, earlier)
        earlier.append(gold.answer)
        if gold.passage_id not in paragraphs:
            continue
        answers = [gold.answer]
        if normalize_answer_folded(gold.answer) in finals:
            answers += [a for a in question.answers if a != gold.answer]
        slot = (start + len(items)) % SHOWN if shown == "mixed" else None
        passages = shown_passages(paragraphs, gold.passage_id, text, slot)
        items.append(HopItem(question.id, n, text, answers, gold.passage_id, passages,
                             question.type))  # fmt: skip
    return items


def shown_passages(
    paragraphs: dict[str, tuple[str, str]], gold_id: str, text: str, slot: int | None
) -> list[tuple[str, str, str]]:
    """The gold paragraph alone (``slot`` None), or at ``slot`` among the two of the question's
    other paragraphs that rank highest for ``text`` by BM25."""
    title, body = paragraphs[gold_id]
    passages = [(gold_id, title, body)]
    if slot is None:
        return passages
    others = [(pid, t, x) for pid, (t, x) in paragraphs.items() if pid != gold_id]
    order = bm25_order(text, [f"{t} {x}" for _p, t, x in others])
    distractors = [others[i] for i in order[: SHOWN - 1]]
    return distractors[:slot] + passages + distractors[slot:]


def _paragraphs(question: EvalQuestion) -> dict[str, tuple[str, str]]:
    return dict(zip(question.passage_ids(), question.paragraphs, strict=True))


def searched(sub: dict[str, Any]) -> bool:
    """Whether a recorded query was searched: a query left waiting on an answer that never
    came keeps round 0 and its ``#n``, and has no text as searched."""
    return int(sub.get("round") or 0) > 0 and not _REF.search(str(sub.get("query", "")))


def planner_items(
    question: EvalQuestion, gold: list[HopItem], row: dict[str, Any] | None
) -> list[HopItem]:
    """The question's gold hops as its recorded planner run asked them: for each gold item
    whose hop a searched planner query matches (``planning.planner_hops``), the same item
    with the query's text as searched, its distractors ranked for that text, the gold paragraph
    at the gold item's position; hops the planner never asked make no item."""
    if row is None:
        return []
    matched = planner_hops(question, row)
    paragraphs = _paragraphs(question)
    items = []
    for it in gold:
        sub = matched.get(it.hop)
        if sub is None or not searched(sub):
            continue
        text = " ".join(str(sub["query"]).split())
        slot = it.gold_position - 1 if len(it.shown) > 1 else None
        items.append(replace(it, text=text, shown=shown_passages(paragraphs, it.gold_id, text,
                                                                 slot),
                             phrasing="planner", query_id=str(sub["id"]),
                             asked=sub["asked"]))  # fmt: skip
    return items


def split_items(
    split: str,
    shown: str,
    sample: int | None = None,
    phrasing: str = "gold",
    rows: Path | None = None,
) -> list[HopItem]:
    """Every hop of the split's questions (``sample``: that many, drawn with seed 0, in file
    order), gold positions cycling over the whole split. ``planner``: those of the sampled hops
    the recorded run's planner asked (``rows``, else ``ROWS``), phrased as it
    searched them; ``gold_matched``: the same hops as gold phrases them."""
    path, first, last = SPLITS[split]
    questions = load_questions(path, resolve_format(path))[first:last]
    items: list[HopItem] = []
    for q in questions:
        items += hop_items(q, shown, start=len(items))
    if sample is not None and sample < len(items):
        keep = set(random.Random(0).sample(range(len(items)), sample))
        items = [it for i, it in enumerate(items) if i in keep]
    if phrasing == "gold":
        return items
    if phrasing == "asked":
        raws = {
            f"{q.id}#{n}": asked_text(h.question, [g.answer for g in q.gold_hops[: n - 1]])
            for q in questions
            for n, h in enumerate(q.gold_hops, start=1)
        }
        return [replace(it, text=raws[it.key], phrasing="asked") for it in items]
    recorded = rows_by_question(rows or ROWS[split])
    planned: list[HopItem] = []
    for q in questions:
        planned += planner_items(q, [it for it in items if it.qid == q.id], recorded.get(q.id))
    if phrasing == "planner":
        return planned
    asked = {it.key for it in planned}
    return [it for it in items if it.key in asked]


@dataclass
class Read:
    """What one arm read for one item."""

    answer: str
    cited: list[int] = field(default_factory=list)  # 1-based positions of the passages cited
    calls: int = 1
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)  # what an arm weighed, for replays


Arm = Callable[[BaseChatModel, HopItem, RunScope], Awaitable[Read]]


def shown_text(item: HopItem, hits: list[Hit] | None = None) -> str:
    return numbered_passages(hits or item.hits(), max_chars=CHARS, query=item.text, titled=True)


def restates(answer: str, query: str) -> bool:
    """The reply repeats the query's own words instead of answering ("father of X" -> "X"), the
    commonest failure of the findings call on v4's rows (``results/findings-prompt.md``)."""
    words = answer.casefold().split()
    return bool(words) and (
        answer.casefold() in query.casefold() or all(w in query.casefold() for w in words[:2])
    )


async def read_findings(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
    """Today's findings call, the item as the round's only query."""
    sub = {"id": "q1", "query": item.text, "round": 1}
    text, by_number = _findings_prompt([sub], {"q1": item.hits()}, CHARS)  # type: ignore[list-item]
    reply = await ask(
        chat,
        RoundFindings,
        prompts.render("findings", queries=text),
        scope=scope,
        step="summarize",
        max_tokens=FINDINGS_MAX_TOKENS,
    )
    if reply.value is None:
        return Read("", error=str(reply.error))
    first = reply.value.findings[0] if reply.value.findings else None
    if first is None:
        return Read("")
    ids = [hit.id for hit in item.hits()]
    cited = [ids.index(by_number[n].id) + 1 for n in first.passages if n in by_number]
    return Read(first.answer, cited)


async def _read_as_question(
    chat: BaseChatModel, item: HopItem, text: str, scope: RunScope, question: str = ""
) -> Read:
    """One-call RAG's reader asked the hop (or ``question``) over ``text`` (numbered
    passages)."""
    asked = question or item.text
    reply = await read_short_answer(chat, asked, text, scope=scope, step="read")
    return Read(reply.value.answer) if reply.value else Read("", error=str(reply.error))


async def read_reader(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
    """One-call RAG's reader over the same windowed passages."""
    return await _read_as_question(chat, item, shown_text(item), scope)


async def read_free(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
    """The planner's hop reader with ``findings_call="free"`` (``findings.read_query``): the
    draft's free reader asked the hop over the same passages whole (up to 2,000 characters,
    trimmed around the hop) in the system message, and a free-text reply."""
    reply = await read_query(chat, item.text, item.hits(), CHARS, scope=scope, free=True)
    return Read(reply.value.answer) if reply.value else Read("", error=str(reply.error))


_ASKING = re.compile(
    r"^(who|whom|whose|what|when|where|which|why|how|is|are|was|were|did|does|do|can|name)\b",
    re.IGNORECASE,
)
_PERSON_HEADS = {
    "actor", "actress", "author", "writer", "director", "producer", "performer", "singer",
    "composer", "founder", "father", "mother", "wife", "husband", "spouse", "son", "daughter",
    "president", "narrator", "creator", "player", "owner", "leader", "king", "queen",
    "member", "brother", "sister", "child", "person", "man", "woman", "artist", "architect",
    "manager", "coach", "inventor", "designer", "voice", "cast",
}  # fmt: skip


def as_question(text: str) -> str:
    """A hop written as a noun phrase ("author of X", "city where Y died") asked as a question
    ("Who is the author of X?", "What is the city where Y died?"); a hop already asked as a
    question is kept. The reader's prompt asks a question; a bare phrase invites "yes" or the
    phrase's own subject back."""
    text = " ".join(text.split()).rstrip(" .")
    if not text or text.endswith("?") or _ASKING.match(text):
        return text if text.endswith("?") or not text else f"{text}?"
    words = [w.casefold() for w in text.split()]
    article = words[0] in {"the", "a", "an"}
    head = words[1] if article and len(words) > 1 else words[0]
    lead = "Who is" if head in _PERSON_HEADS else "What is"
    return f"{lead} {text}?" if article else f"{lead} the {text}?"


async def read_reader_asked(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
    """One-call RAG's reader over the same passages, the hop asked as a question."""
    asked = as_question(item.text)
    read = await _read_as_question(chat, item, shown_text(item), scope, asked)
    read.detail = {"asked": asked}
    return read


async def read_reader_recheck(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
    """One-call RAG's reader; when its span restates the hop's subject (or is empty), asked
    once more with that span ruled out."""
    text = shown_text(item)
    first = await _read_as_question(chat, item, text, scope)
    answer = " ".join(first.answer.split())
    if answer and not restates(answer, item.text):
        return Read(answer)
    again = f"{item.text} (not {answer})" if answer else item.text
    second = await _read_as_question(chat, item, text, scope, again)
    if second.error:
        return Read(answer, calls=2, error=second.error, detail={"first": answer})
    return replace(second, calls=2, detail={"first": answer})


def each_passage(asked: Callable[[str], str]) -> Arm:
    """Each shown passage read alone by one-call RAG's reader (the hop phrased by ``asked``),
    with the reply's token log-probabilities; the answer is the non-empty span, held by its
    passage and not restating the hop's subject, whose tokens the model was surest of (mean
    log-probability). Every passage's span and log-probabilities go to the row's detail, so
    other ways to choose replay without a call."""

    async def read(chat: BaseChatModel, item: HopItem, scope: RunScope) -> Read:
        question = asked(item.text)
        hits = item.hits()

        async def one(hit: Hit) -> dict[str, Any]:
            text = numbered_passages([hit], max_chars=CHARS, query=item.text, titled=True)
            reply = await read_short_answer(chat, question, text, scope=scope, step="read",
                                            logprobs=True)  # fmt: skip
            if reply.value is None:
                return {"answer": "", "logprobs": [], "error": str(reply.error)}
            span = " ".join(reply.value.answer.split())
            record = hit.to_json()
            return {
                "answer": span,
                "logprobs": [round(x, 4) for x in answer_logprobs(reply.token_logprobs, span)],
                "held": bool(span) and bool(support(span, [record], [record], item.text)),
                "restated": bool(span) and restates(span, item.text),
            }

        reads = await asyncio.gather(*(one(h) for h in hits))
        best = choose_read(reads)
        detail = {"asked": question, "reads": reads}
        return Read(best, cited=[], calls=len(hits), detail=detail)

    return read


def choose_read(reads: Sequence[dict[str, Any]], how: str = "mean") -> str:
    """The span of the per-passage read the model was surest of, among those held by their
    passage and not restating the subject (all non-empty ones when none is)."""
    spans = [r for r in reads if r.get("answer")]
    good = [r for r in spans if r.get("held") and not r.get("restated")] or spans
    if not good:
        return ""

    def sure(r: dict[str, Any]) -> float:
        lps = r.get("logprobs") or [-99.0]
        return min(lps) if how == "min" else sum(lps) / len(lps)

    return str(max(good, key=sure)["answer"])


ARMS: dict[str, Arm] = {
    "findings": read_findings,
    "reader": read_reader,
    "reader_asked": read_reader_asked,
    "reader_recheck": read_reader_recheck,
    "reader_free": read_free,
    "reader_each": each_passage(lambda text: text),
    "reader_each_asked": each_passage(as_question),
}


def score(item: HopItem, read: Read) -> dict[str, Any]:
    """A read scored against the hop's answers, with the support check the planner applies."""
    hits = item.hits()
    records = [h.to_json() for h in hits]
    cited = [records[n - 1] for n in read.cited if 0 < n <= len(records)]
    answer = " ".join(read.answer.split())
    supported = bool(answer) and bool(support(answer, cited, records, item.text))
    return {
        "answer": answer,
        "em": best_exact_match(answer, item.answers),
        "f1": best_f1(answer, item.answers),
        "supported": supported,
        "empty": not answer,
        "restated": bool(answer) and not supported and restates(answer, item.text),
        "calls": read.calls,
        "error": read.error,
    }


def _row_key(row: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (row["split"], row.get("phrasing", "gold"), row["shown"], row["arm"], row["key"])


def _split_name(row: dict[str, Any]) -> str:
    """The split a row is summarized under: planner-phrased rows apart ("musique_tune/planner");
    rows from before phrasing was recorded are gold-phrased."""
    phrasing = row.get("phrasing", "gold")
    return row["split"] if phrasing == "gold" else f"{row['split']}/{phrasing}"


def load_rows(out: Path) -> list[dict[str, Any]]:
    path = out / "rows.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


async def run(
    chat: BaseChatModel,
    items: list[HopItem],
    arms: list[str],
    *,
    split: str,
    shown: str,
    out: Path,
    slots: int = 1,
    timeout_s: float = 300,
    model: str = "",
) -> list[dict[str, Any]]:
    """Read every item under every arm not yet in ``out/rows.jsonl``; append each row as it is
    read (a stopped run resumes where it stopped); progress lines from the first item. A
    ``model`` other than the default embedded one names the rows' arm ``arm@model``, so its rows
    sit beside the default model's in one file and pair with them."""
    tag = f"@{model}" if model and model != DEFAULT_MODEL else ""
    out.mkdir(parents=True, exist_ok=True)
    done = {_row_key(r) for r in load_rows(out)}
    todo = [
        (a, it)
        for a in arms
        for it in items
        if (split, it.phrasing, shown, a + tag, it.key) not in done
    ]
    gate = asyncio.Semaphore(max(1, slots))
    started = time.monotonic()
    written: list[dict[str, Any]] = []
    label = f"{split}/{shown}" + "".join(f"/{p}" for p in {it.phrasing for it in items} - {"gold"})
    print(f"{label}: {len(todo)} reads to do ({len(done)} done before)", flush=True)

    async def one(arm: str, item: HopItem) -> None:
        async with gate:
            t0 = time.monotonic()
            try:
                read = await ARMS[arm](chat, item, RunScope(llm_timeout_s=timeout_s))
            except Exception as exc:  # a failed read is a row, not a stopped run
                read = Read("", error=f"{type(exc).__name__}: {exc}")
            row = {
                "split": split,
                "shown": shown,
                "phrasing": item.phrasing,
                **({"query_id": item.query_id, "asked": item.asked} if item.query_id else {}),
                "arm": arm + tag,
                "key": item.key,
                "kind": item.kind,
                "hop": item.hop,
                "text": item.text,
                "answers": item.answers,
                "gold_position": item.gold_position,
                "seconds": round(time.monotonic() - t0, 2),
                **score(item, read),
                **({"detail": read.detail} if read.detail else {}),
            }
        with (out / "rows.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        written.append(row)
        n = len(written)
        if n % 10 == 0 or n == len(todo):
            rate = (time.monotonic() - started) / n
            print(f"{label}: {n}/{len(todo)} read, {rate:.1f} s each", flush=True)

    await asyncio.gather(*(one(a, it) for a, it in todo))
    return written


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per (split, shown, arm): n, accuracy (exact or alias, %), F1, supported, empty,
    restated, accuracy by gold position, median seconds."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(f"{_split_name(r)}/{r['shown']}/{r['arm']}", []).append(r)
    table: dict[str, dict[str, Any]] = {}
    for name, rs in sorted(groups.items()):
        n = len(rs)
        secs = sorted(r["seconds"] for r in rs)
        by_pos: dict[int, list[float]] = {}
        for r in rs:
            by_pos.setdefault(r["gold_position"], []).append(r["em"])
        table[name] = {
            "n": n,
            "accuracy": round(100 * sum(r["em"] for r in rs) / n, 1),
            "f1": round(100 * sum(r["f1"] for r in rs) / n, 1),
            "supported": round(100 * sum(r["supported"] for r in rs) / n, 1),
            "empty": sum(r["empty"] for r in rs),
            "restated": sum(r["restated"] for r in rs),
            "by_position": {p: round(100 * sum(v) / len(v), 1) for p, v in sorted(by_pos.items())},
            "median_s": secs[n // 2],
        }
    return table


def markdown(table: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| split / shown / arm | n | exact or alias | F1 | supported | empty | restated "
        "| by gold position | median s |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, t in table.items():
        pos = ", ".join(f"{p}: {v:.0f}" for p, v in t["by_position"].items())
        lines.append(
            f"| {name} | {t['n']} | {t['accuracy']:.1f}% | {t['f1']:.1f} | {t['supported']:.0f}% "
            f"| {t['empty']} | {t['restated']} | {pos} | {t['median_s']:.1f} |"
        )
    return "\n".join(lines)


def paired(rows: list[dict[str, Any]], a: str, b: str) -> dict[str, tuple[int, int, int]]:
    """Per (split, shown): items arm ``b`` read right and ``a`` wrong, the other way, and ties."""
    by: dict[tuple[str, str, str], dict[str, float]] = {}
    for r in rows:
        by.setdefault((_split_name(r), r["shown"], r["key"]), {})[r["arm"]] = r["em"]
    out: dict[str, tuple[int, int, int]] = {}
    for (split, shown, _key), arms in by.items():
        if a in arms and b in arms:
            w, lo, t = out.get(f"{split}/{shown}", (0, 0, 0))
            d = arms[b] - arms[a]
            out[f"{split}/{shown}"] = (w + (d > 0), lo + (d < 0), t + (d == 0))
    return out


def phrasing_paired(rows: list[dict[str, Any]], arm: str) -> dict[str, tuple[int, int, int]]:
    """Per (split, shown), under one arm, the hops read both as gold and as the planner phrases
    them: right only with the planner's phrasing, right only with gold's, and ties."""
    same_arm = [
        {**r, "arm": r.get("phrasing", "gold"), "phrasing": "gold"} for r in rows if r["arm"] == arm
    ]
    return paired(same_arm, "gold", "planner")


async def read_all(
    splits: list[str],
    shown_kinds: list[str],
    arms: list[str],
    sample: int | None,
    out: Path,
    phrasings: Sequence[str] = ("gold",),
    rows: Path | None = None,
) -> None:
    """Every split under every way of showing and phrasing, on the configured model (one event
    loop: the chat client's connections belong to it)."""
    from agent.runtime.chat_models import build_chat_model
    from agent.settings import Settings

    settings = Settings()
    with build_chat_model(settings, cache=settings.llm.cache) as handle:
        for split in splits:
            for phrasing in phrasings:
                for shown in shown_kinds:
                    items = split_items(split, shown, sample, phrasing, rows)
                    await run(handle.model, items, arms, split=split, shown=shown, out=out,
                              slots=settings.llm.local_parallel,
                              model=settings.llm.local_model)  # fmt: skip


def count(splits: list[str], sample: int | None, rows: Path | None) -> list[str]:
    """Per split, without the model: the gold hops, those of questions with a recorded row,
    those a planner query matches, and of these the ones it searched (the planner items)."""
    lines = []
    for split in splits:
        gold = split_items(split, "mixed", sample)
        recorded = rows_by_question(rows or ROWS[split])
        path, first, last = SPLITS[split]
        questions = load_questions(path, resolve_format(path))[first:last]
        with_row = matched = planned = asked = 0
        for q in questions:
            mine = [it for it in gold if it.qid == q.id]
            if q.id not in recorded or not mine:
                continue
            with_row += len(mine)
            hops = planner_hops(q, recorded[q.id])
            matched += sum(it.hop in hops for it in mine)
            made = planner_items(q, mine, recorded[q.id])
            planned += len(made)
            asked += sum(it.asked for it in made)
        lines.append(
            f"{split}: gold {len(gold)} hops, {with_row} of questions with a recorded row; "
            f"planner {planned} items (hops matched {matched} of {len(gold)}, "
            f"{matched - planned} of them never searched; {asked} items also name the hop's "
            "relation)"
        )
    return lines


def arm_name(text: str) -> str:
    """An arm of ``ARMS``, or ``arm@model``: that arm's rows read by another model."""
    if text.split("@", 1)[0] not in ARMS:
        raise argparse.ArgumentTypeError(f"no arm {text!r}; arms: {', '.join(sorted(ARMS))}")
    return text


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", action="append", choices=sorted(SPLITS), required=True)
    parser.add_argument("--arm", action="append", type=arm_name,
                        help=f"one of {', '.join(sorted(ARMS))}; ARM@MODEL names another "
                        "model's rows (to summarize and pair)")  # fmt: skip
    parser.add_argument("--shown", action="append", choices=("mixed", "alone"))
    parser.add_argument("--sample", type=int, help="hops drawn from each split (seed 0)")
    parser.add_argument("--phrasing", action="append", choices=PHRASINGS,
                        help="gold (default): the gold hops as labelled; planner: as the "
                        "recorded planner searched them; gold_matched: the planner's hops, "
                        "gold-phrased")  # fmt: skip
    parser.add_argument("--rows", type=Path, help="recorded details.jsonl (one --split)")
    parser.add_argument("--count", action="store_true", help="print item counts and exit")
    parser.add_argument("--out", type=Path, help="rows folder (resumable)")
    parser.add_argument("--summary", action="store_true", help="print the table of --out")
    parser.add_argument("--json", type=Path, help="write the figures of --candidate and --baseline")
    parser.add_argument("--baseline", default="findings", help="today's reader (for --json)")
    parser.add_argument("--candidate", default="reader", help="the reader measured against it")
    return parser


def main() -> None:
    cli = parser()
    args = cli.parse_args()
    if args.rows and len(args.split) > 1:
        cli.error("--rows is one split's recorded run: give one --split")
    if args.count:
        print("\n".join(count(args.split, args.sample, args.rows)))
        return
    if not args.arm or not args.out:
        cli.error("--arm and --out are needed to read or summarize")
    shown_kinds = args.shown or ["mixed"]
    phrasings = args.phrasing or ["gold"]
    if not args.summary:
        if any("@" in a for a in args.arm):
            cli.error("ARM@MODEL only summarizes: read with HOPTREE_LLM__LOCAL_MODEL=MODEL")
        asyncio.run(read_all(args.split, shown_kinds, args.arm, args.sample, args.out,
                             phrasings, args.rows))  # fmt: skip
    rows = load_rows(args.out)
    print(markdown(summarize(rows)))
    for i, a in enumerate(args.arm):
        for b in args.arm[i + 1 :]:
            for name, (w, lo, t) in paired(rows, a, b).items():
                print(f"{b} against {a}, {name}: {w} right only under {b}, {lo} only under {a}, "
                      f"{t} same")  # fmt: skip
    for arm in args.arm:
        for name, (w, lo, t) in phrasing_paired(rows, arm).items():
            print(f"{arm}, planner against gold phrasing, {name}: {w} right only as the planner "
                  f"phrased, {lo} only as gold phrased, {t} same")  # fmt: skip
    if args.json:
        args.json.write_text(
            json.dumps(figures(rows, args.candidate, args.baseline), indent=1) + "\n",
            encoding="utf-8",
        )


def figures(rows: list[dict[str, Any]], candidate: str, baseline: str) -> dict[str, Any]:
    """``{split: {"n", "accuracy"}}`` for ``candidate`` (the gold paragraph among the shown
    passages), the same under ``"baseline"`` for today's reader, and the alone condition where
    it was read; planner-phrased rows under ``<split>_planner``."""
    table = summarize(rows)

    def of(arm: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, t in table.items():
            split, shown, which = name.rsplit("/", 2)
            if which == arm:
                split = split.replace("/", "_")
                key = split if shown == "mixed" else f"{split}_{shown}"
                out[key] = {"n": t["n"], "accuracy": t["accuracy"], "f1": t["f1"]}
        return out

    return {"arm": candidate, **of(candidate), "baseline": {"arm": baseline, **of(baseline)}}


if __name__ == "__main__":
    main()
