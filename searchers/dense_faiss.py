"""Dense retriever on FAISS: cosine similarity over injected embeddings.

Exact inner product (``IndexFlatIP``) is the default: at 100k MiniLM vectors a brute-force query
is a few milliseconds, and it needs no tuning. ``IndexHNSWFlat`` (inner-product metric) is the
option for corpora large enough for that to matter. Either way row ``i`` of the FAISS index is
``ids[i]``: FAISS only knows int64 labels, and a positional id array keeps both index kinds (HNSW
has no id map of its own) and appending simple.

Vectors are L2-normalized before they enter FAISS, so the inner product is the cosine whatever the
injected ``Embeddings`` does. Passage bodies live in a shared id -> ``Passage`` mapping (the index
directory's passage store); this index stores vectors and ids only.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np
from langchain_core.embeddings import Embeddings

from searchers.passages import Hit, Passage
from searchers.retrieval import RetrievalError

DenseKind = Literal["flat", "hnsw"]
PassageText = Literal["title+text", "text"]  # what a passage's vector embeds

INDEX_FILE = "index.faiss"
IDS_FILE = "ids.json"
CONFIG_FILE = "config.json"

log = logging.getLogger(__name__)
DEFAULT_BATCH = 256


@dataclass(frozen=True)
class DenseConfig:
    dimension: int
    kind: DenseKind = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 256  # recall@10 vs exact 0.92 at 100k (128: 0.84)
    # What is embedded for a passage; recorded so a reopened index embeds appended passages the
    # same way it embedded the first ones.
    passage_text: PassageText = "title+text"

    def __post_init__(self) -> None:
        if self.dimension <= 0:
            raise ValueError(f"dimension must be positive, got {self.dimension}")
        if self.kind not in ("flat", "hnsw"):
            raise ValueError(f"dense index kind must be 'flat' or 'hnsw', got {self.kind!r}")


def passage_embedding_text(passage: Passage, mode: str = "title+text") -> str:
    """Title and body, as DPR does: titles carry the entity names multi-hop questions mention."""
    if mode == "text" or not passage.title or passage.text.startswith(passage.title):
        return passage.text
    return f"{passage.title}\n{passage.text}"


def embed_texts(embeddings: Embeddings, texts: list[str]) -> np.ndarray:
    """float32 unit rows; the fast numpy path when the embeddings object offers one."""
    embed_array = getattr(embeddings, "embed_array", None)
    if callable(embed_array):
        vectors = np.asarray(embed_array(texts), dtype=np.float32)
    else:
        vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise RetrievalError(f"embeddings returned shape {vectors.shape} for {len(texts)} texts")
    vectors = np.ascontiguousarray(vectors)
    faiss.normalize_L2(vectors)
    return vectors


def _new_faiss_index(config: DenseConfig) -> faiss.Index:
    if config.kind == "hnsw":
        index = faiss.IndexHNSWFlat(config.dimension, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = config.hnsw_ef_construction
        index.hnsw.efSearch = config.hnsw_ef_search
        return index
    return faiss.IndexFlatIP(config.dimension)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class FaissDenseIndex:
    """Satisfies ``searchers.retrieval.Retriever``; ``retriever="dense"``, score = cosine."""

    name = "dense"

    def __init__(
        self,
        config: DenseConfig,
        embeddings: Embeddings,
        passages: MutableMapping[str, Passage] | None = None,
        *,
        index: faiss.Index | None = None,
        ids: list[str] | None = None,
    ) -> None:
        self.config = config
        self.embeddings = embeddings
        self._passages: MutableMapping[str, Passage] = passages if passages is not None else {}
        self._index = index if index is not None else _new_faiss_index(config)
        self._ids: list[str] = list(ids or [])
        if self._index.ntotal != len(self._ids):
            raise RetrievalError(
                f"dense index holds {self._index.ntotal} vectors but {len(self._ids)} ids"
            )
        if self._index.d != config.dimension:
            raise RetrievalError(
                f"dense index dimension {self._index.d} != configured {config.dimension}"
            )
        self._id_set = set(self._ids)
        # set by ``IndexDir.dense``: where this index was loaded from, and how to load the
        # index's live one once a build has replaced (and deleted) that directory
        self.source_path: Path | None = None
        self.reopen: Callable[[], FaissDenseIndex] | None = None
        self._follow_lock = threading.Lock()

    def _follow(self) -> None:
        """Adopt the index's new generation when a build deleted the one this was loaded from
        (a long-running server): one ``is_dir`` per lookup, a reload only after a commit. If
        the new one cannot be loaded, the vectors in memory keep answering."""
        if self.reopen is None or self.source_path is None or self.source_path.is_dir():
            return
        with self._follow_lock:
            if self.source_path.is_dir():
                return
            try:
                live = self.reopen()
            except (RetrievalError, OSError, ValueError) as exc:
                log.warning("cannot follow %s to the new generation: %s", self.source_path, exc)
                self.reopen = None
                return
            log.info("dense index %s replaced by a newer build", self.source_path)
            self.config, self._passages = live.config, live._passages
            self._index, self._ids, self._id_set = live._index, live._ids, live._id_set
            self.source_path = live.source_path

    # ------------------------------------------------------------------ persistence

    @classmethod
    def load(
        cls,
        path: Path,
        embeddings: Embeddings,
        passages: MutableMapping[str, Passage] | None = None,
    ) -> FaissDenseIndex:
        path = Path(path)
        try:
            config = DenseConfig(**json.loads((path / CONFIG_FILE).read_text()))
            ids = json.loads((path / IDS_FILE).read_text())
            index = faiss.read_index(str(path / INDEX_FILE))
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            raise RetrievalError(f"cannot open dense index at {path}: {exc}") from exc
        return cls(config, embeddings, passages, index=index, ids=ids)

    def save(self, path: Path) -> None:
        """Each file is replaced atomically; the index directory makes the set atomic."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        _write_atomic(path / CONFIG_FILE, json.dumps(asdict(self.config), indent=2).encode())
        _write_atomic(path / IDS_FILE, json.dumps(self._ids).encode())
        tmp = path / f".{INDEX_FILE}.tmp"
        faiss.write_index(self._index, str(tmp))
        os.replace(tmp, path / INDEX_FILE)

    # ------------------------------------------------------------------ writing

    def add(
        self,
        passages: Iterable[Passage],
        *,
        progress: Callable[[int], None] | None = None,
        batch_size: int = DEFAULT_BATCH,
        vectors: np.ndarray | None = None,
    ) -> int:
        """Embed and add passages whose id is new; returns how many were added.

        ``progress`` receives the running count of passages embedded, after every batch (it may
        raise to abort: what was added so far stays in memory, nothing is saved). ``vectors``
        supplies precomputed rows aligned with ``passages`` (benchmarks cache them).
        """
        fresh: list[tuple[int, Passage]] = []
        seen: set[str] = set()
        for position, passage in enumerate(passages):
            if passage.id in self._id_set or passage.id in seen:
                continue
            seen.add(passage.id)
            fresh.append((position, passage))
        if vectors is not None and len(fresh) and vectors.shape[1] != self.config.dimension:
            raise RetrievalError(
                f"precomputed vectors have dimension {vectors.shape[1]}, "
                f"index has {self.config.dimension}"
            )
        done = 0
        for start in range(0, len(fresh), max(1, batch_size)):
            batch = fresh[start : start + batch_size]
            if vectors is not None:
                rows = np.ascontiguousarray(vectors[[pos for pos, _ in batch]], dtype=np.float32)
                faiss.normalize_L2(rows)
            else:
                texts = [passage_embedding_text(p, self.config.passage_text) for _, p in batch]
                rows = embed_texts(self.embeddings, texts)
            if rows.shape[1] != self.config.dimension:
                raise RetrievalError(
                    f"the embedding model gives {rows.shape[1]}-dimensional vectors but this "
                    f"dense index holds {self.config.dimension}-dimensional ones"
                )
            self._index.add(rows)
            for _, passage in batch:
                self._ids.append(passage.id)
                self._id_set.add(passage.id)
                if passage.id not in self._passages:
                    self._passages[passage.id] = passage
            done += len(batch)
            if progress is not None:
                progress(done)
        return done

    def remove(self, passage_ids: Iterable[str]) -> int:
        """Drop the vectors of ``passage_ids``; returns how many were there.

        The index is rebuilt from the kept rows' stored vectors (FAISS ``reconstruct_n``), in
        their order, rather than with ``remove_ids``: HNSW cannot delete, and rows must stay
        aligned with ``ids``. Nothing is re-embedded, so a removal costs no model time."""
        drop = {pid for pid in passage_ids if pid in self._id_set}
        if not drop:
            return 0
        keep = [row for row, pid in enumerate(self._ids) if pid not in drop]
        fresh = _new_faiss_index(self.config)
        if keep:
            vectors = self._index.reconstruct_n(0, self._index.ntotal)
            fresh.add(np.ascontiguousarray(vectors[keep], dtype=np.float32))
        self._index = fresh
        self._ids = [self._ids[row] for row in keep]
        self._id_set = set(self._ids)
        return len(drop)

    # ------------------------------------------------------------------ reading

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        self._follow()
        if k <= 0 or not query.strip() or not self._ids:
            return []
        vector = embed_texts(self.embeddings, [query])
        return self.retrieve_vector(vector[0], k)

    def retrieve_vector(
        self, vector: np.ndarray, k: int = 10, *, ef_search: int | None = None
    ) -> list[Hit]:
        """Search with a ready query vector (HyDE averages pseudo-documents, benchmarks batch).

        ``ef_search`` widens (or narrows) one HNSW search without touching the shared index;
        the flat index ignores it.
        """
        self._follow()
        if k <= 0 or not self._ids:
            return []
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        if query.shape[1] != self.config.dimension:
            raise RetrievalError(
                f"query vector has dimension {query.shape[1]}, index has {self.config.dimension}"
            )
        faiss.normalize_L2(query)
        k = min(k, len(self._ids))
        kwargs: dict[str, Any] = {}
        if self.config.kind == "hnsw":
            # per-call parameters: mutating index.hnsw.efSearch would race between threads
            ef = max(ef_search or self.config.hnsw_ef_search, k)
            kwargs["params"] = faiss.SearchParametersHNSW(efSearch=ef)
        scores, rows = self._index.search(query, k, **kwargs)
        hits: list[Hit] = []
        for score, row in zip(scores[0], rows[0], strict=True):
            if row < 0:
                continue
            passage_id = self._ids[int(row)]
            passage = self._passages.get(passage_id)
            if passage is None:
                raise RetrievalError(
                    f"dense index names passage {passage_id!r} that the passage store lacks"
                )
            hits.append(Hit(passage=passage, score=float(score), retriever=self.name))
        return hits

    def get(self, passage_id: str) -> Passage | None:
        self._follow()
        return self._passages.get(passage_id) if passage_id in self._id_set else None

    def __len__(self) -> int:
        self._follow()
        return len(self._ids)

    def __contains__(self, passage_id: object) -> bool:
        return passage_id in self._id_set

    def ids(self) -> list[str]:
        """Ids in FAISS row order."""
        return list(self._ids)
