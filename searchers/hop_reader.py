"""Reading one hop one passage at a time: the passage most about the hop first, each read
alone with "not here" allowed, until one passage states a supported answer.

Why it was tried (``benchmarks/hop_reading.py``, gold hops of MuSiQue and 2Wiki, one call an
item): the embedded 1.5B model takes a hop's answer from its gold paragraph far more often when
that paragraph is shown alone than when it sits between two other paragraphs of the same
question, whose names it then copies instead. So this reader orders the shown passages by how
much they are about the hop (the passage's title naming the hop's subject, then BM25 of the hop
over the shown passages) and reads them one by one, wider, each in a prompt of its own
(``prompts/hop_read.txt``); a reply counts only when the passage it read holds it (``support``).

Not adopted: on the MuSiQue tuning hops it read 40% right against 37% for the findings call and
53% for one-call RAG's reader over all three passages (``benchmarks/results/hop-reading.md``):
the chosen passage is the gold one for 70% of them, and the abstaining prompt leaves a third of
the hops empty. It stays as that benchmark's ``one_by_one`` and ``best_one`` arms, and its
``bm25_scores`` and ``about_order`` serve the benchmarks.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

import prompts
from searchers.passages import Hit, numbered_passages
from searchers.searcher import RunScope
from searchers.structured_calls import ask
from searchers.text import STOPWORDS, WORD, fold, stem

READ_CHARS = 600  # one passage a call: room for the sentence that states the hop
MAX_READS = 3  # PlannerSettings.summary_passages: the passages a query's finding may come from
HOP_READ_MAX_TOKENS = 60  # a span in JSON; a reply that runs on is not a span

Support = Callable[[str, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]], str], list[str]]


class HopReply(BaseModel):
    answer: str = Field(
        description="the span copied from the passage, or empty if it does not state the answer"
    )


@dataclass
class HopReading:
    """What reading a hop found: the span (empty when no passage stated one), the hit that
    holds it, the calls made and any error of a failed call."""

    answer: str = ""
    hit: Hit | None = None
    calls: int = 0
    error: str = ""


def content_words(text: str) -> list[str]:
    """Folded, crudely stemmed words less stopwords: what a hop and a passage share."""
    return [stem(w) for w in WORD.findall(fold(text)) if w not in STOPWORDS]


def bm25_scores(
    query: str,
    docs: Sequence[str],
    *,
    tokens: Callable[[str], list[str]] = content_words,
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


def about_order(query: str, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` from the one most about ``query`` down: the share of the title's words the query
    holds (a passage's title names its subject, and a hop names its subject), then BM25 of the
    query over the shown passages; ties keep the given order."""
    asked = set(content_words(query))
    bm25 = bm25_scores(query, [f"{h.title} {h.text}" for h in hits])
    top = max(bm25, default=0.0) or 1.0

    def score(i: int) -> float:
        title = content_words(hits[i].title)
        named = sum(w in asked for w in title) / max(1, len(title))
        return named + 0.3 * bm25[i] / top

    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: (-score(i), i))]


async def read_hop(
    chat: BaseChatModel,
    query: str,
    hits: Sequence[Hit],
    *,
    scope: RunScope,
    supported: Support,
    step: str = "summarize",
    max_reads: int = MAX_READS,
) -> HopReading:
    """Read ``hits`` one at a time, most about ``query`` first, until one states an answer that
    ``supported`` (the planner's support check) finds in it; at most ``max_reads`` calls."""
    reading = HopReading()
    for hit in about_order(query, hits)[:max_reads]:
        text = numbered_passages([hit], max_chars=READ_CHARS, query=query, titled=True)
        reply = await ask(
            chat,
            HopReply,
            prompts.render("hop_read", question=query, passage=text.removeprefix("[1] ")),
            scope=scope,
            step=step,
            max_tokens=HOP_READ_MAX_TOKENS,
        )
        reading.calls += 1
        if reply.value is None:
            reading.error = str(reply.error)
            continue
        span = " ".join(reply.value.answer.split())
        record = hit.to_json()
        if span and supported(span, [record], [record], query):
            reading.answer, reading.hit = span, hit
            return reading
    return reading
