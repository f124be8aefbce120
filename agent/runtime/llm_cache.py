"""SQLite cache of chat-model calls, plugged into langchain-core's ``BaseCache``.

Evaluations and tree builds are rerun and resumed often; at temperature 0 a repeated call must
cost nothing. The key is a hash of the model identity, the invocation parameters (including any
response schema) and the serialized messages. Values are plain JSON (message dicts), never pickle.
The cache is shared by concurrent async tasks and by several processes (WAL mode, busy timeout);
a corrupt file is moved aside with a warning so a damaged cache never stops a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import AIMessage, message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, Generation

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
CACHE_HIT_FLAG = "hoptree_cache_hit"


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    errors: int = 0
    saved_prompt_tokens: int = 0
    saved_completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def cache_key(prompt: str, llm_string: str) -> str:
    return hashlib.sha256(f"{llm_string}\x00{prompt}".encode()).hexdigest()


def _usage(generation: Generation) -> tuple[int, int]:
    message = getattr(generation, "message", None)
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


def _encode(generations: Sequence[Generation]) -> str:
    rows = []
    for gen in generations:
        row: dict[str, Any] = {"text": gen.text, "generation_info": gen.generation_info}
        if isinstance(gen, ChatGeneration):
            row["message"] = message_to_dict(gen.message)
        rows.append(row)
    return json.dumps(rows, default=str)


def _decode(raw: str) -> list[Generation]:
    generations: list[Generation] = []
    for row in json.loads(raw):
        if "message" in row:
            (message,) = messages_from_dict([row["message"]])
            if isinstance(message, AIMessage):
                meta = {**message.response_metadata, CACHE_HIT_FLAG: True}
                message = message.model_copy(update={"response_metadata": meta})
            generations.append(
                ChatGeneration(message=message, generation_info=row.get("generation_info"))
            )
        else:
            generations.append(
                Generation(text=row["text"], generation_info=row.get("generation_info"))
            )
    return generations


class SQLiteLLMCache(BaseCache):
    """Thread- and task-safe; async calls run in a worker thread so the event loop never blocks."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._conn = self._open()

    # -- connection management -------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS llm_cache ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL,"
            " prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,"
            " created REAL NOT NULL)"
        )
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
        row = conn.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            conn.close()
            raise sqlite3.DatabaseError(f"integrity check failed: {row}")
        conn.commit()
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            self._move_aside(exc)
            return self._connect()

    def _move_aside(self, exc: Exception) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                src.replace(Path(f"{aside}{suffix}"))
        log.warning("LLM cache %s was unreadable (%s); moved it to %s", self.path, exc, aside)

    def _recover(self, exc: Exception) -> None:
        """Called under the lock when a query fails mid-run: start over with a fresh file."""
        self.stats.errors += 1
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        self._move_aside(exc)
        self._conn = self._connect()

    # -- BaseCache ---------------------------------------------------------------------------
    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        key = cache_key(prompt, llm_string)
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT value, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                self._recover(exc)
                row = None
            if row is None:
                self.stats.misses += 1
                return None
            try:
                generations = _decode(row[0])
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("dropping undecodable LLM cache entry %s: %s", key[:12], exc)
                self._conn.execute("DELETE FROM llm_cache WHERE key = ?", (key,))
                self._conn.commit()
                self.stats.misses += 1
                return None
            self.stats.hits += 1
            self.stats.saved_prompt_tokens += row[1]
            self.stats.saved_completion_tokens += row[2]
            return generations

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        key = cache_key(prompt, llm_string)
        prompt_tokens = completion_tokens = 0
        for gen in return_val:
            p, c = _usage(gen)
            prompt_tokens += p
            completion_tokens += c
        value = _encode(return_val)
        model = _model_of(llm_string)
        with self._lock:
            for _attempt in range(2):
                try:
                    self._conn.execute(
                        "INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?)",
                        (key, model, value, prompt_tokens, completion_tokens, time.time()),
                    )
                    self._conn.commit()
                    self.stats.writes += 1
                    return
                except sqlite3.DatabaseError as exc:
                    self._recover(exc)

    def clear(self, **kwargs: Any) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM llm_cache")
            self._conn.commit()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        return await asyncio.to_thread(self.lookup, prompt, llm_string)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        await asyncio.to_thread(self.update, prompt, llm_string, return_val)

    async def aclear(self, **kwargs: Any) -> None:
        await asyncio.to_thread(self.clear)

    # -- inspection --------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _model_of(llm_string: str) -> str:
    """Best-effort model label for the row (for humans inspecting the file; not part of the key)."""
    try:
        data = json.loads(llm_string)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    return str(data.get("model_identity") or data.get("model") or "")
