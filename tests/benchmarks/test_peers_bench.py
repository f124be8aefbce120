"""``benchmarks/peers.py`` and ``evals.peer_scores`` on small synthetic run folders: each
peer paired with hoptree's default by question id (hoptree minus the peer), the plumbing check
(``bm25`` against ``peer-standard``), slices or runs missing, and the interleaved order of the
runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.peer_scores import peer_scores, peers_figure, peers_markdown, peers_plot
from tests.benchmark_module import load_benchmark

peers = load_benchmark("peers")


def row(
    qid: str,
    f1: float,
    seconds: float = 10.0,
    calls: int = 2,
    finished_at: str = "2026-11-29T23:00:00+00:00",
) -> dict[str, Any]:
    return {
        "id": qid,
        "finished_at": finished_at,
        "f1": f1,
        "em": float(f1 == 1.0),
        "seconds": seconds,
        "llm_calls": calls,
        "prompt_tokens": 100 * calls,
        "error": None,
    }


def write_run(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "details.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_peer_is_paired_with_hoptree_by_id_and_the_delta_is_hoptree_minus_peer(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "hotpotqa_b"
    # hoptree: q0..q3 = 1, 0, 1, 0.5 (q9 only hoptree has: left out); the peer, written in
    # another order: q3 0.5, q2 0, q1 1, q0 0 -> +1, -1, +1, 0: two wins, one loss, +25 points
    write_run(
        folder / "draft-first",
        [row(f"q{i}", f, 20.0) for i, f in enumerate([1, 0, 1, 0.5])] + [row("q9", 1.0)],
    )
    peer_rows = [
        row("q3", 0.5, 30.0, 5),
        row("q2", 0.0, 30.0, 5),
        row("q1", 1.0, 40.0, 3),
        row("q0", 0.0, 50.0, 5),
    ]
    for r in peer_rows:  # what the peer searched for; q0 was answered without a search
        r["peer"] = {"queries": [] if r["id"] == "q0" else ["a query"]}
    write_run(folder / "peer-ircot", peer_rows)
    data = peer_scores(tmp_path)
    ircot = data["hotpotqa_b"]["peer-ircot"]
    assert ircot["n"] == 4
    assert ircot["delta"] == 25.0 and (ircot["wins"], ircot["losses"]) == (2, 1)
    assert ircot["f1"] == 37.5 and ircot["hoptree_f1"] == 62.5
    assert ircot["ci_low"] <= 25.0 <= ircot["ci_high"]
    assert ircot["median_s"] == 35.0 and ircot["hoptree_median_s"] == 20.0
    assert ircot["median_calls"] == 5 and ircot["median_prompt_tokens"] == 500
    assert ircot["no_search"] == 1
    assert "plumbing" not in data["hotpotqa_b"]  # no peer-standard, no bm25
    assert set(data) == {"hotpotqa_b"}  # slices without a folder are left out, not zero
    assert "peer-ircot" in peers_markdown(data)


def test_seconds_compare_only_on_questions_whose_rows_were_made_beside_each_other(
    tmp_path: Path,
) -> None:
    """A run made again alone, in another session, is another machine hour than its peers':
    F1 pairs on every shared question, seconds only on the questions whose two rows finished
    within two hours of each other (a row without its time is beside nothing)."""
    folder = tmp_path / "fresh" / "2wiki"
    later = "2026-11-30T09:00:00+00:00"  # q0, q1 rerun alone the next morning
    write_run(
        folder / "draft-first",
        [
            row("q0", 1.0, 99.0, finished_at=later),
            row("q1", 1.0, 99.0, finished_at=later),
            row("q2", 1.0, 20.0),
            row("q3", 1.0, 30.0),
        ],
    )
    peer_rows = [row(f"q{i}", 0.0, 60.0) for i in range(4)]
    peer_rows[2]["finished_at"] = "2026-11-29T23:30:00"  # no zone: read as UTC
    del peer_rows[3]["finished_at"]
    write_run(folder / "peer-ircot", peer_rows)
    ircot = peer_scores(tmp_path)["fresh/2wiki"]["peer-ircot"]
    assert ircot["n"] == 4 and ircot["delta"] == 100.0  # F1: every shared question
    assert ircot["seconds_n"] == 1  # q2 only: q0 and q1 came later, q3's peer row has no time
    assert ircot["median_s"] == 60.0 and ircot["hoptree_median_s"] == 20.0
    write_run(folder / "draft-first", [row("q0", 1.0, 99.0, finished_at=later)])
    alone = peer_scores(tmp_path)["fresh/2wiki"]["peer-ircot"]
    assert alone["seconds_n"] == 0 and alone["median_s"] is None
    assert "none beside" in peers_markdown({"fresh/2wiki": {"peer-ircot": alone}})


def test_rows_labelled_with_their_chunk_are_beside_exactly_when_the_labels_match(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "fresh" / "musique"
    hoptree = [row(f"q{i}", 1.0, 20.0) for i in range(3)]
    peer = [row(f"q{i}", 0.0, 60.0) for i in range(3)]
    for r in (hoptree[0], peer[0]):  # one chunk that ran long: three hours apart, one label
        r["batch"] = "2026-11-30T02:42:02Z fresh/musique 5"
    peer[0]["finished_at"] = "2026-11-30T02:00:00+00:00"
    hoptree[1]["batch"] = "2026-11-30T02:42:02Z fresh/musique 5"  # minutes apart, two labels:
    peer[1]["batch"] = "2026-11-30T09:10:00Z fresh/musique 5"  # a chunk rerun the next run
    # q2: no label on either row, finished together: the two-hour rule
    write_run(folder / "draft-first", hoptree)
    write_run(folder / "peer-ircot", peer)
    assert peer_scores(tmp_path)["fresh/musique"]["peer-ircot"]["seconds_n"] == 2  # q0, q2


def test_the_plumbing_check_pairs_hoptrees_one_call_with_flashrags(tmp_path: Path) -> None:
    folder = tmp_path / "musique"
    write_run(folder / "bm25", [row("a", 1.0), row("b", 0.0)])
    write_run(folder / "peer-standard", [row("a", 1.0), row("b", 1.0)])
    plumbing = peer_scores(tmp_path)["musique"]["plumbing"]
    assert plumbing["delta"] == -50.0 and plumbing["against"] == "bm25"
    assert plumbing["peer"] == "peer-standard"


def test_a_run_shares_no_question_with_hoptree_gives_no_row(tmp_path: Path) -> None:
    folder = tmp_path / "2wiki"
    write_run(folder / "draft-first", [row("a", 1.0)])
    write_run(folder / "peer-react", [row("b", 1.0)])
    assert peer_scores(tmp_path) == {}


def record_child_runs(
    monkeypatch: Any, results: Path, pipelines: list[str]
) -> list[tuple[str, str]]:
    """``peers.py run`` with ``pipelines`` over run folders in ``results``: each child run it
    starts is recorded as (pipeline, limit) instead of run. The order is the point, not the
    question files (a clone has no ../shared)."""
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(peers, "RESULTS", results)
    monkeypatch.setattr(peers, "pipelines_to_run", lambda names: pipelines)
    monkeypatch.setattr(peers, "missing_dataset_files", lambda runs, data: [])

    def call(command: list[str]) -> int:
        calls.append(
            (command[command.index("--pipeline") + 1], command[command.index("--limit") + 1])
        )
        return 0

    monkeypatch.setattr(peers.subprocess, "call", call)
    return calls


def test_runs_are_interleaved_in_chunks_with_the_first_pipeline_rotating(
    monkeypatch: Any, tmp_path: Path
) -> None:
    calls = record_child_runs(monkeypatch, tmp_path, ["draft-first", "bm25", "x"])
    assert peers.main(["run", "--slices", "musique", "--limit", "7", "--chunk", "5"]) == 0
    assert calls == [
        ("draft-first", "5"),
        ("bm25", "5"),
        ("x", "5"),
        ("bm25", "7"),
        ("x", "7"),
        ("draft-first", "7"),
    ]
    args = peers.run_args("musique", "bm25", 7, 2)
    assert args[args.index("--offset") + 1] == "87"  # the report half of MuSiQue


def test_each_chunk_labels_its_rows_the_same_for_every_pipeline_and_no_other_chunk(
    monkeypatch: Any, tmp_path: Path
) -> None:
    record_child_runs(monkeypatch, tmp_path, ["draft-first", "bm25"])
    commands: list[list[str]] = []
    monkeypatch.setattr(peers.subprocess, "call", lambda command: commands.append(command) or 0)
    argv = ["run", "--slices", "musique", "2wiki", "--limit", "10", "--chunk", "5"]
    assert peers.main(argv) == 0
    labels = [(c[c.index("--dataset") + 1], c[c.index("--batch") + 1]) for c in commands]
    assert len(labels) == 8  # 2 chunks x 2 slices x 2 pipelines
    # one label a (chunk, slice), shared by its two pipelines
    assert [len({b for _, b in labels[i : i + 2]}) for i in range(0, 8, 2)] == [1, 1, 1, 1]
    assert len({b for _, b in labels}) == 4
    assert peers.main([*argv[:-2], "--chunk", "10"]) == 0  # another invocation, other labels
    assert not {c[c.index("--batch") + 1] for c in commands[8:]} & {b for _, b in labels}


def test_a_chunk_a_folder_already_holds_starts_no_child_run(
    monkeypatch: Any, tmp_path: Path
) -> None:
    calls = record_child_runs(monkeypatch, tmp_path, ["draft-first", "bm25"])
    write_run(tmp_path / "musique" / "draft-first", [row(f"q{i}", 1.0) for i in range(7)])
    # bm25 finished 5 and was killed writing its 6th: that torn line does not count
    write_run(tmp_path / "musique" / "bm25", [row(f"q{i}", 1.0) for i in range(5)])
    with (tmp_path / "musique" / "bm25" / "details.jsonl").open("a") as handle:
        handle.write('{"id": "q5", "f1"')
    assert peers.rows_written(tmp_path / "musique" / "bm25") == 5
    assert peers.main(["run", "--slices", "musique", "--limit", "10", "--chunk", "5"]) == 0
    assert calls == [("bm25", "10"), ("draft-first", "10")]


def test_the_picture_has_a_panel_for_each_slice_with_peers_and_none_without(
    tmp_path: Path,
) -> None:
    for key in ("hotpotqa_b", "fresh/musique"):
        write_run(tmp_path / key / "draft-first", [row("q0", 1.0), row("q1", 0.0)])
        write_run(tmp_path / key / "peer-ircot", [row("q0", 0.0), row("q1", 0.0)])
        write_run(tmp_path / key / "peer-self-ask", [row("q0", 1.0), row("q1", 1.0)])
    # a slice with the plumbing check alone draws no panel
    write_run(tmp_path / "2wiki" / "bm25", [row("q0", 1.0)])
    write_run(tmp_path / "2wiki" / "peer-standard", [row("q0", 0.0)])
    data = peer_scores(tmp_path)
    figure = peers_figure(data)
    assert figure is not None
    panels = {axes.get_title(): axes for axes in figure.axes}
    assert set(panels) == {"hotpotqa_b", "fresh/musique"}
    axes = panels["fresh/musique"]
    labels = [t.get_text() for t in axes.get_yticklabels()]
    names = dict(zip(labels, axes.get_yticks(), strict=True))
    assert set(names) == {"ircot", "self-ask"}  # without the prefix
    assert names["ircot"] > names["self-ask"]  # the first peer (by name) on top
    picture = peers_plot(data, tmp_path / "out" / "peers.png")
    assert picture is not None and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fresh = peers_figure(data, ("fresh/musique",))
    assert fresh is not None and [a.get_title() for a in fresh.axes] == ["fresh/musique"]
    nothing = tmp_path / "nothing.png"
    assert peers_plot({"2wiki": data["2wiki"]}, nothing) is None and not nothing.exists()


def test_why_writes_each_peers_wins_by_class(tmp_path: Path) -> None:
    write_run(tmp_path / "fresh" / "hotpotqa" / "draft-first", [row("q0", 0.0), row("q1", 1.0)])
    write_run(tmp_path / "fresh" / "hotpotqa" / "peer-ircot", [row("q0", 1.0), row("q1", 1.0)])
    out = tmp_path / "why.md"
    assert peers.main(["why", "--results", str(tmp_path), "--out", str(out)]) == 0
    # q0: no draft recorded, no supporting titles: the search cannot be told apart
    assert "| peer-ircot | 2 | 1 | 0 | 0 | 0 | 0 | 1 |" in out.read_text()
