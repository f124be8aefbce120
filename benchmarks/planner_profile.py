"""Where a planner question's seconds go, and what each embedded-model knob buys.

Runs pipelines (default ``full`` and ``hybrid``) over the same questions under several
configurations of the embedded model (environment overrides, e.g. speculative decoding on or
off), with the LLM cache off, and reports per configuration and per planner step: calls, prompt
tokens (and how many the server reused from its prefix cache), completion tokens, the server's
prompt-reading and decoding milliseconds, drafted and accepted tokens, and the end-to-end median
seconds. Against the first configuration it reports the time ratio, the F1 difference and the
share of identical short answers (speculation checks every drafted token, so greedy answers
should not move).

Configurations run interleaved in chunks (A on questions 1-5, B on 1-5, A on 6-10, ...), so a
machine that gets busier halfway slows every configuration alike and the ratio holds. Every
chunk is an ``hoptree eval run`` into a resumable directory, one model process at a time::

    python benchmarks/planner_profile.py --limit 30 \\
        --config base: --config ngram:HOPTREE_LLM__LOCAL_SPECULATIVE=ngram

A configuration can also name a commit (``name@REF:KEY=VALUE``): its chunks run from a git
worktree of that commit under ``--work`` (made on first use, kept for resuming), so today's code
and an earlier one are measured side by side in one run, as issue 35's before/after asks::

    python benchmarks/planner_profile.py --limit 30 --pipeline full --pipeline hybrid \\
        --config before@799ade1:HOPTREE_DATA_DIR=.cache/before-data --config after:

An earlier commit may lay out its indexes otherwise, so give it a data dir of its own (link its
``models`` folder to the usual one to spare assembling the model again).

An arm can also run another pipeline where the others run the table's one
(``name/PIPELINE[@REF]:...``): the planner's switches are pipelines (``full`` keeps every step on
whatever the environment says), so "the planner without follow-up rounds" is an arm running
``no-supplement`` beside ``full``. Give such an arm a data dir of its own as well: the embedded
model's server keeps prompts it has read, and an arm that follows another on the same questions
would find them already read::

    python benchmarks/planner_profile.py --limit 20 --pipeline full --config with: \\
        --config without/no-supplement:HOPTREE_DATA_DIR=.cache/without-data

Rerunning the same command resumes; ``--report-only`` rewrites the tables from the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from evals.paired import format_gain, format_wlt, paired_diff

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "hotpotqa" / "dev_hard_300_a.jsonl"
DEFAULT_WORK = ROOT / ".cache" / "planner-profile"
DEFAULT_OUT = HERE / "results" / "planner-profile"
GIT_TIMEOUT_S = 300.0  # a worktree checkout of the whole repository, results included
STEP_FIELDS = (
    "calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "prompt_ms",
    "decode_ms",
    "draft_tokens",
    "draft_accepted",
)


@dataclass(frozen=True)
class Config:
    """One arm: environment overrides, the commit whose code runs it (None: this checkout) and
    the pipeline it runs in place of each table's (None: the table's own)."""

    name: str
    env: dict[str, str] = dataclass_field(default_factory=dict)
    ref: str | None = None
    pipeline: str | None = None

    def runs(self, pipeline: str) -> str:
        """The pipeline this arm runs for the table of ``pipeline``."""
        return self.pipeline or pipeline


def parse_config(text: str) -> Config:
    """``name[/PIPELINE][@REF]:KEY=VALUE,KEY=VALUE`` (``name:`` alone = today's code and
    defaults)."""
    head, _, rest = text.partition(":")
    named, _, ref = head.partition("@")
    name, _, pipeline = named.partition("/")
    if not name or ("@" in head and not ref) or ("/" in named and not pipeline):
        raise argparse.ArgumentTypeError(
            f"config {text!r}: name[/PIPELINE][@REF]:KEY=VALUE,... expected"
        )
    env: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"config {text!r}: {item!r} is not KEY=VALUE")
        env[key.strip()] = value.strip()
    return Config(name, env, ref or None, pipeline or None)


def source_dir(work: Path, config: Config, repo: Path = ROOT) -> Path:
    """Where the configuration's code is: this checkout, or a detached worktree of its commit
    (``<work>/<name>-src``), added on first use and reused when the run resumes. A worktree
    already there at another commit is refused rather than silently measured."""
    if config.ref is None:
        return repo
    where = work / f"{config.name}-src"
    wanted = _git(repo, "rev-parse", "--verify", f"{config.ref}^{{commit}}")
    if where.is_dir():
        have = _git(where, "rev-parse", "HEAD")
        if have != wanted:
            raise SystemExit(f"{where} is at {have[:12]}, not {config.ref}: remove it first")
        return where
    where.parent.mkdir(parents=True, exist_ok=True)
    _git(repo, "worktree", "add", "--detach", str(where.resolve()), wanted)
    return where


def _git(cwd: Path, *args: str) -> str:
    """git's output, or the run stopped with git's own message (``evals.provenance`` has a
    quiet twin that returns None: here a failed checkout must say why)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"git {' '.join(args)}: no answer in {GIT_TIMEOUT_S:g} s") from exc
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def run_chunk(work: Path, dataset: Path, pipeline: str, config: Config, limit: int) -> None:
    pipeline = config.runs(pipeline)
    out = work / config.name / pipeline
    cmd = [
        sys.executable,
        "-m",
        "agent.cli.main",
        "eval",
        "run",
        "--dataset",
        str(dataset.resolve()),
        "--pipeline",
        pipeline,
        "--out",
        str(out.resolve()),
        "--limit",
        str(limit),
    ]
    full_env = {**os.environ, "HOPTREE_LLM__CACHE": "false", **config.env}
    code = source_dir(work, config)
    print(f"[profile] {config.name} {pipeline} up to question {limit}", flush=True)
    # ``python -m`` puts the working directory first on sys.path: the worktree's code runs
    subprocess.run(cmd, env=full_env, check=True, cwd=code, stdout=subprocess.DEVNULL)


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    steps: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        row_steps = row.get("steps") or {
            "all": {k: row.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}
            | {"calls": row.get("llm_calls", 0)}
            | {k: row.get(k, 0) for k in ("cached_prompt_tokens", "prompt_ms", "decode_ms")}
        }
        for step, usage in row_steps.items():
            for field in STEP_FIELDS:
                steps[step][field].append(float(usage.get(field, 0)))
    n = len(rows)
    return {
        "questions": n,
        "median_seconds": round(median([r["seconds"] for r in rows]), 1),
        "mean_f1": round(100 * sum(r["f1"] for r in rows) / n, 1) if n else 0.0,
        "median_calls": median([r.get("llm_calls", 0) for r in rows]),
        "median_prompt_tokens": median([r.get("prompt_tokens", 0) for r in rows]),
        "median_completion_tokens": median([r.get("completion_tokens", 0) for r in rows]),
        "median_prompt_s": round(median([r.get("prompt_ms", 0) / 1000 for r in rows]), 1),
        "median_decode_s": round(median([r.get("decode_ms", 0) / 1000 for r in rows]), 1),
        # per step: the mean over questions of each counter (a step absent from a question is 0)
        "steps": {
            step: {field: round(sum(v) / n, 1) for field, v in fields.items()}
            for step, fields in sorted(steps.items())
        },
    }


