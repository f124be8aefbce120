"""FlashRAG's own pipelines on hoptree's model and retriever: standard RAG, IRCoT, Iter-RetGen,
Self-Ask.

What it runs on: FlashRAG 0.3.0dev0, RUC-NLPIR/FlashRAG at commit 1ee5249, which is not on
PyPI (the PyPI release ``flashrag-dev`` 0.1.2 is older: its pipelines take no retriever or
generator from the caller and its wheel lacks its own ``basic_config.yaml``), installed without
its requirements, plus the ``peers`` extra (``datasets``, ``termcolor``): see
docs/evaluation.md#peers.

``datasets`` (with pandas, pyarrow, dill, multiprocess) and ``termcolor`` are what importing
``flashrag.pipeline`` needs beyond hoptree's own dependencies (torch, transformers, numpy,
openai, PyYAML, tqdm, and tiktoken through langchain-openai); ``termcolor`` is undeclared by
FlashRAG. ``faiss-cpu`` (also undeclared) is only imported by FlashRAG's judger and index
builder, not by these four pipelines; hoptree depends on it anyway. tiktoken's ``cl100k_base``
is read from a wheel that ships it (litellm, which DSPy brings, or llama-index-core):
``evals.peers.offline.tiktoken_cache_dir`` sets ``TIKTOKEN_CACHE_DIR`` before each question.

Each peer runs FlashRAG's own pipeline class, prompts and parsing, built per question (each
question has its own metered URL) and run on a one-item FlashRAG ``Dataset`` made in memory:

- ``peer-standard``: ``SequentialPipeline``, FlashRAG's default ``PromptTemplate`` (the k
  passages as "Doc i(Title: ...)" in the system message, "Question: ..." as the user's): one
  search, one call.
- ``peer-ircot``: ``IRCOTPipeline`` with ``max_iter=5``, as FlashRAG runs it for its benchmark
  table (``examples/methods/run_exp.py``; the class default is 2). Each call writes one thought
  (its own stop words "." and newline); until a thought says "So the answer is:", the thought is
  the next search and its passages join the earlier ones (all of them, sorted by score, best
  last). Calls: 2 when the second thought is the answer (1 if the first is), 5 at the most;
  searches: the question, then every thought that is not the answer (so 6 when no thought gets
  to one, the last one searched for nothing). The prediction is ``ircot_pred_parse``'s (the text
  after "So the answer is:"; the whole chain of thoughts when no thought got there).
- ``peer-iter-retgen``: ``IterativePipeline`` with ``iter_num=3`` (its default): search, answer,
  search with the question and the answer, answer, ...: 3 calls, 3 searches, the last answer is
  the prediction.
- ``peer-self-ask``: ``SelfAskPipeline`` with ``max_iter=5`` (its default) and
  ``single_hop=False``, as FlashRAG runs it for its benchmark table. The class default
  ``single_hop=True`` shows the single-hop examples and writes "Are follow up questions needed
  here: No." itself, which is one-call RAG in Self-Ask's format, not Self-Ask. Each call either
  asks a follow-up question (which becomes the search; its passages replace the shown ones) or
  answers it; a reply with "So the final answer is:" ends it. Calls: 2 on its examples' shortest
  path (a follow-up, then the intermediate and the final answer), 5 at the most. The prompt (its
  multi-hop examples alone are 1,871 tokens) is a plain string, which FlashRAG's OpenAI
  generator sends to ``/v1/completions`` (no chat template: Self-Ask's few-shot text
  completion). The prediction is ``selfask_pred_parse``'s (empty when no reply got to a final
  answer).

Settings (FlashRAG's ``Config(config_dict=...)``): ``framework: openai``, ``generator_model``
the run's model, ``openai_setting`` the metered URL, a key and the run's per-call timeout;
``generation_params`` temperature 0 and ``max_tokens`` the run's output cap (FlashRAG's default
cap is 32); ``retrieval_topk`` the run's k. ``generator_max_input_len`` is raised from
FlashRAG's 1,024 tiktoken tokens to ``NO_TRUNCATION``: FlashRAG cuts a chat prompt at that
length from the end, which drops the question of most IRCoT prompts (its instruction and
example alone are 435 tokens, and its passages pile up) and of the standard prompt with long
passages; the model server's own context is the limit, as for every other pipeline. No files:
``disable_save``, ``save_dir`` in a temporary folder, no metrics (hoptree scores), ``gpu_id``
unset (FlashRAG would set ``CUDA_VISIBLE_DEVICES``). ``Config`` also seeds ``random``, numpy
and torch (2024), process-wide, at each question.

hoptree's retriever is injected (``FlashRAGRetriever``) with FlashRAG's retriever interface,
``search`` and ``batch_search`` with ``num`` and ``return_score``, returning FlashRAG's doc
dicts ``{"id", "title", "text", "contents": "title\\ntext"}`` and hoptree's BM25 scores (IRCoT
orders its passages by them).

FlashRAG's OpenAI generator is used through a subclass (``_generator_class``), each bug worked
around there, outside FlashRAG's files:

- Self-Ask passes one prompt as a plain string, which the generator iterates, one request per
  character: a string is wrapped in a list.
- IRCoT calls ``generate([])`` once every question is answered (``IndexError`` on
  ``input_list[0]``): an empty list is answered with an empty list, no request.
- Every reply to a request with stop words gets ``stop[0]`` appended (an imitation of vLLM's
  ``include_stop_str_in_output`` that does not know which stop word fired). For IRCoT that is
  the "." that ends a thought, what its chain of thoughts is joined with, so it is kept there;
  for Self-Ask it is "Context:", hardly ever the one that fired (its replies stop at
  "Intermediate answer:", "Follow up:" or "#"), and would be written into the scratchpad the
  next call continues (and onto an answer: "TulsaContext:"), so Self-Ask gets the server's text
  as FlashRAG's own HF generator returns it, without the stop word. Any stop word left at the
  end of a prediction is stripped before scoring; ``raw`` keeps FlashRAG's own text.
- A non-chat prompt template (``enable_chat=False``) with ``framework: openai`` is sent as its
  first half plus its last half of tokens, the whole prompt twice when it is shorter than half
  the input limit. None of these four builds one (IRCoT's template is chat under ``openai``,
  Self-Ask's string goes to the generator without a template), so nothing is done about it; the
  tests check each prompt holds its question once.
- Its ``_get_response`` prints every prompt it sends (debug prints left in), and each call draws
  a progress bar: ``print`` and ``tqdm`` are silenced in FlashRAG's generator, dataset, prompt
  and active-pipeline modules (an eval's progress bar owns the terminal).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evals.peers.base import Peer, PeerAnswer, PeerInstall, PeerQuestion, peer
from evals.peers.offline import tiktoken_cache_dir
from searchers.passages import Hit

FLASHRAG_COMMIT = "1ee5249"
# FlashRAG's prompt length limit, in tiktoken tokens, far above any model's context: the
# served model's context is the limit (see the module's docstring)
NO_TRUNCATION = 1 << 20
IRCOT_MAX_ITER = 5  # FlashRAG's benchmark setting (the class default is 2)
ITER_RETGEN_ITERS = 3  # IterativePipeline's default and FlashRAG's benchmark setting
SELF_ASK_MAX_ITER = 5  # SelfAskPipeline's default and FlashRAG's benchmark setting
_IRCOT_STOPS = (".", "\n")  # as IRCOTPipeline passes them
_SELF_ASK_STOPS = ("Context:", "#", "Intermediate answer:", "Follow up:")
_QUIET_MODULES = (
    "flashrag.generator.openai_generator",
    "flashrag.dataset.dataset",
    "flashrag.prompt.base_prompt",
    "flashrag.pipeline.active_pipeline",
)


def flashrag_doc(hit: Hit) -> dict[str, Any]:
    """A hit as FlashRAG's retrievers return a document."""
    return {
        "id": hit.id,
        "title": hit.title,
        "text": hit.text,
        "contents": f"{hit.title}\n{hit.text}",
    }


