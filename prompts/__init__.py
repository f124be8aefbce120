"""Every LLM prompt of hoptree, one text file per action, and the loader that fills them.

A template file has a ``[system]`` section and a ``[user]`` section; variables are ``{name}``
(``{{`` and ``}}`` for literal braces). Rendering is strict: a missing or an unexpected variable
is an error, so a prompt and its caller cannot drift apart silently. Call sites use
``render("name", var=...)`` with a literal name and keyword arguments; a test reads every call
site and checks the keywords against the template.
"""

from __future__ import annotations

import string
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

PROMPT_DIR = Path(__file__).resolve().parent
SECTIONS = ("system", "user")


class PromptError(ValueError):
    """A template that cannot be loaded, or a render with the wrong variables."""


def _variables(text: str, where: str) -> set[str]:
    found: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptError(f"{where}: malformed braces: {exc}") from exc
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise PromptError(f"{where}: only plain {{name}} fields are allowed, got {{{field}}}")
        found.add(field)
    return found


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: str
    user: str
    variables: frozenset[str]

    def render(self, **values: object) -> list[BaseMessage]:
        given = set(values)
        if given != self.variables:
            missing = sorted(self.variables - given)
            extra = sorted(given - self.variables)
            raise PromptError(
                f"prompt {self.name!r}: missing variables {missing}, unexpected {extra}"
            )
        text = {k: str(v) for k, v in values.items()}
        return [
            SystemMessage(content=self.system.format(**text)),
            HumanMessage(content=self.user.format(**text)),
        ]


def parse_template(name: str, raw: str) -> PromptTemplate:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in raw.splitlines():
        header = line.strip()
        if header.startswith("[") and header.endswith("]") and header[1:-1] in SECTIONS:
            current = header[1:-1]
            if current in sections:
                raise PromptError(f"{name}: section [{current}] appears twice")
            sections[current] = []
        elif current is None:
            if header:
                raise PromptError(f"{name}: text before the first section header")
        else:
            sections[current].append(line)
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        raise PromptError(f"{name}: missing section(s) {missing}")
    system = "\n".join(sections["system"]).strip()
    user = "\n".join(sections["user"]).strip()
    if not system or not user:
        raise PromptError(f"{name}: empty section")
    variables = _variables(system, f"{name} [system]") | _variables(user, f"{name} [user]")
    return PromptTemplate(name=name, system=system, user=user, variables=frozenset(variables))


def names() -> list[str]:
    return sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))


@cache
def load(name: str) -> PromptTemplate:
    path = PROMPT_DIR / f"{name}.txt"
    if not path.is_file():
        raise PromptError(f"no prompt named {name!r}; known: {', '.join(names())}")
    return parse_template(name, path.read_text(encoding="utf-8"))


def render(name: str, **values: object) -> list[BaseMessage]:
    return load(name).render(**values)


#: How much of a template's system text names it; every template differs well before this.
PREFIX_CHARS = 120


@cache
def system_prefixes() -> tuple[tuple[str, str], ...]:
    """(template name, the start of its system text up to the first ``{field}``, spaces
    collapsed) for every template, longest first, so a prefix of another never wins."""
    found = []
    for name in names():
        prefix = " ".join(load(name).system.split("{", 1)[0].split())[:PREFIX_CHARS]
        if prefix:
            found.append((name, prefix))
    return tuple(sorted(found, key=lambda kv: -len(kv[1])))


def template_of(system: str) -> str | None:
    """The name of the template a rendered system message came from, or None. Scripted chat
    models (the tests' ``RoutedChatModel``, the load test's stub endpoint) answer by it, and
    follow the prompt files as they change instead of keeping copies of their phrases."""
    text = " ".join(system.split())
    return next((name for name, prefix in system_prefixes() if text.startswith(prefix)), None)


@dataclass(frozen=True)
class Example:
    """One worked example of a bank: a question and the lines a reply would hold."""

    question: str
    answer: tuple[str, ...]


@dataclass(frozen=True)
class ExampleGroup:
    hint: str
    examples: tuple[Example, ...]


@cache
def example_bank(name: str) -> dict[str, ExampleGroup]:
    """A bank of worked examples (``<name>.toml``): one table per group with a ``hint`` and
    ``examples = [[question, [line, ...]], ...]``. Kept beside the templates so every text the
    model reads lives in this folder; a malformed bank is a ``PromptError`` naming the group."""
    path = PROMPT_DIR / f"{name}.toml"
    if not path.is_file():
        raise PromptError(f"no example bank named {name!r}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PromptError(f"{name}.toml: {exc}") from exc
    bank: dict[str, ExampleGroup] = {}
    for group, table in raw.items():
        where = f"{name}.toml [{group}]"
        hint, items = table.get("hint"), table.get("examples")
        if not isinstance(hint, str) or not isinstance(items, list) or not items:
            raise PromptError(f"{where}: needs a 'hint' string and a non-empty 'examples' list")
        examples = []
        for item in items:
            ok = (
                isinstance(item, list)
                and len(item) == 2
                and isinstance(item[0], str)
                and isinstance(item[1], list)
                and all(isinstance(line, str) for line in item[1])
            )
            if not ok:
                raise PromptError(f"{where}: each example is [question, [line, ...]]")
            examples.append(Example(item[0], tuple(item[1])))
        bank[group] = ExampleGroup(hint, tuple(examples))
    return bank
