"""``benchmarks/server_speed.py`` without the model: a variant's text becomes the right settings
on the server's parameters (nested, typed, enums by value), a bad one is refused with its
reason, and the report turns medians into ratios, same-reply counts and question seconds."""

from __future__ import annotations

import argparse
import enum
from types import ModuleType, SimpleNamespace

import pytest

from tests.benchmark_module import load_benchmark


class Flash(enum.Enum):
    AUTO = -1
    OFF = 0
    ON = 1


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("server_speed")


def params() -> SimpleNamespace:
    return SimpleNamespace(
        n_ubatch=512,
        flash_attn_type=Flash.AUTO,
        no_extra_bufts=False,
        rope_freq_scale=0.0,
        cpuparams_batch=SimpleNamespace(n_threads=2),
    )


def test_a_variant_names_its_settings(bench: ModuleType) -> None:
    assert bench.parse_variant("base:") == ("base", {})
    name, overrides = bench.parse_variant("fast:n_ubatch=1024, cpuparams_batch.n_threads=1")
    assert name == "fast" and overrides == {"n_ubatch": "1024", "cpuparams_batch.n_threads": "1"}
    for bad in ("base", ":n_ubatch=1", "x:n_ubatch"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_variant(bad)


def test_overrides_take_the_type_of_the_setting_they_change(bench: ModuleType) -> None:
    p = params()
    bench.apply_overrides(
        p,
        {
            "n_ubatch": "256",
            "flash_attn_type": "0",
            "no_extra_bufts": "true",
            "rope_freq_scale": "0.5",
            "cpuparams_batch.n_threads": "1",
        },
    )
    assert p.n_ubatch == 256 and p.flash_attn_type is Flash.OFF and p.no_extra_bufts is True
    assert p.rope_freq_scale == 0.5 and p.cpuparams_batch.n_threads == 1
    with pytest.raises(ValueError, match="no setting 'n_ubatchh'"):
        bench.apply_overrides(params(), {"n_ubatchh": "1"})
    with pytest.raises(ValueError, match="true or false"):
        bench.apply_overrides(params(), {"no_extra_bufts": "yes"})


def test_probe_prompts_are_long_and_share_no_prefix(bench: ModuleType) -> None:
    a, b = bench.probe_prompt(300, 0), bench.probe_prompt(300, 1)
    assert a != b and a.split("\n", 1)[1] == b.split("\n", 1)[1]
    assert 300 <= len(a.split()) <= 310


def test_the_report_compares_each_variant_with_the_first(bench: ModuleType) -> None:
    base = bench.Measurement("base", {}, [3.0], [600, 600], [40.0, 42.0], [12.0, 14.0], ["a", "b"])
    fast = bench.Measurement(
        "fast", {"n_ubatch": "1024"}, [3.0], [600, 600], [80.0, 84.0], [13.0, 13.0], ["a", "c"]
    )
    text = bench.report([base, fast], (2000, 800, 260), "header")
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert "| 82.0 | 2.00 | 13.0 | 1.00 | 1/2 |" in rows["| fast"]
    assert "| 2/2 |" in rows["| base"] and "the product's" in rows["| base"]
    # 1,200 tokens read at 41/s and 260 written at 13/s
    assert rows["| base"].endswith(f"| {1200 / 41 + 260 / 13:.0f} |")
    assert bench.seconds_for(82.0, 13.0, (2000, 800, 260)) == pytest.approx(1200 / 82 + 20)
