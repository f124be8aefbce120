"""The fresh report slices (issue 65 item 5): each loads, holds its stated count, is the recorded
draw, 2Wiki mixes its four types, and no question is one of ../shared/data's.

The slices are held-out questions: these checks look at ids, counts, types and digests only. The
drawn files are not committed (evals/data/README.md says why and where they live); the checks of
a file skip when it is absent, the ones of the recorded draw and its provenance always run.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from evals.datasets import load_questions
from tests.benchmark_module import load_script
from tests.conftest import SHARED_DATA
from tests.locations import REPO

ROOT = REPO
FRESH = ROOT / "evals" / "data" / "fresh"
README = ROOT / "evals" / "data" / "README.md"
STATED = {"hotpotqa": 100, "2wiki": 100, "musique": 80}
TYPES = {
    "hotpotqa": {"bridge", "comparison"},
    "2wiki": {"compositional", "comparison", "bridge_comparison", "inference"},
    "musique": {"2hop", "3hop", "4hop"},
}


@functools.cache
def _draw_module() -> ModuleType:
    return load_script(FRESH / "draw.py", "fresh_slices_draw")


DRAW = _draw_module()


def slice_file(dataset: str) -> Path:
    """The drawn file: in evals/data/fresh/, or under ../shared/data/fresh/ once placed there."""
    name = DRAW.SLICES[dataset].out
    for path in (FRESH / name, SHARED_DATA / "fresh" / name):
        if path.is_file():
            return path
    pytest.skip(
        f"{name} is not in this checkout (the drawn slices are not committed; "
        "evals/data/README.md says how to draw them)"
    )


def test_the_recorded_draw_states_its_counts_and_provenance() -> None:
    readme = README.read_text(encoding="utf-8")
    for dataset, count in STATED.items():
        spec = DRAW.SLICES[dataset]
        assert spec.count == count
        assert len(spec.result_sha256) == 64 and len(spec.source_sha256) == 64
        assert spec.out in readme and spec.result_sha256 in readme
        excluded = [rid for ids in DRAW.EXCLUDED_IDS[dataset].values() for rid in ids]
        assert excluded and all(isinstance(rid, str) for rid in excluded)


@pytest.mark.parametrize("dataset", sorted(STATED))
def test_a_slice_loads_with_its_stated_count(dataset: str) -> None:
    path = slice_file(dataset)
    questions = load_questions(path)
    assert len(questions) == STATED[dataset]
    assert len({q.id for q in questions}) == len(questions)
    assert {q.type for q in questions} <= TYPES[dataset]
    assert all(len(q.supporting_titles) >= 2 for q in questions)
    if dataset == "musique":
        assert all(len(q.paragraphs) == 20 and q.gold_hops for q in questions)
    if dataset == "hotpotqa":
        assert all(len(q.paragraphs) == 10 for q in questions)


@pytest.mark.parametrize("dataset", sorted(STATED))
def test_a_slice_is_the_recorded_draw(dataset: str) -> None:
    digest = hashlib.sha256(slice_file(dataset).read_bytes()).hexdigest()
    assert digest == DRAW.SLICES[dataset].result_sha256


def test_the_2wiki_slice_mixes_the_four_types() -> None:
    types = Counter(q.type for q in load_questions(slice_file("2wiki")))
    assert set(types) == TYPES["2wiki"]
    assert min(types.values()) >= 10


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("dataset", sorted(STATED))
def test_a_slice_is_disjoint_from_the_shared_files(dataset: str) -> None:
    path = slice_file(dataset)
    shared_ids, shared_questions = DRAW.question_keys(DRAW.shared_files(SHARED_DATA))
    assert shared_ids and shared_questions
    questions = load_questions(path)
    assert not {q.id for q in questions} & shared_ids
    assert not {DRAW.normalize_question(q.question) for q in questions} & shared_questions
