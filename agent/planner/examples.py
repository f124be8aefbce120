"""The decompose prompt's worked plans: the examples of the question's shape only, and the
made-up names a plan must not copy from them.

A small model imitates the examples it is shown: with one fixed pair of examples the 1.5B planner
copied their relations into questions of another shape (measured on v3, see
``agent.rules.shape``). So the prompt shows the worked plans of the question's own shape
(``Question.shape``); they live in ``prompts/plan_examples.toml`` with made-up names, and a
planned query naming one of those names is a copy (``copies_an_example``).
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
    capitalized words of its questions that are not a question's first word. Measured on
    MuSiQue tuning: the 1.5B planner searched "county where the composer of Silver Tide..." for
    a question about a state capital; a planned query naming one of these, where the question
    does not, copies an example and is dropped."""
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
