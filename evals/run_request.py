"""One ``hoptree eval run``: its options checked before any model starts, then the models
opened, the runner for the file's kind (question files: ``evals.runner``; QuALITY:
``evals.quality.runner``) run, and the models closed.

The command line only parses and prints (``evals.cli``); everything it asks for is here, so a
typo in a pipeline name or a wrong directory costs milliseconds, not a model load, whichever
surface starts the run. The heavy parts (the model runtime, the retrievers' errors) are
imported when a run starts, so ``hoptree eval --help`` loads none of them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agent.settings import Settings
from evals.catalogue import get_pipeline
from evals.datasets import DatasetError, resolve_format
from evals.pipelines import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_K,
    EvalContext,
    PipelineError,
)
from evals.quality.pipelines import get_quality_pipeline
from evals.run_directory import EvalRunError, RunConfig
from evals.runner import check_config, write_metrics_only

MIN_PASSAGE_CHARS = 20  # shorter than a name and its sentence: nothing left to read
MIN_CONTEXT_TOKENS = 100  # ``EvalContext`` refuses less too
# what bad input raises before a model starts: one line and exit status 2 on the command line
INPUT_ERRORS: tuple[type[Exception], ...] = (EvalRunError, PipelineError, DatasetError)


class ModelStartError(RuntimeError):
    """The chat model did not start (a missing GGUF, an unreachable endpoint)."""


@dataclass(frozen=True)
class RunRequest:
    """What ``hoptree eval run`` was asked: the run directory's ``RunConfig`` and the reader's
    options, which are not part of a run's identity (``-k``, ``--passage-chars``,
    ``--context-tokens``)."""

    config: RunConfig
    k: int = DEFAULT_K
    passage_chars: int | None = None
    context_tokens: int = DEFAULT_CONTEXT_TOKENS

    @property
    def quality(self) -> bool:
        """A QuALITY file (multiple choice over long articles), not a question file."""
        return resolve_format(self.config.dataset, self.config.fmt) == "quality"

    def check(self, *, metrics_only: bool = False) -> bool:
        """Everything checkable without a model, in the order a user fixes it; raises one of
        ``INPUT_ERRORS``. Returns whether the file is a QuALITY file."""
        config = self.config
        config.check()
        quality = self.quality
        if quality:
            from evals.quality.data import load_articles
            from evals.quality.runner import check_config as check_quality_config

            get_quality_pipeline(config.pipeline)
            check_quality_config(config)
            load_articles(config.dataset)
        else:
            get_pipeline(config.pipeline)
            check_config(config)
        short = self.passage_chars is not None and self.passage_chars < MIN_PASSAGE_CHARS
        if self.k < 1 or short:
            raise EvalRunError(f"-k must be >= 1 and --passage-chars >= {MIN_PASSAGE_CHARS}")
        if self.context_tokens < MIN_CONTEXT_TOKENS:
            raise EvalRunError(f"--context-tokens must be >= {MIN_CONTEXT_TOKENS}")
        if metrics_only and quality:
            raise EvalRunError("--metrics-only: QuALITY runs are not supported")
        return quality

    def metrics_only(self) -> dict[str, Any]:
        """``--metrics-only``: the metrics rewritten over the finished rows; no model."""
        return write_metrics_only(self.config)

    def run(self, settings: Settings) -> dict[str, Any]:
        """Start the models (``ModelStartError`` if the chat model does not), run what is not
        finished, close the models; returns the metrics. A corpus, index or embedding model
        that cannot be used raises one of ``run_errors()``."""
        from agent.indexing import build_progress
        from agent.progress import byte_progress
        from agent.runtime.runtime import Runtime

        runtime = None
        try:
            with byte_progress("joining the local model") as joining:
                runtime = Runtime(settings, progress=joining)
                chat = runtime.chat  # starts the embedded model, if that is the one configured
        except Exception as exc:
            if runtime is not None:
                runtime.close()
            raise ModelStartError(str(exc)) from exc
        try:
            context = EvalContext(
                chat=chat.model,
                settings=settings,
                embeddings=runtime.embeddings,
                model_label=chat.label,
                k=self.k,
                passage_chars=self.passage_chars,
                context_tokens=self.context_tokens,
            )
            if self.quality:
                from evals.quality.runner import run_quality

                return asyncio.run(run_quality(self.config, context))
            from evals.runner import run_eval

            return asyncio.run(run_eval(self.config, context, index_progress=build_progress))
        finally:
            runtime.close()


def run_errors() -> tuple[type[Exception], ...]:
    """What a started run raises for a corpus, an index or a model it cannot use: reported as
    bad input (exit 2), not as a crash."""
    from agent.runtime.embeddings import EmbeddingModelError
    from evals.corpora import CorpusSetupError
    from searchers.corpus import CorpusError
    from searchers.registry import SearcherRegistryError
    from searchers.retrieval import RetrievalError

    return (
        *INPUT_ERRORS,
        CorpusSetupError,
        CorpusError,
        SearcherRegistryError,
        RetrievalError,
        EmbeddingModelError,
    )
