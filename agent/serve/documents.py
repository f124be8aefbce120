"""Documents over HTTP: ``POST /v1/documents``, ``DELETE /v1/documents/{source}``,
``GET /v1/documents``, behind the API key like every ``/v1`` route.

An uploaded document is a file the server keeps in ``INDEX/documents/NAME`` (inside the index
directory, so a folder sync of the index's parent never reads it as a source) and indexes like
``hoptree index build`` would: a second upload under the same name replaces its passages. A
deletion is ``hoptree index remove``: it also takes the path of a source indexed from the command
line. Both run ``agent.indexing`` in a worker thread (embedding must not stall the event loop)
and commit a new generation, which the served agent's retrievers follow from their next lookup
(``searchers.index_dir``). A write while another build holds the index is a 409, not a queue.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from agent.serve.errors import ApiError

if TYPE_CHECKING:
    from agent.settings import Settings
    from searchers.index_build import BuildReport

UPLOAD_DIR = "documents"
MAX_NAME_CHARS = 200


class DocumentBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="file name with its type's suffix: notes.md, report.pdf")
    text: str | None = Field(None, description="the content of a text or markdown file")
    content_base64: str | None = Field(None, description="the bytes of any file, base64")


@dataclass
class DocumentStore:
    """What the document routes write: the settings' models over one index directory."""

    settings: Settings
    index_dir: Path

    @property
    def folder(self) -> Path:
        return self.index_dir / UPLOAD_DIR

    def put(self, name: str, data: bytes) -> BuildReport:
        """Keep ``data`` as ``name`` and index it; the previous content (if any) comes back
        when the new one cannot be read, so a bad upload never loses a good document."""
        from agent.indexing import build
        from searchers.index_dir import MANIFEST

        if not (self.index_dir / MANIFEST).is_file():
            # an empty index first: a build refuses a folder with files but no manifest
            build(self.settings, [], self.index_dir)
        target = self.folder / name
        previous = target.read_bytes() if target.is_file() else None
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, data)
        try:
            report = build(self.settings, [target], self.index_dir)
        except BaseException:
            _restore(target, previous)
            raise
        if report.failed:
            _restore(target, previous)
        return report

    def delete(self, source: str) -> BuildReport:
        """Remove an uploaded document by name, or any source by its exact recorded path.
        Unlike ``hoptree index remove``, never a folder: one request must not be able to empty
        the index (``DELETE /v1/documents//``)."""
        from agent.indexing import remove_sources
        from searchers.index_build import UnknownSourceError

        uploaded = self.folder / source
        is_upload = "/" not in source and source not in (".", "..") and uploaded.is_file()
        target = uploaded if is_upload else Path(source)
        recorded = {str(s.get("path")) for s in self.sources()}
        if str(target.absolute().resolve()) not in recorded:
            raise UnknownSourceError(f"not a source of the index: {source}")
        report = remove_sources(self.settings, [target], self.index_dir)
        if is_upload:
            uploaded.unlink(missing_ok=True)
        return report

    def sources(self) -> list[dict[str, Any]]:
        from searchers.index_dir import IndexDir

        manifest = IndexDir.open(self.index_dir).manifest
        keep = ("path", "name", "format", "sha256", "size", "passages", "ingested_at")
        return [{k: s.get(k) for k in keep} for s in manifest.get("sources", [])]


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.upload")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _restore(path: Path, previous: bytes | None) -> None:
    if previous is None:
        path.unlink(missing_ok=True)
    else:
        _write_atomic(path, previous)


class DocumentInputError(ValueError):
    """A document the caller sent that cannot be stored; ``param`` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def check_name(name: str) -> str:
    """A plain file name of a type the index reads: no folder, not hidden, a known suffix."""
    from searchers.corpus import SUPPORTED_SUFFIXES

    if (
        not name
        or len(name) > MAX_NAME_CHARS
        or name != Path(name).name
        or "\\" in name
        or name.startswith(".")
        or "\0" in name
    ):
        raise DocumentInputError(f"name must be a plain file name, not {name!r}", "name")
    if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
        known = " ".join(sorted(SUPPORTED_SUFFIXES))
        raise DocumentInputError(f"{name}: the index reads {known}", "name")
    return name


def document_bytes(text: str | None, content_base64: str | None) -> bytes:
    """The file's bytes from exactly one of ``text`` (UTF-8) and ``content_base64``."""
    if (text is None) == (content_base64 is None):
        raise DocumentInputError("give either text or content_base64")
    if text is not None:
        return text.encode("utf-8")
    try:
        return base64.b64decode(content_base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DocumentInputError(f"content_base64 is not base64: {exc}", "content_base64") from exc


def unread_message(report: BuildReport) -> str | None:
    """Why the document of ``report`` was not indexed, or None when it was."""
    if not report.failed:
        return None
    failed = report.failed[0]
    return f"{Path(failed.path).name} could not be read ({failed.reason}): {failed.detail}"


async def _run_write(step: Any) -> dict[str, Any]:
    """Run a build in a worker thread; the project's errors become API errors."""
    from searchers.corpus import CorpusError
    from searchers.index_build import UnknownSourceError
    from searchers.index_dir import IndexLockedError
    from searchers.retrieval import RetrievalError

    try:
        report = await asyncio.to_thread(step)
    except UnknownSourceError as exc:
        raise ApiError(404, str(exc), "not_found_error") from exc
    except IndexLockedError as exc:
        raise ApiError(409, str(exc), "conflict_error", headers={"Retry-After": "5"}) from exc
    except (CorpusError, RetrievalError) as exc:
        raise ApiError(422, str(exc), "invalid_request_error") from exc
    unread = unread_message(report)
    if unread is not None:
        raise ApiError(422, unread, "invalid_request_error", code=report.failed[0].reason)
    return report.as_dict()


def documents_router(store: DocumentStore) -> APIRouter:
    """The document routes; ``create_app`` mounts them under ``/v1`` (behind the key)."""
    router = APIRouter()
    lock = asyncio.Lock()  # one write at a time from this server; the build lock guards others

    @router.post("/documents", summary="Add or replace a document; the build report")
    async def put_document(body: DocumentBody) -> dict[str, Any]:
        try:
            name = check_name(body.name)
            data = document_bytes(body.text, body.content_base64)
        except DocumentInputError as exc:
            raise ApiError(422, str(exc), "invalid_request_error", param=exc.param) from exc
        async with lock:
            return await _run_write(lambda: store.put(name, data))

    @router.delete(
        "/documents/{source:path}",
        summary="Remove a document (an uploaded name, or an indexed file's path)",
    )
    async def delete_document(source: str) -> dict[str, Any]:
        async with lock:
            return await _run_write(lambda: store.delete(source))

    @router.get("/documents", summary="The index's sources")
    async def list_documents() -> dict[str, Any]:
        from searchers.retrieval import RetrievalError

        try:
            return {"documents": await asyncio.to_thread(store.sources)}
        except RetrievalError as exc:
            raise ApiError(404, str(exc), "not_found_error") from exc

    return router
