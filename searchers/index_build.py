"""Building an index directory: read sources, write a new generation beside the live one,
then commit it by replacing the manifest (``searchers.index_dir`` describes the layout and why
generations make a crashed build harmless). Ingestion, not search: a searcher only reads what
this wrote, through ``IndexDir``.

This module decides what the new generation holds (which sources are read again, which passages
are new, which leave with a changed or removed source, the owners map, the tree's staleness) and
commits it; ``searchers.index_generation`` writes its files (passage store, tantivy, FAISS)."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from searchers.chunking import DEFAULT_MAX_TOKENS
from searchers.index_dir import (
    FORMAT_NAME,
    FORMAT_VERSION,
    GENERATION_PREFIX,
    LOCK_FILE,
    MANIFEST,
    PASSAGES_FILE,
    IndexDirError,
    IndexLockedError,
    Owners,
    PassageStore,
    check_embedding_model,
    load_owners,
    now_iso,
    read_manifest,
    stale_tree,
    tree_version,
    write_json_atomic,
)
from searchers.index_generation import (
    BuildProgress,
    DenseOptions,
    generation_dirs,
    sweep_owners,
    write_generation,
    write_owners,
)
from searchers.locks import LockBusyError, exclusive_lock
from searchers.passages import Passage
from searchers.source_reading import (
    FailedSource,
    SourceChange,
    SourceRead,
    SourceReport,
    SourceSpec,
    read_sources,
    source_key,
)

__all__ = [  # the names other modules import from here, wherever they are defined
    "BuildReport",
    "FailedSource",
    "RemovedSource",
    "SourceChange",
    "SourceReport",
    "SourceSpec",
    "UnknownSourceError",
    "build_index",
]


@dataclass(frozen=True)
class RemovedSource:
    """A source that left the index (``index remove``, or gone from a synced folder)."""

    path: str
    name: str
    removed: int  # its passages that left the index (those another source also gave stay)


@dataclass
class BuildReport:
    path: str
    changed: bool
    added: int
    total: int
    generation: int
    sources: list[SourceReport]
    seconds: float = 0.0
    # files not read (the caller adds a folder's unsupported files to those that failed here)
    failed: list[FailedSource] = field(default_factory=list)
    # what a folder held that is never a source: index and tree stores, hidden, .hoptreeignore'd
    skipped: list[dict[str, Any]] = field(default_factory=list)
    removed: int = 0  # passages that left the index (changed and removed sources)
    removed_sources: list[RemovedSource] = field(default_factory=list)
    # the index's tree (INDEX/tree) still summarises text that changed: rebuild it
    tree_stale: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class UnknownSourceError(IndexDirError):
    """``remove`` named a path that is not (and holds no) source of the index."""


@contextlib.contextmanager
def _build_lock(path: Path, timeout_s: float) -> Iterator[None]:
    """DIR/.lock, held for the whole build; a second build waits ``timeout_s``, then is
    refused with the holder's pid."""
    try:
        with exclusive_lock(path / LOCK_FILE, timeout_s=timeout_s):
            yield
    except LockBusyError as exc:
        raise IndexLockedError(
            f"another build (pid {exc.holder}) is writing {path}; wait for it to finish"
        ) from None


def _check_target(path: Path) -> None:
    """Refuse to turn an unrelated non-empty directory into an index."""
    if (path / MANIFEST).exists():
        return
    allowed = {LOCK_FILE, f".{MANIFEST}.tmp"}
    strangers = [
        p.name
        for p in path.iterdir()
        if p.name not in allowed and not p.name.startswith(GENERATION_PREFIX)
    ]
    if strangers:
        raise IndexDirError(
            f"{path} is not empty and holds no {MANIFEST} "
            f"(found {', '.join(sorted(strangers)[:5])}); choose an empty or new directory"
        )


def _backends_entry(old: dict[str, Any] | None, embeddings: Embeddings) -> dict[str, Any]:
    """``{"backends": [...]}``: every embedding backend whose vectors are in the index (an
    append may use another backend than the first build; they are interchangeable within the
    tolerance measured in benchmarks/results/embeddings.md, but the index says so)."""
    backends = set((old or {}).get("embedding", {}).get("backends", []))
    backend = getattr(embeddings, "backend", None)
    if isinstance(backend, str):
        backends.add(backend)
    return {"backends": sorted(backends)} if backends else {}


