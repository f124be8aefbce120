"""One corpus per QuALITY article: its leaf chunks as an index, and its RAPTOR trees.

A QuALITY question is about one article, so each article is searched on its own, as RAPTOR
did: the passages are the tree's leaves (~100-token chunks that never cut a sentence, the same
function and settings as ``tree.build`` makes them, with the same ids ``<article>#<n>``), so
``leaves``, ``bm25`` and the collapsed tree search the same text and the tree adds exactly its
summaries. Everything is cached under ``<data_dir>/eval-indexes/quality/<article>-<digest>/``,
keyed by the article's text and the chunk size:

- ``leaves.jsonl`` and ``leaf-index/``: the hoptree index (tantivy + FAISS) of the leaves, each
  leaf's vector embedding its text alone, as the tree embeds its nodes (an index embeds title
  and text by default; one shared article title on every leaf moved ``leaves``' ranking away
  from the tree's own leaf ranking, so "tree minus leaves" measured more than the summaries.
  The ``index/`` of runs before that is left alone and no longer read);
- ``tree-<clustering>-<digest of the tree settings>/``: one tree per clustering method, built
  the way ``hoptree tree build`` builds one (journal, build lock, atomic store), so a killed
  build resumes where it stopped and every later run, of any pipeline, reuses the tree.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from agent.indexing import build as build_index
from agent.settings import Settings
from evals.corpora import EVAL_INDEX_SUBDIR, Corpus, CorpusSetupError, open_corpus
from evals.quality.data import Article
from evals.quality.report import entry_key, variant_label
from searchers.passages import Passage
from tree.build import ProgressFn, TreeBuilder, TreeBuildError, TreeConfig
from tree.clustering import GMMClusterer, LeidenClusterer
from tree.journal import BuildJournal
from tree.leaves import DEFAULT_CHUNK_TOKENS, chunk_text
from tree.report import tree_report
from tree.retrieval import TreeRetriever
from tree.store import (
    JOURNAL_FILE,
    Tree,
    TreeStoreError,
    build_lock,
    load_tree,
    save_tree,
    tree_exists,
)
from tree.tokens import approx_token_count

QUALITY_SUBDIR = "quality"
LEAVES_FILE = "leaves.jsonl"
INDEX_SUBDIR = "leaf-index"
LEAF_EMBEDDING = "text"  # what a leaf's vector embeds, in the index as in the tree
CLUSTERINGS = ("gmm", "leiden")
MIN_SUMMARY_TIMEOUT_S = 300.0  # a cluster's summary on the busy 2-core machine


def _digest(data: Any, size: int = 12) -> str:
    payload = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:size]


def article_dir(settings: Settings, article: Article) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", article.id)[:40] or "article"
    key = _digest({"article": article.sha256, "chunk_tokens": DEFAULT_CHUNK_TOKENS})
    return settings.data_dir / EVAL_INDEX_SUBDIR / QUALITY_SUBDIR / f"{slug}-{key}"


def leaf_passages(article: Article) -> list[Passage]:
    """The tree's layer 0, as passages: ``TreeBuilder`` chunks ``document().text`` with the same
    function, size and token counter and names leaf n ``<article>#<n>``."""
    leaves = chunk_text(article.text, DEFAULT_CHUNK_TOKENS, approx_token_count)
    return [
        Passage(
            id=f"{article.id}#{n}",
            title=article.title,
            text=leaf.text,
            metadata={"layer": 0, "position": n, "tokens": leaf.tokens},
        )
        for n, leaf in enumerate(leaves)
    ]


# What a QuALITY tree variant may change (``--tree-option KEY=VALUE``): the tree's own settings
# (``leaves=semantic`` is enhanced RAPTOR's leaf rule) and the named clusterer's parameters.
# Left out: the chunk size (the leaf index the other pipelines search is cut at the default),
# the seed and the run-only knobs.
TREE_KEYS = (
    "leaves",
    "max_words",
    "max_layers",
    "max_cluster_tokens",
    "semantic_threshold",
    "semantic_min_tokens",
    "semantic_max_tokens",
)
_CLUSTERER_FIXED = ("name", "seed", "max_cluster_tokens")
CLUSTERER_KEYS = {
    "gmm": tuple(f.name for f in fields(GMMClusterer) if f.name not in _CLUSTERER_FIXED),
    "leiden": tuple(f.name for f in fields(LeidenClusterer) if f.name not in _CLUSTERER_FIXED),
}