class FlashRAGRetriever:
    """hoptree's retriever behind FlashRAG's retriever interface (``BaseTextRetriever``'s
    ``search`` and ``batch_search``): ``num`` defaults to the run's k; with ``return_score``,
    the documents and their BM25 scores."""

    def __init__(self, retrieve: Callable[[str, int], list[Hit]], topk: int) -> None:
        self._retrieve = retrieve
        self.topk = topk

    def search(
        self, query: str, num: int | None = None, return_score: bool = False
    ) -> list[dict[str, Any]] | tuple[list[dict[str, Any]], list[float]]:
        hits = self._retrieve(query, num or self.topk)
        docs = [flashrag_doc(h) for h in hits]
        return (docs, [h.score for h in hits]) if return_score else docs

    def batch_search(
        self, query: str | list[str], num: int | None = None, return_score: bool = False
    ) -> list[list[dict[str, Any]]] | tuple[list[list[dict[str, Any]]], list[list[float]]]:
        queries = [query] if isinstance(query, str) else list(query)
        found = [self.search(q, num, return_score=True) for q in queries]
        docs = [d for d, _ in found]
        return (docs, [s for _, s in found]) if return_score else docs


_SETUP = threading.Lock()


def _prepare() -> None:
    """Before each question (two may start at once): tiktoken pointed at a local
    ``cl100k_base`` (FlashRAG counts prompt tokens with it), FlashRAG quieted, and FlashRAG's
    one background event loop, which runs every generator's requests, started once."""
    with _SETUP:
        tiktoken_cache_dir()
        _quiet()
        from flashrag.generator.openai_generator import get_background_loop

        get_background_loop()