def build_index(
    path: Path,
    sources: Sequence[SourceSpec],
    *,
    embeddings: Embeddings,
    embedding_model: str,
    dense: DenseOptions | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    rebuild: bool = False,
    remove: Sequence[Path] = (),
    sync_roots: Sequence[Path] = (),
    unlisted: Sequence[Path] = (),
    progress: BuildProgress | None = None,
    lock_timeout_s: float = 0.0,
) -> BuildReport:
    """Make the index at ``path`` hold ``sources``: create, append, replace what changed, or
    (``rebuild``) start over.

    A file indexed before with the same checksum is not read again. A file whose content changed
    replaces its passages: those its new content no longer gives leave the sparse, dense and
    passage stores (unless another source gives them too). ``remove`` drops the recorded sources
    at or under those paths (``UnknownSourceError`` before anything is written when a path
    matches none); ``sync_roots`` drops the recorded sources under those folders that are not
    among ``sources`` (a folder made to match the disk), except those at or under ``unlisted``
    (a folder that could not be listed this time keeps its files' passages, as a file that
    could not be read does). When nothing is new and nothing left,
    no generation is written (only the manifest and the owners file, if they changed).
    """
    started = time.monotonic()
    path = Path(path)
    report_progress: BuildProgress = progress or (lambda stage, done, total: None)
    if path.exists() and not path.is_dir():
        raise IndexDirError(f"{path} is a file, not an index directory")
    path.mkdir(parents=True, exist_ok=True)
    with _build_lock(path, lock_timeout_s):
        _check_target(path)
        old = None if not (path / MANIFEST).exists() else read_manifest(path)
        if old is not None and not rebuild:
            check_embedding_model(old, embedding_model, None, path)
        live = path / old["data_dir"] if old is not None else None
        for stale in generation_dirs(path):
            if stale != live:
                shutil.rmtree(stale, ignore_errors=True)  # debris of a crashed build

        base = live if (live is not None and not rebuild) else None
        store = PassageStore.load(base / PASSAGES_FILE) if base is not None else PassageStore()
        recorded: dict[str, dict[str, Any]] = (
            {} if (old is None or base is None) else {e["path"]: e for e in old["sources"]}
        )
        owners = load_owners(base, old, store) if (base is not None and old is not None) else {}
        gone = _sources_to_remove(recorded, remove, sync_roots, sources, unlisted)  # may refuse
        same_chunking = old is not None and old.get("chunking", {}).get("max_tokens") == max_tokens
        reads, failed = read_sources(
            sources, recorded, owners if same_chunking else {}, max_tokens, report_progress
        )

        new_owners: Owners = {p: ids for p, ids in owners.items() if p not in gone}
        for read in reads:
            new_owners[read.report.path] = read.ids
        owned_before = {pid for ids in owners.values() for pid in ids}
        owned_after = {pid for ids in new_owners.values() for pid in ids}
        dropped = {pid for pid in store if pid in owned_before and pid not in owned_after}
        new = _new_passages(reads, set(store))
        _count_removed(reads, owners, dropped)

        reports = [read.report for read in reads]
        removed_sources = [
            RemovedSource(p, Path(p).name, len(set(owners.get(p, [])) & dropped)) for p in gone
        ]
        entries, sources_changed = _merge_sources(list(recorded.values()), reports, gone)
        touched = [r.path for r in reports if r.change == "changed"] + list(gone)
        tree = _tree_record(path, old if base is not None else None, touched)
        owners_changed = base is None or old is None or new_owners != owners
        owners_changed = owners_changed or not isinstance(old.get("owners"), dict)

        def finish(changed: bool, total: int, generation: int) -> BuildReport:
            return BuildReport(
                path=str(path),
                changed=changed,
                added=len(new),
                total=total,
                generation=generation,
                sources=reports,
                seconds=time.monotonic() - started,
                failed=failed,
                removed=len(dropped),
                removed_sources=removed_sources,
                tree_stale=stale_tree(path, {"tree": tree}) is not None,
            )

        if old is not None and base is not None and live is not None and not new and not dropped:
            if sources_changed or owners_changed or tree != old.get("tree"):
                manifest = {**old, "sources": entries, "updated_at": now_iso()}
                manifest["owners"] = write_owners(live, new_owners, old)
                _set_tree(manifest, tree)
                write_json_atomic(path / MANIFEST, manifest)
                sweep_owners(live, manifest)
            return finish(sources_changed, int(old["passages"]), int(old["generation"]))

        generation = (int(old["generation"]) + 1) if old is not None else 1
        data = path / f"{GENERATION_PREFIX}{generation:06d}"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        components = write_generation(
            data, base, store, new, dropped, embeddings, dense or DenseOptions(), report_progress
        )
        now = now_iso()
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "generation": generation,
            "data_dir": data.name,
            "created_at": old["created_at"] if (old is not None and base is not None) else now,
            "updated_at": now,
            "embedding": {
                "model": embedding_model,
                "dimension": components["dense"]["dimension"],
                **_backends_entry(old if base is not None else None, embeddings),
            },
            "passages": components["passages"]["count"],
            "chunking": {"max_tokens": max_tokens},
            "components": components,
            "sources": entries,
            "owners": write_owners(data, new_owners, old if base is not None else None),
        }
        _set_tree(manifest, tree)
        write_json_atomic(path / MANIFEST, manifest)  # the commit point
        if live is not None and live != data:
            shutil.rmtree(live, ignore_errors=True)
        return finish(True, components["passages"]["count"], generation)


