"""hoptree's default against each peer pipeline, per slice, from committed rows (no model).

The peers' runs (``evals/results/peers/<slice>/<pipeline>``, made by ``benchmarks/peers.py
run``) sit beside hoptree's own default (``draft-first``) and one-call ``bm25`` run on the same
questions, interleaved in the same session. Each peer is paired with hoptree's default by
question id: the difference is hoptree minus the peer, with the paired 95% bootstrap interval
every comparison of the project uses, and hoptree's wins and losses. ``peer-standard``
(FlashRAG's one-call RAG) is paired with hoptree's ``bm25`` on the same retriever: the check that
the plumbing is equal. ``benchmarks/results/peers.json`` and the chains scoreboard's peers
section are written from this.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.compare import draw_interval, interval_color
from evals.paired import DEFAULT_RESAMPLES, DEFAULT_SEED, paired_diff
from evals.report import details_or_none

PEERS_FOLDER = "peers"  # under evals/results
# today's report slices (read while the planner was designed), then the fresh ones nobody has read
SLICES = ("hotpotqa_b", "2wiki", "musique", "fresh/hotpotqa", "fresh/2wiki", "fresh/musique")
FRESH = SLICES[3:]
HOPTREE = "draft-first"  # hoptree's default
ONE_CALL = "bm25"  # hoptree's one-call RAG on the peers' retriever
PLUMBING_PEER = "peer-standard"
PEER_PREFIX = "peer-"

Rows = Mapping[str, Mapping[str, Any]]

# Rows written before they carried their chunk's label (``batch``) were made beside each other
# (the same chunk of an interleaved run: the same machine in the same hour, the only way seconds
# compare) when they finished this close together; a run made again alone, in another session,
# is hours or days away from its peers' rows.
BESIDE = timedelta(hours=2)


def rows_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in details_or_none(run_dir) or []}


def _median(values: Sequence[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def _mean(rows: Sequence[Mapping[str, Any]], key: str) -> float:
    return round(100.0 * statistics.fmean(float(r.get(key) or 0.0) for r in rows), 2)


def _finished(row: Mapping[str, Any]) -> datetime | None:
    """When the row was written (rows carry UTC times; one without a zone is read as UTC)."""
    try:
        when = datetime.fromisoformat(str(row["finished_at"]))
    except (KeyError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def made_beside(one: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether two rows of a question were made beside each other: the same ``batch`` (the
    chunk of an interleaved run, ``benchmarks/peers.py``) when both carry one; otherwise
    (rows written before the label) finished within ``BESIDE`` of each other. A row without
    its time is not known to be beside anything."""
    if one.get("batch") and other.get("batch"):
        return one["batch"] == other["batch"]
    a, b = _finished(one), _finished(other)
    return a is not None and b is not None and abs(a - b) <= BESIDE


def pair(
    hoptree: Rows, peer: Rows, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, Any] | None:
    """hoptree minus the peer on the questions both answered (a ``peers.json`` entry), or
    None when they share none."""
    ids = sorted(hoptree.keys() & peer.keys())
    if not ids:
        return None
    ours = {i: float(hoptree[i]["f1"]) for i in ids}
    theirs = {i: float(peer[i]["f1"]) for i in ids}
    diff = paired_diff(ours, theirs, resamples=resamples, seed=seed)
    peer_rows = [peer[i] for i in ids]
    # seconds only where the two rows were made beside each other
    beside = [i for i in ids if made_beside(hoptree[i], peer[i])]
    return {
        "n": len(ids),
        "f1": _mean(peer_rows, "f1"),
        "em": _mean(peer_rows, "em"),
        "hoptree_f1": _mean([hoptree[i] for i in ids], "f1"),
        "delta": round(diff.mean, 2),
        "ci_low": round(diff.low, 2),
        "ci_high": round(diff.high, 2),
        "wins": diff.wins,
        "losses": diff.losses,
        "seconds_n": len(beside),
        "median_s": _median([float(peer[i]["seconds"]) for i in beside]),
        "hoptree_median_s": _median([float(hoptree[i]["seconds"]) for i in beside]),
        "median_calls": _median([float(r["llm_calls"]) for r in peer_rows]),
        "median_prompt_tokens": _median([float(r["prompt_tokens"]) for r in peer_rows]),
        "errors": sum(1 for r in peer_rows if r.get("error")),
        # questions the peer answered without searching once (the plumbing line has no "peer")
        "no_search": sum(1 for r in peer_rows if "peer" in r and not r["peer"].get("queries")),
    }