def compare(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {r["id"]: r for r in base}
    pairs = [(by_id[r["id"]], r) for r in other if r["id"] in by_id]
    if not pairs:
        return {}
    ratios = [a["seconds"] / b["seconds"] for a, b in pairs if b["seconds"] > 0]
    same = sum(
        " ".join(a["prediction"].lower().split()) == " ".join(b["prediction"].lower().split())
        for a, b in pairs
    )
    gain = paired_diff({b["id"]: b["f1"] for _, b in pairs}, {a["id"]: a["f1"] for a, _ in pairs})
    return {
        "paired": len(pairs),
        "median_speedup": round(median(ratios), 2),
        "total_speedup": round(
            sum(a["seconds"] for a, _ in pairs) / max(1e-9, sum(b["seconds"] for _, b in pairs)),
            2,
        ),
        "f1_diff": round(gain.mean, 1),
        # the paired bootstrap interval of the F1 difference and its W/L/T, as `eval compare`
        "f1_gain": format_gain(gain),
        "f1_wlt": format_wlt(gain),
        "identical_answers": round(same / len(pairs), 3),
    }


def report(work: Path, configs: list[Config], pipelines: list[str]) -> dict:
    result: dict[str, Any] = {
        "configs": {c.name: c.env for c in configs},
        "refs": {c.name: c.ref for c in configs if c.ref},
        "arm_pipelines": {c.name: c.pipeline for c in configs if c.pipeline},
        "pipelines": {},
    }
    for pipeline in pipelines:
        rows = {
            c.name: read_rows(work / c.name / c.runs(pipeline) / "details.jsonl") for c in configs
        }
        base_name = configs[0].name
        # an arm that never ran this pipeline (e.g. one added to re-measure only ``hybrid``)
        # is left out of its table rather than shown as a row of zeros
        result["pipelines"][pipeline] = {
            name: {**summarize(r), "vs_" + base_name: compare(rows[base_name], r)}
            for name, r in rows.items()
            if r or name == base_name
        }
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Planner profile", ""]
    if result.get("note"):
        lines += [result["note"], ""]
    for name, env in result["configs"].items():
        knobs = ", ".join(f"`{k}={v}`" for k, v in env.items()) or "defaults"
        ref = result.get("refs", {}).get(name)
        own = result.get("arm_pipelines", {}).get(name)
        lines.append(
            f"- **{name}**: {knobs}"
            + (f", the code of `{ref}`" if ref else "")
            + (f", running `{own}` in each table" if own else "")
        )
    for pipeline, by_config in result["pipelines"].items():
        lines += [
            "",
            f"## {pipeline}",
            "",
            "| config | n | median s | speedup (median, total) | F1 | ΔF1 [95% CI] | W/L/T "
            "| same answer | calls | prompt tok | completion tok | prompt s | decode s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, s in by_config.items():
            vs = next((v for k, v in s.items() if k.startswith("vs_")), {}) or {}
            lines.append(
                f"| {name} | {s['questions']} | {s['median_seconds']} | "
                f"{vs.get('median_speedup', '')}× / {vs.get('total_speedup', '')}× | "
                f"{s['mean_f1']} | {vs.get('f1_gain', vs.get('f1_diff', ''))} | "
                f"{vs.get('f1_wlt', '')} | "
                f"{100 * vs.get('identical_answers', 0):.0f}% | {s['median_calls']:g} | "
                f"{s['median_prompt_tokens']:g} | {s['median_completion_tokens']:g} | "
                f"{s['median_prompt_s']} | {s['median_decode_s']} |"
            )
        for name, s in by_config.items():
            lines += [
                "",
                f"### {pipeline} / {name}: mean per question, by step",
                "",
                "| step | " + " | ".join(STEP_FIELDS) + " |",
                "|---|" + "---|" * len(STEP_FIELDS),
            ]
            for step, fields in s["steps"].items():
                cells = " | ".join(f"{fields.get(f, 0):g}" for f in STEP_FIELDS)
                lines.append(f"| {step} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--chunk", type=int, default=5, help="questions per interleaved chunk")
    parser.add_argument("--pipeline", action="append", help="default: full and hybrid")
    parser.add_argument(
        "--config", action="append", type=parse_config, help="name:KEY=VALUE,... (repeatable)"
    )
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="resumable run dirs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="writes .json and .md")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--note", default="", help="a paragraph put under the title (conditions)")
    args = parser.parse_args(argv)
    configs = args.config or [Config("base")]
    if len({c.name for c in configs}) != len(configs):
        print("configs need distinct names", file=sys.stderr)
        return 2
    pipelines = args.pipeline or ["full", "hybrid"]
    if not args.dataset.is_file():
        print(f"no dataset at {args.dataset}", file=sys.stderr)
        return 2
    if not args.report_only:
        for upto in range(args.chunk, args.limit + args.chunk, args.chunk):
            for pipeline in pipelines:
                for config in configs:
                    run_chunk(args.work, args.dataset, pipeline, config, min(upto, args.limit))
    result = report(args.work, configs, pipelines)
    result["note"] = args.note
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
