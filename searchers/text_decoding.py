"""Bytes of a text file to text, in whatever encoding it was saved, or a reason it is not text.

People's older notes are often Latin-1 or Windows-1252, and Windows tools write UTF-16 with a
byte-order mark; refusing them ("not UTF-8") leaves real folders half indexed. Guessing freely
is worse: any byte string decodes in some single-byte code page, so a PNG renamed ``.txt`` would
be indexed as pages of mojibake. The rule, in order:

1. an empty file is empty text (UTF-8);
2. a byte-order mark decides (UTF-8, UTF-32, UTF-16; UTF-32's is tested first, as it begins
   with UTF-16's), and a BOM'd file that does not decode in its encoding is not text;
3. a NUL byte anywhere else means binary (UTF-16 and UTF-32 need their BOM here), and so does
   more than ``MAX_JUNK_RATIO`` of control bytes (no 8-bit text encoding puts them in text);
4. valid UTF-8 is UTF-8;
5. otherwise charset-normalizer's detection, with its mess ratio at most ``MAX_CHAOS``, never
   a BOM-less UTF-16/32 (short Latin-1 text decodes as "UTF-16" CJK), and among its cleanest
   candidates the reading with the fewest symbols inside words, then Windows-1252 (``_detected``
   says why);

and whatever decoded must look like text (``check_printable``): at most ``MAX_JUNK_RATIO`` of
its characters control characters (tab, newlines, form feed and escape are text), replacement
characters, unassigned or private-use code points. What fails is a ``NotText`` with a reason
(``binary`` or ``encoding``) and a sentence for the build report.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

MAX_CHAOS = 0.2  # charset-normalizer's own default threshold, stated here so it stays put
MAX_JUNK_RATIO = 0.01
_SAMPLE_CHARS = 100_000  # the unassigned / private-use check looks at this much of the text
_PREFERRED = "cp1252"
_TIE = 0.005  # mess ratios this close are a tie

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# C0 controls but tab, LF, VT, FF, CR and ESC (a coloured log is text); DEL; U+FFFD
_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")
_CONTROL_BYTES = re.compile(b"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
# a non-ASCII symbol between two letters: the mark of a wrong code page ("zwyk³y", "w¹tpliwoœci")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_JUNK_CATEGORIES = frozenset({"Cn", "Co", "Cs"})
_NEVER_WITHOUT_BOM = ("utf_16", "utf_32", "utf_7")

NotTextReason = Literal["binary", "encoding"]


class NotText(ValueError):
    """Bytes that are not text hoptree can read; ``reason`` is what the build report counts."""

    def __init__(self, reason: NotTextReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: NotTextReason = reason
        self.detail = detail


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str  # a display name: utf-8, utf-8-sig, utf-16, windows-1252, shift_jis, ...

    @property
    def is_utf8(self) -> bool:
        return self.encoding == "utf-8"


def display_name(encoding: str) -> str:
    """The name a person knows an encoding by: Python's ``cp1252`` is ``windows-1252``."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return encoding
    if re.fullmatch(r"cp125\d", name):
        return "windows-" + name[2:]
    if name.startswith("iso8859-"):
        return "iso-8859-" + name.removeprefix("iso8859-")
    return name


def check_printable(text: str) -> None:
    """``NotText`` (binary) when more than ``MAX_JUNK_RATIO`` of ``text`` is not text."""
    if not text:
        return
    junk = len(_CONTROL.findall(text))
    sample = text[:_SAMPLE_CHARS]
    junk_sample = sum(1 for ch in sample if unicodedata.category(ch) in _JUNK_CATEGORIES)
    ratio = junk / len(text) + junk_sample / len(sample)
    if ratio > MAX_JUNK_RATIO:
        raise NotText(
            "binary",
            f"binary data, not text ({ratio:.0%} control or unassigned characters)",
        )


def _strict(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _detected(data: bytes) -> tuple[str, str]:
    """charset-normalizer's candidates under the rule of the module docstring: (text, codec).

    On the short texts of a notes folder the detector's own ranking leans on language models
    that cannot tell Windows-1252 from Windows-1250 ("naïve" became "naďve", "¿verdad"
    "żverdad"), so among the candidates as clean as its best (mess ratio within ``_TIE``; with
    Windows-1252 added when it decodes that cleanly) the one is kept whose reading puts the
    fewest non-ASCII symbols inside words ("zwyk³y" is Polish read as Windows-1252), then
    Windows-1252, then the detector's order. Text that is ambiguous by its bytes alone reads as
    Windows-1252: Czech or Hungarian in Windows-1250, whose letters all have Windows-1252
    look-alikes ("obyčejný" reads "obyèejný"), is the known miss."""
    from charset_normalizer import from_bytes
    from charset_normalizer.md import mess_ratio

    matches = [
        m
        for m in from_bytes(data, threshold=MAX_CHAOS)
        if not m.encoding.startswith(_NEVER_WITHOUT_BOM) and m.chaos <= MAX_CHAOS
    ]
    if not matches:
        raise NotText(
            "encoding",
            "not UTF-8, and no other encoding reads it as clean text (binary data, or mixed "
            "encodings?); save it as UTF-8",
        )
    floor = matches[0].chaos + _TIE
    pool = [(str(m), m.encoding) for m in matches if m.chaos <= floor]
    if all(codec != _PREFERRED for _text, codec in pool):
        preferred = _strict(data, _PREFERRED)
        if preferred is not None and mess_ratio(preferred, MAX_CHAOS) <= floor:
            pool.append((preferred, _PREFERRED))
    rank = {codec: n for n, (_text, codec) in enumerate(pool)}
    return min(
        pool,
        key=lambda c: (symbols_in_words(c[0]), c[1] != _PREFERRED, rank[c[1]]),
    )


def symbols_in_words(text: str) -> int:
    """How many non-ASCII characters that are not letters stand between two letters."""
    count = 0
    for match in _NON_ASCII.finditer(text):
        at = match.start()
        if (
            not text[at].isalpha()
            and 0 < at < len(text) - 1
            and text[at - 1].isalpha()
            and text[at + 1].isalpha()
        ):
            count += 1
    return count


def decode_text(data: bytes) -> DecodedText:
    """The text of ``data`` and the encoding it was read in; ``NotText`` when it is not text."""
    if not data:
        return DecodedText("", "utf-8")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = _strict(data, codec)
            name = "utf-8-sig" if codec == "utf-8-sig" else f"{codec}-{_bom_order(bom)}"
            if text is None:
                raise NotText("binary", f"starts with a {name} byte-order mark but does not decode")
            check_printable(text)
            return DecodedText(text, name)
    if b"\x00" in data:
        raise NotText("binary", "binary data, not text (NUL bytes; UTF-16 text needs its BOM)")
    controls = len(_CONTROL_BYTES.findall(data))
    if controls > MAX_JUNK_RATIO * len(data):
        raise NotText("binary", f"binary data, not text ({controls / len(data):.0%} control bytes)")
    text = _strict(data, "utf-8")
    if text is not None:
        check_printable(text)
        return DecodedText(text, "utf-8")
    text, codec = _detected(data)
    check_printable(text)
    return DecodedText(text, display_name(codec))


def _bom_order(bom: bytes) -> str:
    return "le" if bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE) else "be"
