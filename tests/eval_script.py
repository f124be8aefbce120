"""The tiny question file and the scripted model the evaluation tests share.

The chat model is a ``RoutedChatModel``: it answers each prompt kind with what the test scripted
(keyed on the question it is asked about), so the scores the tests check are the runner's
arithmetic on known predictions, not a measurement of any model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from agent.settings import Settings
from evals.aggregate import aggregate
from evals.pipelines import EvalContext
from tests.routed_chat import RoutedChatModel

TINY = (
    Path(__file__).parent / "data_eval" / "eval_tiny_hotpot.jsonl"
)  # apart: tests/data is ingested whole
REQUIRED_METRICS = {
    "n",
    "em",
    "f1",
    "acc",
    "retrieval_success",
    "llm_calls_per_question",
    "seconds_per_question",
    "pipeline",
    "dataset",
}
ROW_FIELDS = {
    "id",
    "question",
    "answers",
    "prediction",
    "em",
    "f1",
    "acc",
    "retrieval_success",
    "gold_recall",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "error",
}
# The scripted "model" answers by topic: right on the Seine and on the yes/no question, wrong
# (1936 for 1937) on the Hobbit, so EM over the three questions is 2/3.
SCRIPTED = {"Eiffel": "Seine", "Bilbo": "1936", "Danube": "yes"}
FACTS = {
    "Eiffel": "The Seine flows through Paris, where the Eiffel Tower stands.",
    "Bilbo": "The Hobbit was first published in 1937.",
    "Danube": "Both the Danube and the Rhine flow through Germany.",
}


# The scripted plans: two hops for the two bridge questions (the second waits for the first's
# answer), the question itself for the yes/no one.
PLANS = {
    "Eiffel": ["city where the Eiffel Tower stands", "river that flows through #1"],
    "Bilbo": ["novel whose title character is Bilbo Baggins", "year #1 was first published"],
}
# What the findings call copies out of the passages, by a phrase of the query: spans the
# passages hold (1937, not the reader's 1936).
SPANS = {
    "Eiffel Tower stands": "Paris",
    "flows through Paris": "Seine",
    "Bilbo Baggins": "The Hobbit",
    "The Hobbit was first published": "1937",
    "Danube": "yes",
}


def findings(messages: list[BaseMessage]) -> str:
    items = []
    for line in str(messages[-1].content).splitlines():
        if line.startswith("Query "):
            number, query = line.removeprefix("Query ").split(": ", 1)
            span = next((v for k, v in SPANS.items() if k in query), "")
            items.append({"query": int(number), "answer": span, "passages": [1]})
    return json.dumps({"findings": items})


def _topic(messages: list[BaseMessage]) -> str:
    """The topic of the question or query a prompt is about (its first user line only: the
    passages below it mention other topics)."""
    first = str(messages[-1].content).strip().splitlines()[0]
    for key in SCRIPTED:
        if key in first:
            return key
    raise AssertionError(f"unscripted question: {first!r}")


def _first_line_after(messages: list[BaseMessage], prefix: str) -> str:
    first = str(messages[-1].content).strip().splitlines()[0]
    return first.removeprefix(prefix).strip()


def scripted_chat(**kwargs: Any) -> RoutedChatModel:
    def reply(**fields: object) -> str:
        return json.dumps(fields)

    return RoutedChatModel(
        routes={
            "rag_answer": lambda m: reply(answer=SCRIPTED[_topic(m)]),
            "closed_book": lambda m: reply(answer=SCRIPTED[_topic(m)]),
            "decompose": lambda m: reply(
                queries=PLANS.get(_topic(m)) or [_first_line_after(m, "Question:")]
            ),
            "rewrite": lambda m: reply(query=_first_line_after(m, "Query:")),
            "hyde": lambda m: reply(passage=FACTS[_topic(m)]),
            "summarize": findings,
            "verify": reply(sufficient=True, queries=[]),
            "answer": lambda m: reply(short_answer=SCRIPTED[_topic(m)], answer="As found [1]."),
        },
        **kwargs,
    )


def scripted_settings(settings: Settings) -> Settings:
    """No sparse feedback levels and one HyDE passage: the scripted model has no replies for
    the feedback prompts, and the tests are about the runner, not the refinement loops. The
    sparse searcher rewrites first (LevelRAG's order), so every pipeline's calls are fixed."""
    cfg = settings.searchers
    searchers = cfg.model_copy(
        update={
            "sparse": cfg.sparse.model_copy(update={"max_depth": 0, "original_first": False}),
            "dense": cfg.dense.model_copy(update={"max_rewrites": 1}),
        }
    )
    return settings.model_copy(update={"searchers": searchers})


def context(settings: Settings, chat: RoutedChatModel, embeddings: Any, **kw: Any) -> EvalContext:
    return EvalContext(
        chat=chat, settings=settings, embeddings=embeddings, model_label="scripted", **kw
    )


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "details.jsonl").read_text().splitlines()]


def finished_run(
    root: Path, name: str, rows: list[dict[str, Any]], *, sha: str, pipeline: str | None = None
) -> Path:
    """A finished run directory ``root/name`` made from ``rows`` (no model): its details and
    the metrics ``hoptree eval compare`` reads, as the runner writes them."""
    run = root / name
    run.mkdir(parents=True)
    (run / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    metrics = {
        **aggregate(rows),
        "pipeline": pipeline or name,
        "dataset": "data/dev_tiny.jsonl",
        "dataset_sha256": sha,
        "format": "hotpotqa",
        "setting": "open",
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run