def _new_passages(reads: list[SourceRead], known: set[str]) -> list[Passage]:
    """Passages whose id is not in ``known``, in source order; each source's ``added`` set."""
    new: list[Passage] = []
    for read in reads:
        added = 0
        for passage in read.passages:
            if passage.id in known:
                continue
            known.add(passage.id)
            new.append(passage)
            added += 1
        read.report.added = added
    return new


def _count_removed(reads: list[SourceRead], owners: Owners, dropped: set[str]) -> None:
    """Each changed source's ``removed``: its previous passages that left the index."""
    for read in reads:
        if read.report.change == "changed":
            read.report.removed = len(set(owners.get(read.report.path, [])) & dropped)


def _under(path: str, root: Path) -> bool:
    return Path(path) == root or Path(path).is_relative_to(root)


def _sources_to_remove(
    recorded: dict[str, dict[str, Any]],
    remove: Sequence[Path],
    sync_roots: Sequence[Path],
    sources: Sequence[SourceSpec],
    unlisted: Sequence[Path] = (),
) -> set[str]:
    """The recorded source paths this build drops: those at or under a ``remove`` path (each
    must match one), and those under a ``sync_roots`` folder that ``sources`` no longer holds
    and that are not at or under an ``unlisted`` path."""
    gone: set[str] = set()
    unknown: list[str] = []
    for target in remove:
        root = Path(target).absolute().resolve()
        matched = {p for p in recorded if _under(p, root)}
        if not matched:
            unknown.append(str(target))
        gone |= matched
    if unknown:
        raise UnknownSourceError(
            f"not a source of the index: {', '.join(unknown)} "
            "(hoptree index info lists the sources)"
        )
    present = {source_key(Path(spec.path)) for spec in sources}
    kept = [Path(source_key(Path(p))) for p in unlisted]
    for folder in sync_roots:
        root = Path(folder).absolute().resolve()
        gone |= {
            p
            for p in recorded
            if _under(p, root) and p not in present and not any(_under(p, k) for k in kept)
        }
    return gone


def _tree_record(
    path: Path, old: dict[str, Any] | None, touched: list[str]
) -> dict[str, Any] | None:
    """The manifest's ``tree`` record after this build: the sources changed or removed since
    the index's tree was built, accumulated while that tree stands (``index_dir.stale_tree``)."""
    previous = stale_tree(path, old) if old is not None else None
    version = tree_version(path)
    if version is None or not touched:
        return previous
    sources = sorted(set((previous or {}).get("sources", [])) | set(touched))
    return {
        "stale": True,
        "tree_version": version,
        "since": (previous or {}).get("since") or now_iso(),
        "sources": sources,
    }


def _set_tree(manifest: dict[str, Any], record: dict[str, Any] | None) -> None:
    if record is None:
        manifest.pop("tree", None)
    else:
        manifest["tree"] = record


def _merge_sources(
    previous: list[dict[str, Any]], current: list[SourceReport], gone: set[str]
) -> tuple[list[dict[str, Any]], bool]:
    """The manifest's source list after this build: one entry per file path, the latest
    checksum and passage count winning, the ``gone`` ones out; whether anything differs."""
    merged = {entry["path"]: entry for entry in previous if entry["path"] not in gone}
    changed = len(merged) != len(previous)
    for report in current:
        before = merged.get(report.path)
        entry = {
            k: v
            for k, v in asdict(report).items()
            if k not in ("change", "removed") and not (k == "encoding" and v is None)
        }
        if before is None or before.get("sha256") != report.sha256:
            merged[report.path] = entry
            changed = True
        elif before.get("passages") != report.passages:
            merged[report.path] = {**before, "passages": report.passages}
            changed = True
    return list(merged.values()), changed
