"""What a question is answered over: the retrievers of the open corpus, or of its own paragraphs.

The data README defines two settings. *Open*: every paragraph of the file (deduplicated by title;
MuSiQue's by title and text) in one index, built once per file and reused by every run on it;
that is the setting that tests the searchers. *Distractor*: each question's own ten or so
paragraphs (MuSiQue: twenty); the index is tiny and built per question, in a temporary
directory (tantivy) and in memory (FAISS), then dropped.

Either way a pipeline sees a ``Corpus``: named retrievers ("sparse", "dense", "tree") plus a
cache for what it builds over them once (searchers, the planner), so the open corpus pays for
building a searcher once per run rather than once per question.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from agent.indexing import build, open_retriever
from agent.settings import Settings
from evals.datasets import EvalQuestion
from searchers.dense_faiss import DenseConfig, FaissDenseIndex
from searchers.index_generation import embedding_dimension
from searchers.passages import Passage
from searchers.retrieval import Retriever
from searchers.sparse_tantivy import TantivySparseIndex
from tree.store import tree_exists

log = logging.getLogger(__name__)

EVAL_INDEX_SUBDIR = "eval-indexes"
TREE_SUBDIR = "tree"  # INDEX/tree, where `hoptree tree build` puts the RAPTOR tree


class CorpusSetupError(RuntimeError):
    """A corpus the requested pipeline cannot run on (no tree, no embeddings)."""


@dataclass
class Corpus:
    name: str  # "open:<index dir>" or "distractor:<question id>"
    retrievers: dict[str, Retriever]
    cache: dict[str, Any] = field(default_factory=dict)


def eval_index_dir(settings: Settings, dataset_sha256: str) -> Path:
    """``<data_dir>/eval-indexes/<sha256 of the file>``: the same bytes, the same index, whatever
    the file is called or wherever it lives; an edited file gets a new one."""
    return settings.data_dir / EVAL_INDEX_SUBDIR / dataset_sha256


def ensure_open_index(
    settings: Settings,
    dataset: Path,
    fmt: str,
    index_dir: Path,
    *,
    embeddings: Embeddings | None = None,
    progress: Any = None,
) -> Path:
    """Build (or finish building) the open index of ``dataset``. Ingest is idempotent by
    passage id and a crashed build leaves the previous generation intact, so calling this on
    every run is cheap once the index exists and repairs it if a build was killed."""
    report = build(
        settings, [dataset], index_dir, fmt=fmt, embeddings=embeddings, progress=progress
    )
    if report.added:
        log.info("open eval index %s: %d passages added", index_dir, report.added)
    return index_dir


def open_corpus(
    settings: Settings,
    index_dir: Path,
    needs: Collection[str],
    *,
    embeddings: Embeddings | None = None,
) -> Corpus:
    """The retrievers named in ``needs`` over an index directory (the embedding model is
    checked against the index before any query is embedded)."""
    retrievers: dict[str, Retriever] = {}
    if "sparse" in needs:
        retrievers["sparse"] = open_retriever(settings, index_dir, "sparse")
    if "dense" in needs:
        retrievers["dense"] = open_retriever(settings, index_dir, "dense", embeddings=embeddings)
    if "tree" in needs:
        tree_dir = index_dir / TREE_SUBDIR
        if not tree_exists(tree_dir):
            raise CorpusSetupError(
                f"this pipeline searches a RAPTOR tree, and {index_dir} has none; build one with "
                f"`hoptree tree build --index {index_dir} SOURCE...` (the dataset file itself "
                "works as SOURCE), then pass --index to the eval run if it is another directory"
            )
        if embeddings is None:
            raise CorpusSetupError("the tree searcher needs the embedding model")
        from tree.retrieval import TreeRetriever

        retrievers["tree"] = TreeRetriever.open(tree_dir, embeddings)
    return Corpus(name=f"open:{index_dir}", retrievers=retrievers)


def question_passages(question: EvalQuestion) -> list[Passage]:
    """A question's own paragraphs with the open index's ids, so hits compare across settings
    (by title for HotpotQA and 2Wiki, by title and text for MuSiQue: ``passage_ids``)."""
    return [
        Passage(id=pid, title=title, text=text, metadata={"distractor": True})
        for pid, (title, text) in zip(question.passage_ids(), question.paragraphs, strict=True)
    ]


def distractor_corpus(
    question: EvalQuestion,
    needs: Collection[str],
    workdir: Path,
    *,
    embeddings: Embeddings | None = None,
    dimension: int | None = None,
) -> Corpus:
    """Retrievers over one question's paragraphs: tantivy in ``workdir`` (the caller removes
    it), FAISS in memory. Synchronous and CPU-bound (a commit, ten embeddings): async callers
    run it in a thread."""
    check_distractor_needs(needs, embeddings)
    passages = question_passages(question)
    retrievers: dict[str, Retriever] = {}
    if "sparse" in needs:
        sparse = TantivySparseIndex.create(Path(workdir) / "sparse")
        sparse.add(passages)
        retrievers["sparse"] = sparse
    if "dense" in needs:
        assert embeddings is not None  # checked above
        dense = FaissDenseIndex(
            DenseConfig(dimension=dimension or embedding_dimension(embeddings)), embeddings
        )
        dense.add(passages)
        retrievers["dense"] = dense
    return Corpus(name=f"distractor:{question.id}", retrievers=retrievers)


def check_distractor_needs(needs: Collection[str], embeddings: Embeddings | None) -> None:
    """Fail before the first question, not at each one."""
    if "tree" in needs:
        raise CorpusSetupError(
            "the distractor setting has no RAPTOR tree (a tree over ten paragraphs would be all "
            "leaves); run tree pipelines in the open setting over an index with a tree"
        )
    if "dense" in needs and embeddings is None:
        raise CorpusSetupError("the dense retriever needs the embedding model")