def _option_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_tree_options(items: Sequence[str]) -> dict[str, Any]:
    """``["base_resolution=3", "leaves=semantic"]`` -> ``{"base_resolution": 3, ...}``; numbers
    become numbers. Which keys a clustering accepts is checked by ``tree_config``."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise CorpusSetupError(f"tree option {item!r}: expected KEY=VALUE")
        if key in options:
            raise CorpusSetupError(f"tree option {key!r} given twice")
        options[key] = _option_value(value)
    return options


def tree_config(
    settings: Settings, clustering: str, options: Mapping[str, Any] | None = None
) -> TreeConfig:
    """The tree settings of every QuALITY tree: ``hoptree tree build``'s defaults, with as many
    summaries at once as the model has decoding slots, and ``options`` (``TREE_KEYS`` and the
    clusterer's ``CLUSTERER_KEYS``) changed for a variant."""
    return _config(
        clustering,
        options or {},
        concurrency=settings.llm.local_parallel if settings.llm.embedded else 4,
        call_timeout_s=max(MIN_SUMMARY_TIMEOUT_S, settings.llm.timeout_s),
    )


def check_tree_options(clustering: str, options: Mapping[str, Any]) -> None:
    """Refuse unknown keys and bad values before any model starts."""
    _config(clustering, options, concurrency=1, call_timeout_s=MIN_SUMMARY_TIMEOUT_S)


def _config(
    clustering: str, options: Mapping[str, Any], *, concurrency: int, call_timeout_s: float
) -> TreeConfig:
    if clustering not in CLUSTERINGS:
        raise CorpusSetupError(f"unknown clustering {clustering!r}; expected gmm or leiden")
    known = (*TREE_KEYS, *CLUSTERER_KEYS[clustering])
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise CorpusSetupError(
            f"unknown tree option(s) for {clustering}: {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    shape = {k: v for k, v in options.items() if k in TREE_KEYS}
    clusterer = {k: v for k, v in options.items() if k not in TREE_KEYS}
    try:
        config = TreeConfig(
            clustering=clustering,
            chunk_tokens=DEFAULT_CHUNK_TOKENS,
            concurrency=concurrency,
            call_timeout_s=call_timeout_s,
            clustering_options=clusterer,
            **shape,
        )
        config.shape()  # builds the clusterer: a bad value fails here, not mid-run
    except (TypeError, ValueError) as exc:
        raise CorpusSetupError(f"tree options {variant_label(options)}: {exc}") from exc
    return config


def tree_dir(base: Path, config: TreeConfig) -> Path:
    """Other tree settings, another directory: a tree is never reused for a config it was not
    built with."""
    return base / f"tree-{config.clustering}-{_digest(config.shape(), 8)}"


@dataclass
class ArticleCorpus(Corpus):
    """A ``Corpus`` over one article, with the stats of the tree it searches (if any)."""

    article: Article | None = None
    tree_stats: dict[str, Any] | None = None


def _write_leaves(path: Path, passages: list[Passage]) -> None:
    text = "".join(json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in passages)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def ensure_article_index(
    settings: Settings, article: Article, base: Path, embeddings: Embeddings
) -> Path:
    """Build (or find) the index of the article's leaves; idempotent, as every index build is."""
    leaves = base / LEAVES_FILE
    _write_leaves(leaves, leaf_passages(article))
    index = base / INDEX_SUBDIR
    build_index(
        settings, [leaves], index, fmt="jsonl", embeddings=embeddings, passage_text=LEAF_EMBEDDING
    )
    return index


def tree_key(clustering: str, options: Mapping[str, Any] | None = None) -> str:
    """How reports name a tree: its clustering, and a variant's options in brackets."""
    label = variant_label(options or {})
    return f"{clustering} [{label}]" if label else clustering


def tree_stats(
    tree: Tree, article: Article, clustering: str, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What the issue asks per article and tree: its shape, the summaries' LLM cost (as
    recorded when they were written, so cached rebuilds still report it) and the build time.
    ``build_seconds`` is the run that finished the tree; ``build_timing_complete`` says whether
    that run wrote every summary itself (no resume, no cache), i.e. whether it is a build time."""
    report = tree_report(tree)
    last = report.get("last_build") or {}
    return {
        "article_id": article.id,
        "title": article.title,
        "clustering": clustering,
        "tree": tree_key(clustering, options),
        "options": dict(options or {}),
        "leaves": report["leaves"],
        "layers": report["layers"],
        "summary_nodes": report["summary_nodes"],
        "mean_children": report["mean_children"],
        "compression": report["compression"],
        "fallback_summaries": report["fallback_summaries"],
        "llm_calls": report["llm_calls"],
        "prompt_tokens": report["prompt_tokens"],
        "completion_tokens": report["completion_tokens"],
        "build_seconds": last.get("seconds"),
        "build_timing_complete": not any(
            last.get(k) for k in ("summaries_resumed", "summaries_reused", "llm_cache_hits")
        ),
        "leaf_tokens": report["leaf_tokens"],
    }


async def ensure_tree(
    chat: BaseChatModel,
    embeddings: Embeddings,
    article: Article,
    config: TreeConfig,
    target: Path,
    *,
    embedding_model: str,
    progress: ProgressFn | None = None,
) -> Tree:
    """The article's tree at ``target``: loaded if it exists, else built (resuming a killed
    build from its journal) and stored."""
    if tree_exists(target):
        return await asyncio.to_thread(load_tree, target)
    with build_lock(target):
        if tree_exists(target):  # another run finished it while this one waited to look
            return await asyncio.to_thread(load_tree, target)
        journal = BuildJournal(target / JOURNAL_FILE)
        builder = TreeBuilder(
            chat,
            embeddings,
            config,
            journal=journal,
            progress=progress,
            embedding_model=embedding_model,
        )
        tree = await builder.build([article.document()])
        await asyncio.to_thread(save_tree, tree, target)
        journal.remove()
    return tree


async def prepare_article(
    settings: Settings,
    chat: BaseChatModel,
    embeddings: Embeddings | None,
    article: Article,
    needs: Collection[str],
    *,
    clustering: str | None = None,
    tree_options: Mapping[str, Any] | None = None,
    context_tokens: int,
    progress: ProgressFn | None = None,
) -> ArticleCorpus:
    """The retrievers ``needs`` names over one article: "sparse"/"dense" from its leaf index,
    "tree" from its tree built with ``clustering`` and ``tree_options`` (packed into
    ``context_tokens``)."""
    if embeddings is None:
        raise CorpusSetupError("QuALITY runs embed every article's leaves: no embedding model")
    base = article_dir(settings, article)
    retrievers: dict[str, Any] = {}
    index_needs = [n for n in needs if n in ("sparse", "dense")]
    if index_needs:
        index = await asyncio.to_thread(ensure_article_index, settings, article, base, embeddings)
        opened = await asyncio.to_thread(
            open_corpus, settings, index, index_needs, embeddings=embeddings
        )
        retrievers.update(opened.retrievers)
    stats = None
    if "tree" in needs:
        if clustering is None:
            raise CorpusSetupError("a tree pipeline must name its clustering method")
        config = tree_config(settings, clustering, tree_options)
        try:
            tree = await ensure_tree(
                chat,
                embeddings,
                article,
                config,
                tree_dir(base, config),
                embedding_model=settings.embeddings.model,
                progress=progress,
            )
        except (TreeStoreError, TreeBuildError) as exc:  # e.g. another run builds it now
            raise CorpusSetupError(f"article {article.id}: {exc}") from exc
        retrievers["tree"] = TreeRetriever(tree, embeddings, token_budget=context_tokens)
        stats = tree_stats(tree, article, clustering, tree_options)
    return ArticleCorpus(
        name=f"quality:{article.id}",
        retrievers=retrievers,
        article=article,
        tree_stats=stats,
    )


@dataclass
class TreeLog:
    """Tree stats by (article, tree), kept in a run directory's ``trees.json``. A stored
    tree keeps the stats of the build that made it, so a run that only loads the tree records
    that build's time and cost."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> TreeLog:
        entries: dict[str, dict[str, Any]] = {}
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = []
            for entry in data if isinstance(data, list) else []:
                if isinstance(entry, dict) and "article_id" in entry:
                    entries[entry_key(entry)] = entry
        return cls(path, entries)

    def add(self, stats: dict[str, Any]) -> None:
        self.entries[entry_key(stats)] = stats
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(list(self.entries.values()), indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)
