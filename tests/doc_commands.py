"""The commands the documentation shows, pulled out of markdown so a test can check each one.

A command is a line of a fenced block marked ``bash``, ``sh``, ``shell`` or ``console``
(continuation lines ending in a backslash joined, a leading ``$ `` prompt dropped, comments
dropped), or a line starting with ``$ `` in any other block. A line of an unmarked block that
starts like a command (``hoptree``, ``make``, ``curl``, ...) is reported as stray: a command
outside a checked block would slip past the test, so it must move into one. Each command line is
split into statements at ``&&``, ``||``, ``;`` and ``|``, redirections dropped; a statement's
leading ``NAME=value`` assignments are kept apart from its program and arguments.

Inline code spans that start with ``hoptree `` are collected too: the prose names commands
that way, and their sub-command path and option names must exist even when the span leaves out
required arguments.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
# First words that make a line a command wherever it stands.
COMMAND_WORDS = ("hoptree", "make", "curl", "python", ".venv/", "pytest", "export")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_INLINE_HOPTREE = re.compile(r"(?<!`)`(hoptree [^`]+)`(?!`)")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
_REDIRECTIONS = frozenset({">", ">>", "<", "2>", "2>>", "&>"})


@dataclass(frozen=True)
class Statement:
    """One program call as a document shows it."""

    source: str  # "README.md:42"
    text: str  # the whole command line it came from
    assignments: tuple[str, ...]  # NAME=value before the program
    argv: tuple[str, ...]  # the program and its arguments; empty for assignments alone

    @property
    def program(self) -> str:
        return self.argv[0] if self.argv else ""


@dataclass
class Extracted:
    statements: list[Statement] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)  # "file:line: text" of unmarked commands
    inline: list[Statement] = field(default_factory=list)  # `hoptree ...` spans in the prose


def split_statements(line: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """``(assignments, argv)`` for each statement of a shell line (comments dropped)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    tokens = list(lexer)
    statements: list[list[str]] = [[]]
    skip_next = False
    for token in tokens:
        if skip_next:  # the file a redirection names
            skip_next = False
        elif token in _SEPARATORS:
            statements.append([])
        elif token in _REDIRECTIONS:
            skip_next = True
        else:
            statements[-1].append(token)
    result = []
    for words in statements:
        if not words:
            continue
        lead = 0
        while lead < len(words) and _ASSIGNMENT.match(words[lead]):
            lead += 1
        result.append((tuple(words[:lead]), tuple(words[lead:])))
    return result


def _logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join backslash continuations; keep the first line's number."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in lines:
        text = raw.rstrip()
        if pending is not None:
            text = pending[1] + " " + text.lstrip()
            number = pending[0]
            pending = None
        if text.endswith("\\"):
            pending = (number, text[:-1])
            continue
        joined.append((number, text))
    if pending is not None:
        joined.append(pending)
    return joined


def _looks_like_command(text: str) -> bool:
    """A line whose first word after any ``NAME=value`` is a command word."""
    words = text.split()
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    first = words[0] if words else ""
    return any(first == word or first.startswith(word) for word in COMMAND_WORDS)


def extract(name: str, text: str) -> Extracted:
    """Every command ``text`` (a markdown document called ``name``) shows."""
    found = Extracted()
    block: list[tuple[int, str]] | None = None
    language = ""
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if block is None:
            if opened:
                block, fence, language = [], opened.group(2), opened.group(3).lower()
            else:
                for span in _INLINE_HOPTREE.findall(line):
                    for assignments, argv in split_statements(span):
                        found.inline.append(Statement(f"{name}:{number}", span, assignments, argv))
            continue
        if opened and opened.group(2).startswith(fence) and not opened.group(3):
            _add_block(found, name, block, language)
            block = None
            continue
        block.append((number, line))
    if block is not None:
        _add_block(found, name, block, language)
    return found


def _add_block(found: Extracted, name: str, block: list[tuple[int, str]], language: str) -> None:
    for number, text in _logical_lines(block):
        stripped = text.strip()
        prompted = stripped.startswith("$ ")
        if prompted:
            stripped = stripped[2:].strip()
        elif language not in COMMAND_LANGUAGES:
            if stripped and _looks_like_command(stripped):
                found.stray.append(f"{name}:{number}: {stripped}")
            continue
        if not stripped or stripped.startswith("#"):
            continue
        for assignments, argv in split_statements(stripped):
            found.statements.append(Statement(f"{name}:{number}", stripped, assignments, argv))


def extract_files(root: Path, paths: list[Path]) -> Extracted:
    """The commands of several documents, named relative to ``root``."""
    merged = Extracted()
    for path in paths:
        part = extract(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
        merged.statements += part.statements
        merged.stray += part.stray
        merged.inline += part.inline
    return merged
