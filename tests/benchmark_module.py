"""Loading a script (of ``benchmarks/``, or a data folder's) as a module, for the tests that
check its parts without running it (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(path: Path, name: str) -> ModuleType:
    """The script at ``path``, imported under ``name`` (dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported under ``name``."""
    return load_script(BENCHMARKS / f"{name}.py", name)
