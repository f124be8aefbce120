"""Building trees with a scripted chat model (deterministic control flow, not a language model)
and the real embedding model: tiny inputs, determinism, resume after a crash, caching, failures,
collections and incremental adds."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.messages import BaseMessage

from tests.locations import REPO
from tests.scripted_chat import ScriptedChatModel
from tree.build import TreeBuilder, TreeBuildError, TreeConfig
from tree.documents import SourceDocument
from tree.journal import BuildJournal, merge_journal
from tree.report import tree_report
from tree.store import Tree

ASTRONOMY = [
    "The telescope revealed a faint spiral galaxy beyond the Andromeda nebula.",
    "Astronomers measured the redshift of the galaxy's brightest stars.",
    "The rotation curve of the galaxy suggested large amounts of dark matter.",
    "Supernova remnants glowed in the infrared images of the galactic disk.",
    "The observatory scheduled spectroscopy of the bright galactic core.",
    "A comet with a long ion tail crossed the constellation Orion.",
    "Radio astronomers detected a pulsar spinning thirty times a second.",
    "The planet's moons cast shadows visible through the small telescope.",
    "Saturn's rings were tilted towards Earth during the opposition.",
    "A meteor shower lit the night sky above the mountain observatory.",
    "The astronomer catalogued variable stars in the globular cluster.",
    "Solar flares disrupted the radio telescope's observations for a day.",
]
BAKING = [
    "Knead the bread dough with flour, water, yeast and a pinch of salt.",
    "Let the dough rise in a warm kitchen for two hours before shaping.",
    "Bake the loaf in a hot oven until the crust turns deep golden brown.",
    "Brush the warm crust with melted butter before slicing the bread.",
    "Sourdough bakers keep a starter of wild yeast fed with fresh flour.",
    "Croissant dough is folded with cold butter to make flaky layers.",
    "The baker dusted the proofing baskets with rice flour each morning.",
    "Rye bread needs a longer fermentation and a denser crumb than wheat.",
    "Sprinkle sesame seeds on the rolls before they go into the oven.",
    "A steam tray in the oven helps the baguette crust crackle.",
    "Cool the loaves on a wire rack so the bottom crust stays crisp.",
    "The pastry chef piped cream into the choux buns after baking.",
]


def reply(messages: list[BaseMessage]) -> str:
    """Deterministic "summary": a label plus the first words of the passages."""
    passages = str(messages[1].content).split("Passages:", 1)[-1]
    return "Summary: about " + " ".join(passages.split()[:10])


def scripted(n: int = 500, fn=reply, **kwargs) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[fn] * n, **kwargs)


def doc(doc_id: str, sentences: list[str]) -> SourceDocument:
    return SourceDocument(id=doc_id, title=doc_id.title(), text=" ".join(sentences))


# one sentence (~14-18 tokens) per leaf
SMALL = {"chunk_tokens": 20}


def build(
    chat, embeddings, documents, journal: BuildJournal | None = None, **config
) -> tuple[Tree, TreeBuilder]:
    builder = TreeBuilder(chat, embeddings, TreeConfig(**{**SMALL, **config}), journal=journal)
    return asyncio.run(builder.build(documents)), builder


def shape(tree: Tree) -> list[tuple[str, int, str, tuple[str, ...]]]:
    return [(n.id, n.layer, n.text, tuple(n.children)) for n in tree.nodes]


@pytest.mark.parametrize("clustering", ["gmm", "leiden"])
@pytest.mark.parametrize("n", [1, 2, 3, 11])
def test_tiny_documents_build_a_valid_tree(embeddings, clustering: str, n: int) -> None:
    chat = scripted()
    tree, builder = build(chat, embeddings, [doc("tiny", ASTRONOMY[:n])], clustering=clustering)
    tree.validate()
    assert tree.layer_counts()[0] == n
    summaries = [node for node in tree.nodes if node.layer > 0]
    assert len(chat.calls) == len(summaries) == builder.stats.summaries
    if n == 1:
        assert tree.depth == 0 and not chat.calls  # a lone leaf is its own root
    else:
        assert tree.depth >= 1
        assert len(tree.layer(tree.depth)) < n
    assert tree.documents[0].roots == [r.id for r in tree.roots()]


def test_summaries_use_the_tree_summary_prompt_in_document_order(embeddings) -> None:
    chat = scripted()
    tree, _ = build(chat, embeddings, [doc("d", ASTRONOMY[:3])], max_words=42)
    assert len(chat.calls) == 1
    system, user = chat.calls[0]
    assert "most 42 words" in str(system.content)
    body = str(user.content)
    positions = [body.index(sentence) for sentence in ASTRONOMY[:3]]
    assert positions == sorted(positions)
    (root,) = tree.roots()
    assert root.text.startswith("about ")  # "Summary:" preamble stripped
    assert root.metadata["usage"] == {"calls": 1, "prompt_tokens": 10, "completion_tokens": 5}


@pytest.mark.parametrize("clustering", ["gmm", "leiden"])
def test_same_seed_same_tree(embeddings, clustering: str) -> None:
    documents = [doc("mixed", ASTRONOMY + BAKING)]
    first, _ = build(scripted(), embeddings, documents, clustering=clustering)
    second, _ = build(scripted(), embeddings, documents, clustering=clustering)
    assert shape(first) == shape(second)
    assert np.array_equal(first.embeddings, second.embeddings)
    assert first.depth >= 1 and len(first.layer(1)) > 1


KILLED_BUILD = """
import asyncio, os, signal, sys
from pathlib import Path
from agent.runtime.embeddings import SentenceTransformerEmbeddings
from tests.scripted_chat import ScriptedChatModel
from tests.tree.test_build import ASTRONOMY, BAKING, SMALL, doc, reply
from tree.build import TreeBuilder, TreeConfig
from tree.journal import BuildJournal

