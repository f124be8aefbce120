"""The encoding reader (``searchers.text_decoding``): text in the encodings people's files are
really in comes back as the text that was written, with the encoding it was read in; binary
data under a text suffix is never "detected" as some exotic code page and indexed as garbage."""

from __future__ import annotations

import codecs
import gzip
import random
import zlib
from pathlib import Path

import pytest

from searchers.corpus import read_file, read_text
from searchers.documents import DocumentError
from searchers.text_decoding import NotText, check_printable, decode_text, display_name

FRENCH = "Le café de la rivière était fermé. Les élèves mangèrent une crème brûlée à Noël.\n"
QUOTES = "He said “hello” — it’s the café’s €5 menu. Naïve résumé, señor.\n"
RUSSIAN = "Река течёт на север мимо старой мельницы, и паром уходит в полдень.\n"
JAPANESE = "日本語のテキストです。川の流れは絶えずして、しかももとの水にあらず。\n"
POLISH = "Dzień dobry, jak się masz? To jest zwykły tekst po polsku, bez żadnych wątpliwości.\n"


@pytest.mark.parametrize(
    ("text", "codec", "shown"),
    [
        ("plain ASCII and ünïcode\n", "utf-8", "utf-8"),
        (FRENCH, "utf-8-sig", "utf-8-sig"),
        (FRENCH, "latin-1", "windows-1252"),  # the same letters; WHATWG reads Latin-1 so too
        (QUOTES, "cp1252", "windows-1252"),  # curly quotes, the euro sign: not Latin-1
        ("Grüße aus München! Die Straße ist schön.\n", "latin-1", "windows-1252"),
        ("café", "latin-1", "windows-1252"),  # four bytes: "UTF-16" CJK to a bare detector
        ("The ferry to Århus leaves at noon.\n", "latin-1", "windows-1252"),
        (POLISH, "cp1250", "windows-1250"),  # "zwyk³y" in Windows-1252: a symbol in a word
        # an English line with one accent: the detector's language model picks Windows-1250
        ("Barges on the river. “Quoted” at €5 — naïve.\n", "cp1252", "windows-1252"),
        ("El niño comió piña el año pasado, ¿verdad?\n", "cp1252", "windows-1252"),
        (RUSSIAN * 2, "cp1251", "windows-1251"),
        (JAPANESE * 2, "shift_jis", "cp932"),
        (FRENCH, "utf-16", "utf-16-le"),  # Python writes the BOM, little-endian here
        ("Ferry times: Ålesund 09:15\n", "utf-32", "utf-32-le"),
    ],
)
def test_text_in_other_encodings_reads_back_as_written(text: str, codec: str, shown: str) -> None:
    decoded = decode_text(text.encode(codec))
    assert (decoded.text, decoded.encoding) == (text, shown)


def test_big_endian_byte_order_marks() -> None:
    data = codecs.BOM_UTF16_BE + "Ferry to Holt".encode("utf-16-be")
    assert decode_text(data).text == "Ferry to Holt"
    assert decode_text(data).encoding == "utf-16-be"


def test_an_empty_file_is_empty_utf8_text() -> None:
    assert (decode_text(b"").text, decode_text(b"").encoding) == ("", "utf-8")


def test_a_coloured_log_is_text() -> None:
    log = b"\x1b[31mERROR\x1b[0m the ferry is late\n\tat noon\f\n" * 20
    assert decode_text(log).text.startswith("\x1b[31mERROR")


def _seeded(seed: int, size: int, alphabet: list[int]) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.choice(alphabet) for _ in range(size))


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("random bytes", _seeded(1, 3000, list(range(256))), "binary"),
        ("random bytes without NUL", _seeded(2, 3000, list(range(1, 256))), "binary"),
        ("high bytes only", _seeded(3, 3000, list(range(0x80, 0x100))), "encoding"),
        (
            "printable Latin-1 noise",
            _seeded(4, 3000, list(range(0x21, 0x7F)) + list(range(0xA0, 0x100))),
            "encoding",
        ),
        ("gzip", gzip.compress(FRENCH.encode() * 50), "binary"),
        ("zlib", zlib.compress(FRENCH.encode() * 50, 9), "binary"),
        (
            "PNG",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + _seeded(5, 800, list(range(256))),
            "binary",
        ),
        ("UTF-16 without BOM", FRENCH.encode("utf-16-le"), "binary"),
        ("a BOM before junk", codecs.BOM_UTF16_LE + _seeded(6, 900, list(range(256))), "binary"),
        ("ASCII control codes", b"\x01\x02\x03abc" * 100, "binary"),
    ],
)
def test_binary_is_never_read_as_text(name: str, data: bytes, reason: str) -> None:
    with pytest.raises(NotText) as caught:
        decoded = decode_text(data)
        pytest.fail(f"{name} read as {decoded.encoding}: {decoded.text[:40]!r}")
    assert caught.value.reason == reason, (name, caught.value.detail)
    assert caught.value.detail


def test_the_printable_check_counts_unassigned_and_private_use() -> None:
    check_printable("a normal sentence\twith a tab\n")
    with pytest.raises(NotText, match="control or unassigned"):
        check_printable("text" + "\ue000" * 10)  # private use
    with pytest.raises(NotText):
        check_printable("text\ufffd\ufffd")  # replacement characters: a decode that lost bytes


def test_encoding_names_people_know() -> None:
    assert display_name("cp1252") == "windows-1252"
    assert display_name("latin_1") == "iso-8859-1"
    assert display_name("utf_8") == "utf-8"
    assert display_name("no-such-codec") == "no-such-codec"


def test_the_text_reader_reads_other_encodings_and_names_binary(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_bytes(("# Carnet\n\n" + FRENCH).encode("cp1252"))
    read = read_file(notes, "text")
    assert read.encoding == "windows-1252"
    assert [p.title for p in read.passages] == ["Carnet"]
    assert "rivière" in read.passages[0].text
    assert [p.text for p in read_text(notes)] == [p.text for p in read.passages]

    junk = tmp_path / "photo.txt"
    junk.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(range(256)) * 4)
    with pytest.raises(DocumentError) as caught:
        read_file(junk, "text")
    assert caught.value.reason == "binary" and str(junk) in str(caught.value)
