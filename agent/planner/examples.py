"""The decompose prompt's worked plans: the examples of the question's shape only
(``Question.shape``; a small model copies the relations of the examples it is shown), from
``prompts/plan_examples.toml``, and the made-up names a plan must not copy from them
(``copies_an_example``).
"""

from __future__ import annotations

import functools
import re

import prompts
from agent.rules.question import Shape

EXAMPLE_BANK = "plan_examples"
MAX_EXAMPLES = 3

_NAME_WORD = re.compile(r"\b[A-Z][a-z]+\b")
_ARTICLES = frozenset({"The", "A", "An", "Of", "And"})  # capitalized inside a title, no name


@functools.cache
def example_names() -> frozenset[str]:
    """The made-up names of the example bank, word by word ("Silver", "Tides", "Elvard"): the
    capitalized words of its questions that are not a question's first word; a planned query
    naming one, where the question does not, copies an example and is dropped."""
    words: set[str] = set()
    for group in prompts.example_bank(EXAMPLE_BANK).values():
        for example in group.examples:
            words.update(_NAME_WORD.findall(example.question.split(" ", 1)[-1]))
    return frozenset(words - _ARTICLES)


def copies_an_example(query: str, question: str) -> bool:
    """Does ``query`` name an example's made-up name that ``question`` does not?"""
    asked = {w.lower() for w in re.findall(r"\w+", question)}
    names = example_names()
    return any(w in names and w.lower() not in asked for w in _NAME_WORD.findall(query))


def plan_examples(shape: Shape, limit: int = MAX_EXAMPLES) -> str:
    """The decompose prompt's example block for ``shape``: its hint and worked plans."""
    group = prompts.example_bank(EXAMPLE_BANK)[shape]
    lines = [f"This question is {group.hint}.", "Examples (made-up names):"]
    for example in group.examples[:limit]:
        planned = ", ".join(f'"{line}"' for line in example.answer)
        lines.append(f'"{example.question}" -> [{planned}]')
    return "\n".join(lines)
