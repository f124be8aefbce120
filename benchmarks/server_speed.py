"""How fast the embedded model reads and writes on this machine, under llama.cpp's own knobs.

A planner question costs its prompt tokens over the server's reading speed plus its completion
tokens over its decoding speed (``benchmarks/results/planner-profile.md`` splits both per
step). This measures the two speeds of the embedded GGUF directly, on the server the product
launches (``LlamaServer.params``) with one knob changed per variant (flash attention, the
micro-batch, the CPU weight repacking, the threads that read a batch...). Variants start one at
a time (one model working at a time), in interleaved rounds so a machine that gets busier slows
every variant alike; each request reads a prompt the server has not cached and writes a fixed
number of tokens at temperature 0. The report gives median reading and decoding tokens/s, the
ratio to the first variant, whether each variant's replies equal the first's, and the seconds
those speeds put under a planner question of given token counts::

    python benchmarks/server_speed.py --variant base: \\
        --variant flash-off:flash_attn_type=0 --variant ubatch-1024:n_batch=2048,n_ubatch=1024

Keys are ``CommonParams`` attributes (dotted for nested ones: ``cpuparams_batch.n_threads``);
values are integers, floats or true/false, an enum attribute takes its integer value.
"""

from __future__ import annotations

import argparse
import enum
import functools
import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.runtime.gguf_assembly import LOCAL_MODELS, assemble
from agent.runtime.llama_server import LlamaServer
from agent.settings import Settings

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "server-speed"
PASSAGES = HERE.parent / "tests" / "data" / "passages.jsonl"
# The medians of the MuSiQue report run of `full` (evals/results/v4/musique/full, d91d17a): what
# one planner question sends, what of it the server found in its prefix cache, and what it writes.
QUESTION_TOKENS = (2094, 786, 319)


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``name:key=value,key=value`` (``name:`` alone = the product's server as it is)."""
    name, sep, rest = text.partition(":")
    if not name or not sep:
        raise argparse.ArgumentTypeError(f"variant {text!r}: name:key=value,... expected")
    overrides: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise argparse.ArgumentTypeError(f"variant {text!r}: {item!r} is not key=value")
        overrides[key.strip()] = value.strip()
    return name, overrides


def apply_overrides(params: Any, overrides: dict[str, str]) -> None:
    """Set each dotted attribute of ``params``, converting the text to the attribute's type."""
    for key, text in overrides.items():
        *path, last = key.split(".")
        target = params
        for part in path:
            target = getattr(target, part)
        if not hasattr(target, last):
            raise ValueError(f"no setting {key!r} on the llama.cpp server parameters")
        current = getattr(target, last)
        value: Any
        if isinstance(current, enum.Enum):
            value = type(current)(int(text))
        elif isinstance(current, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(f"{key}: true or false, not {text!r}")
            value = text.lower() == "true"
        elif isinstance(current, int):
            value = int(text)
        elif isinstance(current, float):
            value = float(text)
        else:
            value = text
        setattr(target, last, value)


@functools.cache
def _passage_texts() -> tuple[str, ...]:
    lines = PASSAGES.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line)["text"] for line in lines if line)


def probe_prompt(words: int, request: int) -> str:
    """About ``words`` words of encyclopedic prose (the test passages, numbered), behind a
    request number so no two requests share a prefix beyond the instruction."""
    texts = _passage_texts()
    out: list[str] = []
    n = 0
    while len(out) < words:
        out.extend(f"({n}) {texts[n % len(texts)]}".split())
        n += 1
    return f"Request {request}.\n" + " ".join(out[:words]) + "\nList the rivers named above:"


@dataclass
class Measurement:
    variant: str
    overrides: dict[str, str]
    load_s: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    read_tps: list[float] = field(default_factory=list)
    decode_tps: list[float] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)


class VariantServer(LlamaServer):
    """The product's server (its start, port and health wait) with a variant's settings laid
    over its parameters."""

    def __init__(self, gguf: Path, overrides: dict[str, str], *, threads: int) -> None:
        super().__init__(gguf, alias="probe", threads=threads, startup_timeout_s=300)
        self.overrides = overrides

    def params(self, xllamacpp: Any) -> Any:
        params = super().params(xllamacpp)
        apply_overrides(params, self.overrides)
        return params


