"""Every LLM prompt of hoptree, one text file per action, and the loader that fills them.

A template file has a ``[system]`` section and a ``[user]`` section; variables are ``{name}``
(``{{`` and ``}}`` for literal braces). Rendering is strict: a missing or an unexpected variable
is an error, so a prompt and its caller cannot drift apart silently. Call sites use
``render("name", var=...)`` with a literal name and keyword arguments; a test reads every call
site and checks the keywords against the template.
"""

from __future__ import annotations

import string
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