answered = Path(sys.argv[1])
survive = int(sys.argv[3])

def dies_after_n(messages):
    done = answered.read_text().count("\\x1e") if answered.exists() else 0
    if done >= survive:
        os.kill(os.getpid(), signal.SIGKILL)  # a kill mid-build: no cleanup, no finally
    with open(answered, "a") as fh:
        fh.write(str(messages[1].content) + "\\x1e")
        fh.flush()
        os.fsync(fh.fileno())
    return reply(messages)

config = TreeConfig(clustering="leiden", max_cluster_tokens=120, concurrency=1, **SMALL)
builder = TreeBuilder(
    ScriptedChatModel(replies=[dies_after_n] * 100),
    SentenceTransformerEmbeddings(),
    config,
    journal=BuildJournal(Path(sys.argv[2])),
)
asyncio.run(builder.build([doc("mixed", ASTRONOMY + BAKING)]))
"""


def test_resume_after_a_kill_repeats_no_finished_call(embeddings, tmp_path: Path) -> None:
    """A build SIGKILLed after three summaries resumes from its journal: the model is never asked
    for a summary that finished before the kill, and the tree is the one a clean build makes."""
    documents = [doc("mixed", ASTRONOMY + BAKING)]
    config = {"clustering": "leiden", "max_cluster_tokens": 120, "concurrency": 1}
    reference, _ = build(scripted(), embeddings, documents, **config)
    total = sum(1 for n in reference.nodes if n.layer > 0)
    assert total >= 5

    answered_file, journal_path, survive = tmp_path / "answered", tmp_path / "journal.jsonl", 3
    root = REPO
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_BUILD, str(answered_file), str(journal_path), str(survive)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    answered = [p for p in answered_file.read_text().split("\x1e") if p]
    assert len(answered) == survive

    journal = BuildJournal(journal_path)
    assert len(journal.summaries) == survive and journal.clusterings
    resumed_chat = scripted()
    tree, builder = build(resumed_chat, embeddings, documents, journal, **config)
    asked_again = {str(m[1].content) for m in resumed_chat.calls}
    assert not asked_again & set(answered), "a summary finished before the kill was asked again"
    assert len(resumed_chat.calls) == total - survive
    assert builder.stats.summaries_resumed == survive
    assert builder.stats.clusterings_resumed >= 1  # the layer being summarized was journaled
    assert shape(tree) == shape(reference)


def test_a_torn_journal_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = BuildJournal(path)
    journal.record_summary("k1", {"text": "one", "metadata": {}})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "summary", "key": "k2", "te')  # killed mid-write
    again = BuildJournal(path)
    assert set(again.summaries) == {"k1"} and again.torn_lines == 1
    again.record_summary("k3", {"text": "three", "metadata": {}})  # the resumed build goes on
    third = BuildJournal(path)
    assert set(third.summaries) == {"k1", "k3"} and third.torn_lines == 1


def test_a_journal_merged_into_an_empty_one_elsewhere_rebuilds_the_tree_without_the_model(
    embeddings, tmp_path: Path
) -> None:
    documents = [doc("mixed", ASTRONOMY + BAKING)]
    first = BuildJournal(tmp_path / "cache" / "journal.jsonl")
    reference, builder = build(scripted(), embeddings, documents, first, clustering="leiden")
    assert builder.stats.summaries > 0
    records = len(first.path.read_text().splitlines())
    kept = tmp_path / "results" / "tree-journal.jsonl"
    assert merge_journal(first.path, kept) == records
    assert merge_journal(first.path, kept) == 0  # content-keyed: a second copy adds nothing
    elsewhere = tmp_path / "new-machine" / "journal.jsonl"
    assert merge_journal(kept, elsewhere) == records
    tree, again = build(
        ScriptedChatModel(replies=[]),
        embeddings,
        documents,
        BuildJournal(elsewhere),
        clustering="leiden",
    )
    assert again.stats.summaries_resumed == builder.stats.summaries
    assert shape(tree) == shape(reference)


def test_merging_journals_skips_torn_lines_and_never_extends_one(tmp_path: Path) -> None:
    source, target = tmp_path / "source.jsonl", tmp_path / "target.jsonl"
    BuildJournal(source).record_summary("k1", {"text": "one", "metadata": {}})
    with open(source, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "summary", "key": "k2", "te')  # the source's build was killed mid-write
    target.write_text(
        '{"kind": "summary", "key": "k0", "text": "zero", "metadata": {}}\n{"kind": "su'
    )
    assert merge_journal(source, target) == 1
    merged = BuildJournal(target)
    assert set(merged.summaries) == {"k0", "k1"} and merged.torn_lines == 1
    assert merge_journal(tmp_path / "absent.jsonl", target) == 0


def test_rebuild_through_the_sqlite_cache_makes_no_new_calls(embeddings, tmp_path: Path) -> None:
    from agent.runtime.llm_cache import SQLiteLLMCache

    cache = SQLiteLLMCache(tmp_path / "cache.sqlite")
    documents = [doc("mixed", ASTRONOMY + BAKING)]
    chat = scripted(cache=cache)
    first, first_builder = build(chat, embeddings, documents, clustering="leiden")
    calls = len(chat.calls)
    assert calls == first_builder.stats.summaries > 0
    second, second_builder = build(chat, embeddings, documents, clustering="leiden")
    assert len(chat.calls) == calls, "rebuilding asked the model again"
    assert second_builder.stats.llm_cache_hits == calls
    assert second_builder.stats.prompt_tokens == 0
    assert shape(first) == shape(second)
    # the tree still knows what it cost when it was made
    assert tree_report(second)["llm_calls"] == calls
    cache.close()


def test_previous_tree_lends_its_summaries(embeddings) -> None:
    documents = [doc("mixed", ASTRONOMY + BAKING)]
    first, _ = build(scripted(), embeddings, documents, clustering="leiden")
    no_replies = ScriptedChatModel(replies=[])
    builder = TreeBuilder(no_replies, embeddings, TreeConfig(clustering="leiden", **SMALL))
    again = asyncio.run(builder.build(documents, previous=first))
    assert not no_replies.calls
    assert builder.stats.summaries_reused == sum(1 for n in first.nodes if n.layer > 0)
    assert shape(again) == shape(first)


def test_failed_calls_fall_back_to_a_flagged_concatenation(embeddings) -> None:
    def broken(messages: list[BaseMessage]) -> str:
        raise ValueError("server said 500")

    chat = scripted(fn=broken)
    tree, builder = build(chat, embeddings, [doc("d", ASTRONOMY[:3])], max_attempts=2)
    (root,) = tree.roots()
    assert root.metadata["fallback"] == "truncated_concatenation"
    assert root.metadata["attempts"] == 2 and "server said 500" in root.metadata["errors"][0]
    assert root.text.startswith(ASTRONOMY[0][:40])
    assert len(root.text.split()) <= 101  # max_words words plus the ellipsis
    assert builder.stats.fallbacks == 1 and len(chat.calls) == 2
    # the next run retries the failed cluster instead of replaying the fallback
    healed_chat = scripted()
    builder = TreeBuilder(healed_chat, embeddings, TreeConfig(**SMALL))
    healed = asyncio.run(builder.build([doc("d", ASTRONOMY[:3])], previous=tree))
    assert len(healed_chat.calls) == 1 and "fallback" not in healed.roots()[0].metadata


def test_empty_reply_is_retried(embeddings) -> None:
    chat = ScriptedChatModel(replies=["   ", "A real summary of the stars."])
    tree, _ = build(chat, embeddings, [doc("d", ASTRONOMY[:3])])
    (root,) = tree.roots()
    assert root.text == "A real summary of the stars."
    assert root.metadata["attempts"] == 2 and "fallback" not in root.metadata


def test_every_call_has_a_timeout(embeddings) -> None:
    def slow(messages: list[BaseMessage]) -> str:
        time.sleep(1.0)
        return "too late"

    chat = scripted(fn=slow)
    tree, _ = build(chat, embeddings, [doc("d", ASTRONOMY[:3])], call_timeout_s=0.2, max_attempts=2)
    (root,) = tree.roots()
    # both attempts were cut by the timeout (not waited out): the reply never made it in
    assert root.metadata["fallback"] and "timeout" in root.metadata["errors"][0]
    assert root.metadata["attempts"] == 2 and "too late" not in root.text


def test_concurrency_is_bounded(embeddings) -> None:
    lock = threading.Lock()
    in_flight = [0, 0]  # current, peak

    def tracked(messages: list[BaseMessage]) -> str:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return reply(messages)

    build(
        scripted(fn=tracked),
        embeddings,
        [doc("d", ASTRONOMY + BAKING)],
        clustering="leiden",
        max_cluster_tokens=60,
        concurrency=2,
    )
    assert in_flight[1] == 2


def test_max_layers_bounds_the_depth(embeddings) -> None:
    tree, _ = build(
        scripted(), embeddings, [doc("d", ASTRONOMY + BAKING)], clustering="leiden", max_layers=1
    )
    assert tree.depth == 1 and len(tree.roots()) == len(tree.layer(1)) > 1


def test_per_document_trees_never_mix_documents(embeddings) -> None:
    documents = [doc("stars", ASTRONOMY), doc("bread", BAKING)]
    tree, _ = build(scripted(), embeddings, documents, clustering="leiden", mode="per_document")
    assert tree.mode == "per_document"
    for node in tree.nodes:
        assert len(node.source_ids) == 1
    for entry in tree.documents:
        assert entry.roots and entry.leaves == 12
        assert all(tree.node(r).source_ids == [entry.id] for r in entry.roots)


def test_single_tree_mixes_documents_and_roots_cover_them(embeddings) -> None:
    documents = [doc("stars", ASTRONOMY[:6]), doc("bread", BAKING[:5])]
    tree, _ = build(scripted(), embeddings, documents)
    (root,) = tree.roots()
    assert root.source_ids == ["bread", "stars"]
    assert [d.roots for d in tree.documents] == [[root.id], [root.id]]


def _summaries(tree: Tree) -> dict[str, str]:
    return {n.id: n.text for n in tree.nodes if n.layer > 0}


def test_adding_documents_to_a_single_tree_keeps_layer_one(embeddings) -> None:
    config = TreeConfig(clustering="leiden", **SMALL)
    base, _ = build(scripted(), embeddings, [doc("stars", ASTRONOMY)], clustering="leiden")
    chat = scripted()
    builder = TreeBuilder(chat, embeddings, config)
    grown = asyncio.run(builder.add(base, [doc("bread", BAKING)]))
    grown.validate()
    old_layer1 = {n.id: (n.text, tuple(n.children)) for n in base.layer(1)}
    new_layer1 = {n.id: (n.text, tuple(n.children)) for n in grown.layer(1)}
    assert old_layer1.items() <= new_layer1.items(), "an old layer-1 cluster changed"
    assert builder.stats.leaves_added == 12 and builder.stats.documents_added == 1
    added_layer1 = [n for n in grown.layer(1) if n.id not in old_layer1]
    assert added_layer1 and all(n.source_ids == ["bread"] for n in added_layer1)
    # calls = every summary the old tree did not already hold
    assert len(chat.calls) == len(set(_summaries(grown)) - set(_summaries(base)))
    assert builder.stats.summaries_reused >= len(old_layer1)
    assert {d.id for d in grown.documents} == {"stars", "bread"}
    assert np.array_equal(grown.embeddings[:12], base.embeddings[:12])


def test_adding_to_per_document_trees_touches_nothing_old(embeddings) -> None:
    config = TreeConfig(clustering="leiden", mode="per_document", **SMALL)
    base, _ = build(
        scripted(), embeddings, [doc("stars", ASTRONOMY)], clustering="leiden", mode="per_document"
    )
    chat = scripted()
    grown = asyncio.run(TreeBuilder(chat, embeddings, config).add(base, [doc("bread", BAKING)]))
    old = {n.id: n.text for n in base.nodes}
    assert all(grown.node(i).text == t for i, t in old.items())
    bread_summaries = [n for n in grown.nodes if n.layer > 0 and n.source_ids == ["bread"]]
    assert len(chat.calls) == len(bread_summaries) > 0


def test_add_skips_known_documents_and_refuses_changes(embeddings) -> None:
    config = TreeConfig(clustering="leiden", **SMALL)
    base, _ = build(scripted(), embeddings, [doc("stars", ASTRONOMY)], clustering="leiden")
    idle = ScriptedChatModel(replies=[])
    same = asyncio.run(TreeBuilder(idle, embeddings, config).add(base, [doc("stars", ASTRONOMY)]))
    assert same is base and not idle.calls
    with pytest.raises(TreeBuildError, match="different text"):
        asyncio.run(TreeBuilder(idle, embeddings, config).add(base, [doc("stars", BAKING)]))
    with pytest.raises(TreeBuildError, match="other settings"):
        asyncio.run(
            TreeBuilder(idle, embeddings, TreeConfig(clustering="gmm", **SMALL)).add(
                base, [doc("bread", BAKING)]
            )
        )


def test_duplicate_or_empty_documents_are_refused(embeddings) -> None:
    builder = TreeBuilder(scripted(), embeddings, TreeConfig(**SMALL))
    with pytest.raises(TreeBuildError, match="share an id"):
        asyncio.run(builder.build([doc("a", ASTRONOMY[:2]), doc("a", BAKING[:2])]))
    with pytest.raises(TreeBuildError, match="no text"):
        asyncio.run(builder.build([SourceDocument(id="e", title="", text="  ")]))


def test_semantic_leaves_build(embeddings) -> None:
    tree, _ = build(
        scripted(),
        embeddings,
        [doc("mixed", ASTRONOMY[:5] + BAKING[:5])],
        leaves="semantic",
        semantic_min_tokens=20,
        semantic_max_tokens=400,
    )
    leaves = tree.layer(0)
    assert any("galaxy" in leaf.text for leaf in leaves)
    assert not any("galax" in leaf.text and "dough" in leaf.text for leaf in leaves)