def slice_runs(results: Path) -> Iterator[tuple[str, Path, Rows, dict[str, Rows]]]:
    """Each slice folder under ``results`` (the peers folder), in ``SLICES`` order, with
    hoptree's default rows there and each peer's rows by folder name; a slice without a folder
    is left out."""
    for key in SLICES:
        folder = results / key
        if not folder.is_dir():
            continue
        peers = sorted(p for p in folder.iterdir() if p.name.startswith(PEER_PREFIX))
        yield key, folder, rows_of(folder / HOPTREE), {p.name: rows_of(p) for p in peers}


def peer_scores(results: Path) -> dict[str, Any]:
    """Every slice folder under ``results`` (the peers folder): each peer against hoptree's
    default, and the plumbing check; slices without runs are left out, never filled in."""
    out: dict[str, Any] = {}
    for key, folder, hoptree, peers in slice_runs(results):
        entry: dict[str, Any] = {}
        for name, rows in peers.items():
            row = pair(hoptree, rows)
            if row is not None:
                entry[name] = row
        plumbing = pair(rows_of(folder / ONE_CALL), rows_of(folder / PLUMBING_PEER))
        if plumbing is not None:
            entry["plumbing"] = {"against": ONE_CALL, "peer": PLUMBING_PEER, **plumbing}
        if entry:
            out[key] = entry
    return out


