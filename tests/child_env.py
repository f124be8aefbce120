"""The environment of a hoptree child process in a test: the parent's, minus every HOPTREE_*
variable (a developer's own configuration must not leak into a test), plus where the ONNX
export of the embedding model lives, so a child does not export it again into its own data
dir (half a minute each)."""

from __future__ import annotations

import os

from agent.settings import default_data_dir

ONNX_EXPORT_DIR = str(default_data_dir() / "models" / "onnx")


def child_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPTREE_")}
    env["HOPTREE_EMBEDDINGS__EXPORT_DIR"] = ONNX_EXPORT_DIR
    return env
