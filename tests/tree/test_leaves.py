"""Leaves: chunks never cut a sentence; semantic segments cut where the topic changes."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from searchers.text import split_sentences
from tree.leaves import (
    adjacent_distances,
    chunk_text,
    semantic_segments,
    sentences_of,
)
from tree.tokens import approx_token_count, regex_token_count, truncate_to_tokens

STORY = """Dr. Watson met Mr. Holmes at 221B Baker St. in London. It was raining hard.
The U.S. ambassador, J. R. R. Tolkien, arrived later, e.g. after dinner! Was he late?

"Quite late," said Holmes. The clock struck nine. Nobody moved for a long while, and the fire
burned down to embers before anyone spoke again about the missing ambassador and his papers.

A single sentence that goes on and on without ever stopping, listing the apples, the pears, the
plums, the cherries, the grapes, the figs, the dates, the lemons, the limes, the oranges, the
melons, the berries and every other fruit the market sold that cold morning in the old town"""


def test_sentence_splitter_respects_abbreviations_and_initials() -> None:
    assert split_sentences("Dr. Watson met Mr. Holmes. It rained.") == [
        "Dr. Watson met Mr. Holmes.",
        "It rained.",
    ]
    assert split_sentences("J. R. R. Tolkien wrote it, e.g. the Hobbit. Fine!") == [
        "J. R. R. Tolkien wrote it, e.g. the Hobbit.",
        "Fine!",
    ]
    assert split_sentences('"Quite late," said Holmes. The clock struck.') == [
        '"Quite late," said Holmes.',
        "The clock struck.",
    ]


@pytest.mark.parametrize("max_tokens", [5, 12, 30, 100, 1000])
def test_chunks_never_cut_a_sentence(max_tokens: int) -> None:
    sentences = [s.text for s in sentences_of(STORY)]
    leaves = chunk_text(STORY, max_tokens)
    # every sentence lies whole inside exactly one leaf, and the leaves keep the order
    rebuilt = " ".join(leaf.text.replace("\n", " ") for leaf in leaves)
    assert rebuilt == " ".join(sentences)
    for sentence in sentences:
        assert sum(sentence in leaf.text for leaf in leaves) == 1
    assert sum(leaf.sentences for leaf in leaves) == len(sentences)
    for leaf in leaves:
        # over the limit only when the leaf is one over-long sentence
        assert leaf.tokens <= max_tokens or leaf.sentences == 1


def test_overlong_sentence_is_its_own_leaf_and_paragraphs_keep_breaks() -> None:
    leaves = chunk_text(STORY, 40)
    fruit = [leaf for leaf in leaves if "apples" in leaf.text]
    assert len(fruit) == 1 and fruit[0].sentences == 1 and fruit[0].tokens > 40
    assert fruit[0].text.startswith("A single sentence") and fruit[0].text.endswith("old town")
    big = chunk_text(STORY, 1000)
    assert len(big) == 1 and big[0].text.count("\n") == 2  # three paragraphs


def test_empty_and_whitespace_text_give_no_leaves() -> None:
    assert chunk_text("", 100) == []
    assert chunk_text(" \n\n \t ", 100) == []
    with pytest.raises(ValueError):
        chunk_text("text", 0)


def test_default_token_count_approximates_subwords() -> None:
    assert regex_token_count("Hello, world!") == 4
    assert approx_token_count("Hello, world!") == 5  # ceil(4 * 1.1)
    assert approx_token_count("") == 0
    cut, was_cut = truncate_to_tokens("one two three four five six", 3, regex_token_count)
    assert (cut, was_cut) == ("one two three", True)
    assert truncate_to_tokens("short", 3, regex_token_count) == ("short", False)


class _TopicEmbeddings(Embeddings):
    """Each sentence points along the axis of the first topic word it contains."""

    TOPICS = ("cat", "rocket", "bread")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = []
        for text in texts:
            row = [0.0] * 4
            axis = next((i for i, t in enumerate(self.TOPICS) if t in text.lower()), 3)
            row[axis] = 1.0
            rows.append(row)
        return rows

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_semantic_threshold_is_a_cosine_distance() -> None:
    text = "The cat sat. The cat ran. The rocket flew. The rocket fell. The bread rose."
    leaves = semantic_segments(text, _TopicEmbeddings(), threshold=0.7, min_tokens=0)
    assert [leaf.text for leaf in leaves] == [
        "The cat sat. The cat ran.",
        "The rocket flew. The rocket fell.",
        "The bread rose.",
    ]
    # orthogonal topics are at distance 1.0: a threshold above that never splits
    assert len(semantic_segments(text, _TopicEmbeddings(), threshold=1.5, min_tokens=0)) == 1
    # the maximum length still closes a leaf at a sentence end
    capped = semantic_segments(text, _TopicEmbeddings(), threshold=1.5, min_tokens=0, max_tokens=8)
    assert all(leaf.tokens <= 8 for leaf in capped) and len(capped) >= 3
    # a minimum length skips boundaries while the leaf is short: the cat/rocket change comes
    # at 10 tokens (< 12), so the next boundary (rocket/bread) is the first cut
    merged = semantic_segments(text, _TopicEmbeddings(), threshold=0.7, min_tokens=12)
    assert [leaf.text for leaf in merged] == [
        "The cat sat. The cat ran. The rocket flew. The rocket fell.",
        "The bread rose.",
    ]


def test_adjacent_distances() -> None:
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    assert adjacent_distances(vectors).tolist() == pytest.approx([0.0, 1.0])
    assert adjacent_distances(vectors[:1]).size == 0


ASTRONOMY = [
    "The telescope revealed a faint spiral galaxy beyond the Andromeda nebula.",
    "Astronomers measured the redshift of its brightest stars.",
    "The galaxy's rotation curve suggested large amounts of dark matter.",
    "Several supernova remnants glowed in the infrared images of the galaxy.",
    "The observatory planned further spectroscopy of the galactic core.",
]
BAKING = [
    "Knead the bread dough with flour, water, yeast and a pinch of salt.",
    "Let the dough rise in a warm kitchen for two hours.",
    "Shape the loaf and bake it in a hot oven until the crust is golden.",
    "Brush the warm crust with melted butter before slicing the bread.",
    "Sourdough bakers keep a starter of wild yeast fed with fresh flour.",
]


def test_semantic_segmentation_splits_two_topics_at_the_change(embeddings) -> None:
    text = " ".join(ASTRONOMY + BAKING)
    leaves = semantic_segments(text, embeddings, min_tokens=20, max_tokens=400)
    cut_points = []
    position = 0
    for leaf in leaves[:-1]:
        position += leaf.sentences
        cut_points.append(position)
    assert len(ASTRONOMY) in cut_points, [leaf.text for leaf in leaves]
    first_baking = next(i for i, leaf in enumerate(leaves) if "dough" in leaf.text)
    assert all("galax" not in leaf.text for leaf in leaves[first_baking:])