INSTALL = PeerInstall(
    # the modules the pipelines import (imported before a run's first question), and what
    # FlashRAG needs that hoptree does not bring, so a missing one is named before any question
    ("flashrag.pipeline", "flashrag.config", "datasets", "termcolor", "tiktoken"),
    f"FlashRAG 0.3.0dev0 (RUC-NLPIR/FlashRAG at commit {FLASHRAG_COMMIT}, not on PyPI) "
    'without its requirements, and pip install "hoptree[peers]"',
    _prepare,
)


@functools.cache
def _quiet() -> None:
    """FlashRAG's prints (every prompt sent) and per-call progress bars, silenced in its own
    modules; its warning that the served model is not a tiktoken model, silenced."""

    def no_print(*args: Any, **kwargs: Any) -> None:
        return None

    def no_bar(iterable: Iterable[Any], *args: Any, **kwargs: Any) -> Iterable[Any]:
        return iterable

    for name in _QUIET_MODULES:
        module = importlib.import_module(name)
        module.print = no_print  # type: ignore[attr-defined]
        if hasattr(module, "tqdm"):
            module.tqdm = no_bar  # type: ignore[attr-defined]
    warnings.filterwarnings("ignore", message="This model is not supported by tiktoken")


@functools.cache
def _generator_class() -> type:
    """FlashRAG's ``OpenaiGenerator`` with its bugs worked around (defined on first use:
    FlashRAG is optional)."""
    from flashrag.generator.openai_generator import OpenaiGenerator

    class PeerGenerator(OpenaiGenerator):  # type: ignore[misc]
        """``replies`` keeps the server's text of every call, in order; ``restore_stop``
        says whether FlashRAG's appended ``stop[0]`` is passed on (see the module)."""

        def __init__(self, config: Any, *, restore_stop: bool) -> None:
            super().__init__(config)
            self.restore_stop = restore_stop
            self.replies: list[str] = []
            self._last: list[str] = []

        async def _get_batch_response(
            self, input_list: list[Any], batch_size: int, mode: str, **params: Any
        ) -> list[Any]:
            results = await super()._get_batch_response(input_list, batch_size, mode, **params)
            self._last = [(r.message.content if mode == "chat" else r.text) or "" for r in results]
            return results

        def generate(
            self,
            input_list: Any,
            batch_size: int | None = None,
            return_scores: bool = False,
            **params: Any,
        ) -> Any:
            # bug: Self-Ask passes a plain string, which the generator would send one
            # request per character
            if isinstance(input_list, str):
                input_list = [input_list]
            # bug: IRCoT calls generate([]) once every question is answered (IndexError)
            if not input_list:
                return ([], []) if return_scores else []
            out = super().generate(input_list, batch_size, return_scores, **params)
            self.replies.extend(self._last)
            # bug: every reply gets stop[0] appended (kept for IRCoT only: see the module)
            if self.restore_stop:
                return out
            return (list(self._last), out[1]) if return_scores else list(self._last)

        def close(self) -> None:
            from flashrag.generator.openai_generator import get_background_loop

            loop = get_background_loop()
            asyncio.run_coroutine_threadsafe(self.client.close(), loop).result(timeout=10)

    return PeerGenerator


