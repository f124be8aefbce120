"""Split a Lucene string into tokens, repairing lexical damage on the way.

The lexer never fails: every character either lands in a token or is dropped with a note in
``repairs``. It consumes at least one character per step, so it is linear in the input.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, auto

#: Inputs longer than this are cut: a runaway generation is not a query, and the clause cap
#: would discard the rest anyway.
MAX_INPUT_CHARS = 10_000

#: Lone surrogates cannot even cross into tantivy's Rust strings (nor be UTF-8 encoded).
SURROGATES = re.compile("[\ud800-\udfff]")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_FIELD_NAME = re.compile(r"\w+")
_WORD_BREAK = frozenset('()"^~')
_OPERATOR_WORDS = {"AND": "AND", "&&": "AND", "OR": "OR", "||": "OR", "NOT": "NOT"}


class Kind(Enum):
    WORD = auto()
    PHRASE = auto()
    LPAREN = auto()
    RPAREN = auto()
    PLUS = auto()
    MINUS = auto()
    NOT = auto()
    AND = auto()
    OR = auto()
    FIELD = auto()
    BOOST = auto()
    TILDE = auto()


@dataclass(frozen=True)
class Token:
    """``text`` is the unescaped word/phrase or canonical field name; ``number`` is the value
    after ``^``/``~`` (None when absent or malformed); ``raw`` is the source, for notes."""

    kind: Kind
    text: str = ""
    number: float | None = None
    raw: str = ""


def _is_blank(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) == "Cc"


def _closing_quote(text: str, start: int) -> int:
    """Index of the unescaped ``"`` closing a phrase opened before ``start``, or -1."""
    i, n = start, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return -1


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw, flags=re.DOTALL)


class _Lexer:
    def __init__(self, text: str, fields: Mapping[str, str], repairs: list[str]) -> None:
        self.text = text
        self.fields = fields
        self.repairs = repairs
        self.tokens: list[Token] = []
        self.wildcards = 0

    def note(self, message: str) -> None:
        if message not in self.repairs:
            self.repairs.append(message)

    def run(self) -> list[Token]:
        text, i = self.text, 0
        while i < len(text):
            i = self.step(i)
        if self.wildcards:
            self.note(f"dropped {self.wildcards} wildcard character(s) (* ?): unsupported")
        return self.tokens

    def step(self, i: int) -> int:
        """Consume one token (or blank) starting at ``i``; returns the next index (> i)."""
        text, ch = self.text, self.text[i]
        if _is_blank(ch):
            return i + 1
        if ch == "(":
            self.tokens.append(Token(Kind.LPAREN, raw=ch))
            return i + 1
        if ch == ")":
            self.tokens.append(Token(Kind.RPAREN, raw=ch))
            return i + 1
        if ch == '"':
            end = _closing_quote(text, i + 1)
            if end < 0:
                self.note('dropped an unbalanced quote (")')
                return i + 1
            self.tokens.append(
                Token(Kind.PHRASE, _unescape(text[i + 1 : end]), raw=text[i : end + 1])
            )
            return end + 1
        if ch in "+-!":
            return self.prefix_operator(i)
        if ch in "^~":
            return self.suffix(i)
        return self.word(i)

    def prefix_operator(self, i: int) -> int:
        text, ch = self.text, self.text[i]
        if i + 1 >= len(text) or _is_blank(text[i + 1]):
            self.note(f"dropped a lone {ch!r} (it modifies nothing)")
            return i + 1
        kind = {"+": Kind.PLUS, "-": Kind.MINUS, "!": Kind.NOT}[ch]
        self.tokens.append(Token(kind, raw=ch))
        return i + 1

    def suffix(self, i: int) -> int:
        match = _NUMBER.match(self.text, i + 1)
        kind = Kind.BOOST if self.text[i] == "^" else Kind.TILDE
        if match is None:
            self.tokens.append(Token(kind, raw=self.text[i]))
            return i + 1
        self.tokens.append(Token(kind, number=float(match.group()), raw=self.text[i : match.end()]))
        return match.end()

    def word(self, i: int) -> int:
        text, n = self.text, len(self.text)
        first = start = i
        buf: list[str] = []
        escaped = False
        while i < n:
            ch = text[i]
            if ch == "\\":
                if i + 1 < n:
                    buf.append(text[i + 1])
                    escaped = True
                else:
                    self.note("dropped a trailing backslash")
                i += 2
                continue
            if _is_blank(ch) or ch in _WORD_BREAK:
                break
            if ch in "*?":
                self.wildcards += 1
            elif ch == ":" and buf and not escaped:
                i += 1
                name = "".join(buf)
                canonical = self.fields.get(name.casefold())
                if canonical is not None:
                    self.tokens.append(Token(Kind.FIELD, canonical, raw=name + ":"))
                    start, buf = i, []
                    if i < n and text[i] in "+-!":  # title:-x: an LLM's -title:x
                        break
                    continue
                if _FIELD_NAME.fullmatch(name):
                    self.note(f"unknown field {name!r}: searched {name}:... as plain text")
                buf.append(ch)
                continue
            else:
                buf.append(ch)
            i += 1
        self.emit_word("".join(buf), text[start:i], escaped)
        return max(i, first + 1)

    def emit_word(self, word: str, raw: str, escaped: bool) -> None:
        if not word:
            return
        operator = None if escaped else _OPERATOR_WORDS.get(word)
        if operator is not None:
            self.tokens.append(Token(Kind[operator], raw=raw))
        else:
            self.tokens.append(Token(Kind.WORD, word, raw=raw))


def tokenize(text: str, fields: Mapping[str, str], repairs: list[str]) -> list[Token]:
    """Tokens of ``text``; ``fields`` maps case-folded field names to their canonical spelling.
    Notes about what was dropped or reinterpreted are appended to ``repairs``."""
    if len(text) > MAX_INPUT_CHARS:
        repairs.append(f"cut the input to its first {MAX_INPUT_CHARS} characters")
        text = text[:MAX_INPUT_CHARS]
    if SURROGATES.search(text):
        repairs.append("replaced lone surrogate characters with spaces")
        text = SURROGATES.sub(" ", text)
    return _Lexer(text, fields, repairs).run()