def run_round(
    gguf: Path, m: Measurement, *, requests: int, words: int, tokens: int, threads: int
) -> None:
    with VariantServer(gguf, m.overrides, threads=threads) as server:
        assert server.load_seconds is not None
        m.load_s.append(server.load_seconds)
        url = server.base_url.removesuffix("/v1")  # llama.cpp's native /completion route
        with httpx.Client(timeout=600) as client:
            for i in range(requests):
                body = {
                    "prompt": probe_prompt(words, i),
                    "n_predict": tokens,
                    "temperature": 0,
                    "cache_prompt": False,
                    "ignore_eos": True,
                }
                reply = client.post(f"{url}/completion", json=body).json()
                timings = reply["timings"]
                m.prompt_tokens.append(int(timings["prompt_n"]))
                m.read_tps.append(float(timings["prompt_per_second"]))
                m.decode_tps.append(float(timings["predicted_per_second"]))
                m.replies.append(reply["content"])


def seconds_for(read_tps: float, decode_tps: float, question: tuple[int, int, int]) -> float:
    """A question's model seconds: the prompt tokens not found in the prefix cache read, the
    completion tokens written."""
    prompt, cached, completion = question
    return (prompt - cached) / read_tps + completion / decode_tps


def report(ms: list[Measurement], question: tuple[int, int, int], header: str) -> str:
    base = ms[0]
    b_read, b_decode = statistics.median(base.read_tps), statistics.median(base.decode_tps)
    prompt, cached, completion = question
    lines = [
        "# Embedded model: reading and decoding speed under llama.cpp's knobs",
        "",
        header,
        "",
        f"Seconds per question: {prompt - cached:,} prompt tokens read ({prompt:,} sent, "
        f"{cached:,} found in the prefix cache) and {completion:,} completion tokens written "
        "(the medians of the MuSiQue report run of `full`), at the variant's median speeds.",
        "",
        "| variant | settings | requests | prompt tok | read tok/s | x base | decode tok/s "
        "| x base | same replies | seconds per question |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in ms:
        read, decode = statistics.median(m.read_tps), statistics.median(m.decode_tps)
        same = sum(a == b for a, b in zip(m.replies, base.replies, strict=False))
        settings = ", ".join(f"`{k}={v}`" for k, v in m.overrides.items()) or "the product's"
        lines.append(
            f"| {m.variant} | {settings} | {len(m.read_tps)} | "
            f"{statistics.median(m.prompt_tokens):.0f} | {read:.1f} | {read / b_read:.2f} | "
            f"{decode:.1f} | {decode / b_decode:.2f} | {same}/{len(m.replies)} | "
            f"{seconds_for(read, decode, question):.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", type=parse_variant, action="append", required=True)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every variant")
    ap.add_argument("--requests", type=int, default=3, help="requests per variant per round")
    ap.add_argument("--words", type=int, default=450, help="prompt words per request")
    ap.add_argument("--tokens", type=int, default=48, help="tokens written per request")
    ap.add_argument("--threads", type=int, default=0, help="0: one per core (the product's)")
    ap.add_argument("--question", type=int, nargs=3, metavar=("PROMPT", "CACHED", "COMPLETION"),
                    default=QUESTION_TOKENS)  # fmt: skip
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="writes OUT.md and OUT.json")
    args = ap.parse_args(argv)
    settings = Settings()
    spec = LOCAL_MODELS[settings.llm.local_model]
    gguf = assemble(spec, settings.models_dir)
    ms = [Measurement(name, overrides) for name, overrides in args.variant]
    for r in range(args.rounds):
        for m in ms:
            run_round(
                gguf, m, requests=args.requests, words=args.words, tokens=args.tokens,
                threads=args.threads,
            )  # fmt: skip
            print(
                f"round {r + 1}/{args.rounds} {m.variant}: read "
                f"{statistics.median(m.read_tps):.1f} tok/s, decode "
                f"{statistics.median(m.decode_tps):.1f} tok/s",
                flush=True,
            )
    header = (
        f"`benchmarks/server_speed.py` on `{spec.name}`, {args.rounds} interleaved rounds of "
        f"{args.requests} requests per variant, {args.words} prompt words and {args.tokens} "
        "written tokens per request, one server at a time, nothing else running."
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(report(ms, tuple(args.question), header))
    args.out.with_suffix(".json").write_text(json.dumps([asdict(m) for m in ms], indent=1) + "\n")
    print(f"wrote {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