def _config(q: PeerQuestion, save_dir: str) -> Any:
    from flashrag.config import Config

    return Config(
        config_dict={
            "framework": "openai",
            "generator_model": q.model,
            "openai_setting": {
                "base_url": q.base_url,
                "api_key": q.api_key,
                "timeout": q.timeout_s,
            },
            "generation_params": {"max_tokens": q.max_tokens, "temperature": 0},
            "generator_max_input_len": NO_TRUNCATION,
            "retrieval_topk": q.k,
            "retrieval_method": "bm25",  # a label: the retriever is hoptree's, injected
            "dataset_name": "hoptree",
            "metrics": [],
            "save_dir": save_dir,
            "disable_save": True,
            "save_intermediate_data": False,
            "save_metric_score": False,
            "gpu_id": None,
        }
    )


def strip_stops(text: str, stops: Iterable[str]) -> str:
    """``text`` without the stop words FlashRAG appended at its end (a server never returns
    the stop word it stopped at, so one there is FlashRAG's)."""
    words = [s for s in stops if s.strip()]
    text = text.strip()
    while any(text.endswith(w) for w in words):
        text = next(text.removesuffix(w) for w in words if text.endswith(w)).strip()
    return text


@dataclass(frozen=True)
class _Method:
    """One FlashRAG pipeline as a peer: how to build it around the config, the retriever and
    the generator, its stop words, and whether the generator passes on the appended stop."""

    build: Callable[[Any, FlashRAGRetriever, Any], Any]
    stops: tuple[str, ...] = ()
    restore_stop: bool = True

    def run(self, q: PeerQuestion) -> PeerAnswer:
        _prepare()
        from flashrag.dataset import Dataset

        with tempfile.TemporaryDirectory(prefix="hoptree-flashrag-") as save_dir:
            config = _config(q, save_dir)
            generator = _generator_class()(config, restore_stop=self.restore_stop)
            try:
                pipeline = self.build(config, FlashRAGRetriever(q.retrieve, q.k), generator)
                dataset = Dataset(config, data=[{"id": "q", "question": q.question}])
                item = pipeline.run(dataset, do_eval=False)[0]
            finally:
                generator.close()
        raw = str(item.output.get("raw_pred", item.output.get("pred", "")))
        return PeerAnswer(
            strip_stops(str(item.output.get("pred", "")), self.stops),
            raw=raw,
            details={"iterations": len(generator.replies), "replies": generator.replies},
        )


def _standard(config: Any, retriever: FlashRAGRetriever, generator: Any) -> Any:
    from flashrag.pipeline import SequentialPipeline

    return SequentialPipeline(config, retriever=retriever, generator=generator)


def _ircot(config: Any, retriever: FlashRAGRetriever, generator: Any) -> Any:
    from flashrag.pipeline import IRCOTPipeline

    return IRCOTPipeline(config, max_iter=IRCOT_MAX_ITER, retriever=retriever, generator=generator)


def _iter_retgen(config: Any, retriever: FlashRAGRetriever, generator: Any) -> Any:
    from flashrag.pipeline import IterativePipeline

    return IterativePipeline(
        config, iter_num=ITER_RETGEN_ITERS, retriever=retriever, generator=generator
    )


def _self_ask(config: Any, retriever: FlashRAGRetriever, generator: Any) -> Any:
    from flashrag.pipeline import SelfAskPipeline

    return SelfAskPipeline(
        config,
        max_iter=SELF_ASK_MAX_ITER,
        single_hop=False,
        retriever=retriever,
        generator=generator,
    )


PEERS: list[Peer] = [
    peer(
        "peer-standard",
        "FlashRAG's standard RAG (SequentialPipeline): one search, one call",
        INSTALL,
        _Method(_standard).run,
    ),
    peer(
        "peer-ircot",
        f"FlashRAG's IRCoT: a thought per call, each searched, at most {IRCOT_MAX_ITER} calls",
        INSTALL,
        _Method(_ircot, stops=_IRCOT_STOPS).run,
    ),
    peer(
        "peer-iter-retgen",
        f"FlashRAG's Iter-RetGen: {ITER_RETGEN_ITERS} rounds of search with the last answer",
        INSTALL,
        _Method(_iter_retgen).run,
    ),
    peer(
        "peer-self-ask",
        f"FlashRAG's Self-Ask: follow-up questions, each searched, at most {SELF_ASK_MAX_ITER}"
        " calls",
        INSTALL,
        _Method(_self_ask, stops=_SELF_ASK_STOPS, restore_stop=False).run,
    ),
]
