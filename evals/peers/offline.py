"""Keeping the peers' own code from reaching outside the machine.

Two things the peers' libraries fetch on first use unless told where a local copy is:

- tiktoken's encodings (``cl100k_base`` for LlamaIndex's prompt helper and FlashRAG's
  generator). tiktoken reads ``$TIKTOKEN_CACHE_DIR/<sha1 of the encoding's URL>`` before it
  downloads, and checks the file's sha256; the encoding files ship inside installed wheels
  (litellm's ``litellm_core_utils/tokenizers``, llama-index-core's ``_static/tiktoken_cache``),
  already named that way. ``tiktoken_cache_dir`` points tiktoken at one of them.
- litellm's model price map, which litellm (at import) and DSPy (at the first call) fetch from
  the network unless ``LITELLM_LOCAL_MODEL_COST_MAP`` says to use the bundled copy
  (``local_model_metadata``).

Both set process environment variables, so they are idempotent and cheap to call before each
question.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path

# name -> (URL tiktoken loads it from, sha256 tiktoken checks), as in tiktoken_ext.openai_public
TIKTOKEN_ENCODINGS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
# (package, folder inside it) of wheels known to ship tiktoken cache files
_SHIPPED = (
    ("litellm", "litellm_core_utils/tokenizers"),
    ("llama_index.core", "_static/tiktoken_cache"),
)


class OfflineError(RuntimeError):
    """A file a peer needs is on no local path; the message says which and where it was sought."""


def tiktoken_cache_file(encoding: str) -> str:
    """The file name tiktoken's cache expects for ``encoding``: the sha1 of its URL."""
    url, _ = TIKTOKEN_ENCODINGS[encoding]
    return hashlib.sha1(url.encode()).hexdigest()


def _holds(folder: Path, encodings: Iterable[str]) -> bool:
    for name in encodings:
        path = folder / tiktoken_cache_file(name)
        if not path.is_file():
            return False
        if hashlib.sha256(path.read_bytes()).hexdigest() != TIKTOKEN_ENCODINGS[name][1]:
            return False
    return True


def _shipped_folders() -> list[Path]:
    folders = []
    for package, inside in _SHIPPED:
        try:
            spec = importlib.util.find_spec(package)
        except ModuleNotFoundError:  # a namespace parent (llama_index) that is not there
            continue
        for root in (spec.submodule_search_locations or []) if spec else []:
            folders.append(Path(root) / inside)
    return folders


def tiktoken_cache_dir(encodings: Iterable[str] = ("cl100k_base",)) -> Path:
    """Sets ``TIKTOKEN_CACHE_DIR`` to a folder holding ``encodings`` (checked as tiktoken checks
    them) and returns it: the folder already set if it holds them, else one shipped in an
    installed wheel. Raises ``OfflineError`` (naming the encodings) when none does; an unknown
    encoding name is a ``KeyError``."""
    wanted = list(encodings)
    unknown = [name for name in wanted if name not in TIKTOKEN_ENCODINGS]
    if unknown:
        raise KeyError(f"no known tiktoken encoding {', '.join(unknown)}")
    current = os.environ.get("TIKTOKEN_CACHE_DIR")
    candidates = ([Path(current)] if current else []) + _shipped_folders()
    for folder in candidates:
        if _holds(folder, wanted):
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
            return folder
    sought = ", ".join(str(f) for f in candidates) or "no wheel that ships them is installed"
    raise OfflineError(f"tiktoken encodings {', '.join(wanted)} not found locally ({sought})")


def local_model_metadata() -> None:
    """litellm and DSPy read their bundled model map instead of fetching it (must run before
    litellm is imported; DSPy reads it at its first model call)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
