"""What the MCP tools reach over one index: the planner, the low-level searchers by registry
name, the raw retrievers, and the passages a cited answer points at.

The MCP server (``agent.serve.mcp_server``) only sees an ``McpBackend``, so its tests can hand it
the real planner over a scripted chat model and a tiny index, while ``open_mcp_backend`` wires the
real thing from settings. Searchers and retrievers are built on first use and kept: a client
that never calls ``retrieve --dense`` never loads the embedding model for it, and one that calls
it twice loads it once. Building happens under a lock because the tools run it in worker
threads (opening FAISS or starting a model must not stall the server's event loop, which also
carries other calls' progress notifications).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.rules.question import MAX_QUESTION_CHARS
from agent.serve.documents import DocumentStore
from agent.service import AgentLike
from agent.settings import DEFAULT_DEADLINE_S
from searchers.passages import Passage
from searchers.registry import SearcherRegistry
from searchers.retrieval import Retriever
from searchers.searcher import DEFAULT_SEARCH_DEADLINE_S, Searcher

if TYPE_CHECKING:
    from agent.runtime.runtime import Runtime
    from agent.settings import Settings

RETRIEVER_ORDER = ("sparse", "dense", "hybrid")  # passage lookups try the cheapest first


@dataclass
class McpBackend:
    """The planner plus lazily built searchers and retrievers over one index.

    ``make_searcher(name)`` and ``make_retriever(kind)`` raise the project's own errors
    (``SearcherRegistryError``, ``RetrievalError``, ``EmbeddingModelError``, ``ValueError``)
    with messages a caller can act on; the tools pass those on as tool errors.
    """

    agent: AgentLike
    registry: SearcherRegistry
    make_searcher: Callable[[str], Searcher]
    make_retriever: Callable[[str], Retriever]
    retriever_kinds: tuple[str, ...] = RETRIEVER_ORDER
    max_question_chars: int = MAX_QUESTION_CHARS
    # one ``ask``, hard, and one ``search``: the planner's and the searcher's own budgets stop
    # them sooner
    deadline_s: float = DEFAULT_DEADLINE_S
    search_timeout_s: float = DEFAULT_SEARCH_DEADLINE_S
    run_slots: int = 2  # ``ask`` runs at once; more wait for a slot
    # the index the agent reads, for the add_document / remove_document tools (None: no tools)
    documents: DocumentStore | None = None
    _searchers: dict[str, Searcher] = field(default_factory=dict, init=False, repr=False)
    _retrievers: dict[str, Retriever] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def searcher(self, name: str) -> Searcher:
        """The stand-alone searcher ``name`` (as ``hoptree search`` runs it), built once."""
        with self._lock:
            if name not in self._searchers:
                self.registry.get(name)  # an unknown name fails with the known ones listed
                self._searchers[name] = self.make_searcher(name)
            return self._searchers[name]

    def retriever(self, kind: str) -> Retriever:
        """The raw retriever ``kind`` (sparse, dense, hybrid), built once."""
        if kind not in self.retriever_kinds:
            raise ValueError(
                f"no retriever named {kind!r}; known: {', '.join(self.retriever_kinds)}"
            )
        with self._lock:
            if kind not in self._retrievers:
                self._retrievers[kind] = self.make_retriever(kind)
            return self._retrievers[kind]

    def passage(self, passage_id: str) -> Passage | None:
        """The indexed passage ``passage_id``, from the first retriever that opens: every
        retriever of an index holds all its passages, and the sparse one answers without
        loading an embedding model. None when the index has no such passage."""
        problems = []
        for kind in self.retriever_kinds:
            try:
                retriever = self.retriever(kind)
            except Exception as exc:  # this index lacks it; another may serve
                problems.append(f"{kind}: {exc}")
                continue
            return retriever.get(passage_id)
        raise LookupError("no retriever of this index could be opened: " + "; ".join(problems))


def _make_searcher(
    runtime: Runtime, index_dir: Path, registry: SearcherRegistry
) -> Callable[[str], Searcher]:
    from agent.searching import create_searcher

    def make(name: str) -> Searcher:
        return create_searcher(runtime, index_dir, name, registry)

    return make


def _make_retriever(
    settings: Settings, runtime: Runtime, index_dir: Path
) -> Callable[[str], Retriever]:
    from agent.indexing import open_retriever

    def make(kind: str) -> Retriever:
        embeddings = None if kind == "sparse" else runtime.embeddings
        return open_retriever(settings, index_dir, kind, embeddings=embeddings)

    return make


@contextlib.asynccontextmanager
async def open_mcp_backend(
    settings: Settings, index_dir: Path, *, progress: Any = None
) -> AsyncIterator[McpBackend]:
    """The real backend: the planner with conversation threads (as ``hoptree serve`` opens it)
    and, over the same models, the registry's searchers and the index's retrievers."""
    from agent.hoptree_agent import open_agent
    from agent.runtime.runtime import Runtime
    from searchers.registry import default_registry

    with Runtime(settings, progress=progress) as runtime:
        async with open_agent(settings, index_dir, threads=True, runtime=runtime) as agent:
            registry = default_registry()
            yield McpBackend(
                agent=agent,
                registry=registry,
                make_searcher=_make_searcher(runtime, index_dir, registry),
                make_retriever=_make_retriever(settings, runtime, index_dir),
                max_question_chars=settings.server.max_question_chars,
                deadline_s=settings.server.request_deadline_s,
                search_timeout_s=settings.budgets.searcher_deadline_s + settings.llm.timeout_s,
                run_slots=settings.run_slots(),
                documents=DocumentStore(settings, index_dir),
            )
