from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path

import pytest

from agent.runtime.gguf_assembly import LocalModelSpec, ModelAssemblyError, assemble, locate_parts

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 2048, b"c" * 7]


def make_parts(root: Path, prefix: str, blobs: list[bytes], monkeypatch: pytest.MonkeyPatch):
    for i, blob in enumerate(blobs, start=1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()


def spec_for(prefix: str, blobs: list[bytes], sha: str | None = None) -> LocalModelSpec:
    joined = b"".join(blobs)
    return LocalModelSpec(
        name="tiny",
        filename="tiny.gguf",
        package_prefix=prefix,
        version="0.0.1",
        n_parts=len(blobs),
        size=len(joined),
        sha256=sha or hashlib.sha256(joined).hexdigest(),
    )


def test_joins_in_order_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_parts(tmp_path / "site", "hoptestok", PARTS, monkeypatch)
    seen: list[tuple[int, int]] = []
    out = assemble(
        spec_for("hoptestok", PARTS), tmp_path / "models", lambda d, t: seen.append((d, t))
    )
    assert out.read_bytes() == b"".join(PARTS)
    assert seen and seen[-1] == (len(b"".join(PARTS)), len(b"".join(PARTS)))
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        "tiny.gguf",
        "tiny.gguf.verified.json",
    ]


def test_second_call_reuses_the_verified_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_parts(tmp_path / "site", "hoptestreuse", PARTS, monkeypatch)
    spec = spec_for("hoptestreuse", PARTS)
    first = assemble(spec, tmp_path / "models")
    mtime = first.stat().st_mtime_ns
    calls: list[int] = []
    again = assemble(spec, tmp_path / "models", lambda d, t: calls.append(d))
    assert again == first and again.stat().st_mtime_ns == mtime
    assert calls == []  # nothing re-joined


def test_tampered_cache_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_parts(tmp_path / "site", "hoptesttamper", PARTS, monkeypatch)
    spec = spec_for("hoptesttamper", PARTS)
    target = assemble(spec, tmp_path / "models")
    data = bytearray(target.read_bytes())
    data[10] ^= 0xFF
    target.write_bytes(bytes(data))
    os.utime(target, ns=(1, 1))
    rebuilt = assemble(spec, tmp_path / "models")
    assert rebuilt.read_bytes() == b"".join(PARTS)


def test_wrong_hash_is_a_clear_error_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_parts(tmp_path / "site", "hoptestbad", PARTS, monkeypatch)
    spec = spec_for("hoptestbad", PARTS, sha="0" * 64)
    with pytest.raises(ModelAssemblyError, match=r"sha256 .* expected 0{64}.*reinstall"):
        assemble(spec, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_part_names_the_package_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_parts(tmp_path / "site", "hoptestmiss", PARTS[:2], monkeypatch)
    spec = spec_for("hoptestmiss", PARTS)  # expects three parts; only two installed
    with pytest.raises(ModelAssemblyError) as info:
        assemble(spec, tmp_path / "models")
    message = str(info.value)
    assert "hoptestmiss3" in message and "pip install" in message
    assert "hoptestmiss1==0.0.1" in message
    assert not (tmp_path / "models").exists() or list((tmp_path / "models").iterdir()) == []


def test_interrupted_join_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_parts(tmp_path / "site", "hoptestcrash", PARTS, monkeypatch)
    spec = spec_for("hoptestcrash", PARTS)

    def crash(done: int, total: int) -> None:
        if done > 1500:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(spec, tmp_path / "models", crash)
    assert list((tmp_path / "models").iterdir()) == []
    assert assemble(spec, tmp_path / "models").read_bytes() == b"".join(PARTS)


def test_the_real_parts_are_installed_with_the_expected_size() -> None:
    from agent.runtime.gguf_assembly import LOCAL_MODELS

    spec = LOCAL_MODELS["qwen2.5-coder-1.5b"]
    parts = locate_parts(spec)
    assert len(parts) == 22
    assert sum(p.stat().st_size for p in parts) == spec.size