def peers_markdown(data: Mapping[str, Any], heading: str = "#") -> str:
    """The tables of ``peer_scores``: one per slice, the plumbing check above it."""
    lines = [
        f"{heading} hoptree's default against the peers",
        "",
        "From `evals/results/peers/<slice>/` (no model call). Δ is hoptree's default "
        "(`draft-first`) minus the peer, in F1 points, on the questions both answered, with the "
        "paired 95% bootstrap interval; W/L are hoptree's wins and losses. The runs of a slice "
        "were made interleaved (a few questions of each pipeline in turn), but a run made again "
        "alone is not the peers' machine hour: seconds are the medians over the *beside* "
        "questions only, those whose two rows were made in the same chunk of an interleaved run "
        "(the chunk's label in both rows; rows from before the label: finished within two hours "
        "of each other; hoptree's default on the fresh slices' questions "
        "1-25 was rerun alone, thirtieth session, so there only 26-50 count). *No search*: the "
        "questions the peer answered without one "
        "search (LangChain's ReAct agent on this model: it answers without calling its tool, "
        "or writes the call as text that the server does not parse as one: the model's chat "
        'template shows the call\'s format as `{{"name": ..., "arguments": ...}}`, its '
        "Jinja braces printed literally, and the 1.5B copies the doubled braces without the "
        "`<tool_call>` tags llama.cpp's parser looks for; LlamaIndex's multi-step engine: "
        'asked for its first sub-question, the 1.5B answers "None", which the engine reads as '
        'nothing left to ask, so it stops before any retrieval and answers "Empty Response"). '
        "LlamaIndex's rows were run after the others on the same questions, not interleaved.",
        "",
        "The plumbing check (`peer-standard`, FlashRAG's one call, against hoptree's `bm25` on the "
        "same retrieval) is taken apart in `peer-plumbing.md` (`benchmarks/peer_plumbing.py`): "
        "FlashRAG's prompt sent through hoptree's own client gets the peer's recorded reply, so "
        "server, sampling and retrieval are the same; a gap between the two is their prompts'.",
        "",
    ]
    if not data:
        return "\n".join([*lines, "No peer run has rows yet.", ""])
    for key, entry in data.items():
        lines += [f"{heading}# {key}", ""]
        plumbing = entry.get("plumbing")
        if plumbing:
            lines += [
                f"Plumbing check: hoptree's `{plumbing['against']}` minus `{plumbing['peer']}` "
                f"(the same retriever, one call each) on {plumbing['n']} questions: "
                f"{plumbing['delta']:+.1f} [{plumbing['ci_low']:+.1f}, {plumbing['ci_high']:+.1f}]"
                f", W/L {plumbing['wins']}/{plumbing['losses']}.",
                "",
            ]
        lines += [
            "| peer | n | peer F1 | peer EM | hoptree F1 | Δ [95% CI] | W/L | median s "
            "(peer / hoptree) | beside | median calls | median prompt tokens | no search "
            "| errors |",
            "|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for name, r in entry.items():
            if name == "plumbing":
                continue
            lines.append(
                f"| {name} | {r['n']} | {r['f1']:.1f} | {r['em']:.1f} | {r['hoptree_f1']:.1f} "
                f"| {r['delta']:+.1f} [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}] "
                f"| {r['wins']}/{r['losses']} | {_seconds(r)} | {r['seconds_n']} "
                f"| {r['median_calls']} | {r['median_prompt_tokens']} | {r.get('no_search', 0)} "
                f"| {r['errors']} |"
            )
        lines.append("")
    return "\n".join(lines)


# the bars for the default against the best peer: level means the interval's lower end
# above -3; ahead means the interval above zero and the point at +5 or more
LEVEL = -3.0
AHEAD = 5.0


def peers_figure(data: Mapping[str, Any], slices: Sequence[str] = SLICES) -> Any | None:
    """One panel per slice of ``slices`` (today's report slices on top, the fresh ones below):
    hoptree's default minus each peer in F1 points with its paired 95% interval, green where the
    interval is above zero, red where below, blue where it spans zero; lines at zero, at
    ``LEVEL`` and at ``AHEAD``. None when no slice has a peer (the plumbing check alone draws
    nothing)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = {
        key: [(name, r) for name, r in entry.items() if name != "plumbing"]
        for key, entry in data.items()
        if key in slices
    }
    panels = {key: shown for key, shown in panels.items() if shown}
    if not panels:
        return None
    rows = [[k for k in keys if k in panels] for keys in (SLICES[:3], FRESH)]
    rows = [keys for keys in rows if keys]
    columns = max(len(keys) for keys in rows)
    tallest = max(len(shown) for shown in panels.values())
    figure = Figure(figsize=(4.2 * columns, (1.3 + 0.42 * tallest) * len(rows)))
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(len(rows), columns)
    for i, keys in enumerate(rows):
        for j, key in enumerate(keys):
            _peers_panel(figure.add_subplot(grid[i, j]), key, panels[key])
    figure.suptitle(
        "hoptree's default minus each peer (F1 points, paired 95% bootstrap CI; hoptree's W/L)",
        fontsize=10,
    )
    figure.tight_layout()
    return figure


def peers_plot(data: Mapping[str, Any], path: Path, slices: Sequence[str] = SLICES) -> Path | None:
    """``peers_figure`` saved at ``path``; None, and nothing written, when it draws nothing."""
    figure = peers_figure(data, slices)
    if figure is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def _peers_panel(axes: Any, key: str, shown: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    places = list(range(len(shown)))[::-1]  # the first peer on top
    for place, (_, r) in zip(places, shown, strict=True):
        low, mean, high = float(r["ci_low"]), float(r["delta"]), float(r["ci_high"])
        draw_interval(axes, place, low, mean, high, color=interval_color(low, high), capsize=3)
        label = f"{mean:+.1f} ({r['wins']}/{r['losses']}, n={r['n']})"
        axes.annotate(
            label, (mean, place), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=6
        )
    axes.axvline(0.0, color="grey", linewidth=1)
    axes.axvline(LEVEL, color="grey", linewidth=0.8, linestyle=":")
    axes.axvline(AHEAD, color="grey", linewidth=0.8, linestyle="--")
    axes.set_yticks(places, [name.removeprefix(PEER_PREFIX) for name, _ in shown], fontsize=7)
    axes.set_ylim(-0.7, len(shown) - 0.3)
    axes.tick_params(axis="x", labelsize=7)
    axes.set_title(key, fontsize=9)


def _seconds(r: Mapping[str, Any]) -> str:
    if r.get("median_s") is None:
        return "none beside"
    return f"{r['median_s']} / {r['hoptree_median_s']}"
