"""Documents in: PDF, HTML and DOCX files, made here with real writers, read by the converters
(``searchers.documents``), through ``hoptree index build`` into an index, back out of
``hoptree retrieve`` with their page, and into a citation as "title p. 7". Files that cannot be
read are named in the build report with why, and the build exits 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.results import AskResult, Citation
from agent.serve.mcp_schemas import ask_output
from agent.serve.openai_api import sources_block
from searchers.corpus import SUPPORTED_SUFFIXES, detect_format, read_passages, select_sources
from searchers.documents import DocumentError, convert
from searchers.passages import Hit, Passage
from tests.document_files import (
    make_corrupt_pdf,
    make_docx,
    make_encrypted_pdf,
    make_html,
    make_image_only_pdf,
    make_pdf,
    sentence,
)
from tree.documents import UnreadFile, read_documents


def _fold(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- the converters


def test_pdf_pages_outline_headings_and_no_page_numbers(tmp_path: Path) -> None:
    spec = make_pdf(tmp_path / "survey.pdf", pages=3, sentences=20)
    passages = list(read_passages(tmp_path / "survey.pdf"))
    assert detect_format(tmp_path / "survey.pdf") == "pdf"
    # every sentence is in a passage of its own page, under its page's outline heading
    for section in spec.sections:
        on_page = [p for p in passages if p.metadata["page"] == section.page]
        text = " ".join(_fold(p.text) for p in on_page)
        assert all(s in text for s in section.sentences)
        assert {p.title for p in on_page} == {f"River Survey > {section.heading}"}
        assert all(p.metadata["headings"] == [section.heading] for p in on_page)
        assert all(p.metadata["pages"] == 3 and p.metadata["format"] == "pdf" for p in on_page)
    joined = " ".join(p.text for p in passages)
    assert "- 2 -" not in joined  # the footer's page number is not text
    assert spec.sections[0].heading not in joined  # the heading is in the title, not the text
    assert len({p.id for p in passages}) == len(passages)
    assert [p.id for p in read_passages(tmp_path / "survey.pdf")] == [p.id for p in passages]


def test_html_main_content_with_headings_and_no_boilerplate(tmp_path: Path) -> None:
    spec = make_html(tmp_path / "page.html", sections=3, sentences=6)
    passages = list(read_passages(tmp_path / "page.html"))
    text = " ".join(_fold(p.text) for p in passages)
    assert all(s in text for s in spec.sentences)
    assert not any(b in text for b in spec.boilerplate)  # nav, cookies, sidebar, footer
    assert "Section 3" not in text  # the menu
    second = spec.sections[1]
    holding = [p for p in passages if second.sentences[0] in _fold(p.text)]
    assert holding[0].title == f"River Survey > {second.heading}"
    assert holding[0].metadata["headings"] == ["River Survey", second.heading]
    assert "page" not in holding[0].metadata


def test_docx_heading_styles_become_titles(tmp_path: Path) -> None:
    spec = make_docx(tmp_path / "report.docx", sections=3, sentences=6)
    passages = list(read_passages(tmp_path / "report.docx"))
    text = " ".join(_fold(p.text) for p in passages)
    assert all(s in text for s in spec.sentences)
    assert {p.title for p in passages} == {f"River Survey > {s.heading}" for s in spec.sections}
    assert all(p.metadata["format"] == "docx" for p in passages)


@pytest.mark.parametrize(
    ("make", "name", "reason"),
    [
        (make_corrupt_pdf, "broken.pdf", "corrupt"),
        (make_encrypted_pdf, "locked.pdf", "encrypted"),
        (make_image_only_pdf, "scan.pdf", "no-text"),
        (lambda p: p.write_bytes(b"PK\x03\x04 not a zip"), "broken.docx", "corrupt"),
        (
            lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500)),
            "x.docx",
            "encrypted",
        ),
        (lambda p: p.write_text("<html><body><nav></nav></body></html>"), "empty.html", "no-text"),
    ],
)
def test_unreadable_documents_say_why(tmp_path: Path, make, name: str, reason: str) -> None:
    path = tmp_path / name
    make(path)
    with pytest.raises(DocumentError) as caught:
        convert(path)
    assert caught.value.reason == reason and str(path) in str(caught.value)


def test_a_folder_names_its_unsupported_files(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    make_pdf(folder / "a.pdf", pages=1, sentences=2)
    (folder / "sheet.xlsx").write_bytes(b"PK")
    (folder / "README").write_text("no suffix")
    (folder / ".hidden.png").write_bytes(b"x")  # hidden: not read, not blamed
    selection = select_sources([folder])
    assert selection.files == [folder / "a.pdf"]
    assert {(s.path.name, s.reason) for s in selection.skipped} == {
        ("README", "unsupported"),
        ("sheet.xlsx", "unsupported"),
    }
    assert {".pdf", ".html", ".htm", ".docx"} <= SUPPORTED_SUFFIXES


def test_the_tree_reads_documents_and_lists_the_unread(tmp_path: Path) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    spec = make_pdf(folder / "survey.pdf", pages=2, sentences=3)
    make_docx(folder / "report.docx", sections=1, sentences=2)
    make_encrypted_pdf(folder / "locked.pdf")
    (folder / "data.bin").write_bytes(b"\x00")
    unread: list[UnreadFile] = []
    documents = read_documents([folder], unread=unread)
    assert [d.id for d in documents] == ["report", "survey"]
    survey = documents[1]
    assert survey.title == "River Survey"
    assert f"## {spec.sections[1].heading}" in survey.text
    assert spec.sections[1].sentences[0] in _fold(survey.text)
    assert {(u.path.name, u.reason) for u in unread} == {
        ("data.bin", "unsupported"),
        ("locked.pdf", "encrypted"),
    }
    with pytest.raises(ValueError, match=r"locked\.pdf"):
        read_documents([folder])  # without a list to report into, the first failure is an error


# --------------------------------------------------------------------------- citations


def test_citations_carry_the_page_of_their_passage() -> None:
    passages = [
        Hit(Passage("p7", "Report > Risks", "text", {"page": 7, "format": "pdf"}), 1.0),
        Hit(Passage("old", "Danube", "text", {}), 1.0),
    ]
    citations = [Citation.of(hit.to_json(), n) for n, hit in enumerate(passages, start=1)]
    assert [c.label for c in citations] == ["Report > Risks p. 7", "Danube"]
    assert citations[0].to_json()["page"] == 7 and citations[1].page is None
    # a citation serialised before pages existed still loads
    record = {"n": 2, "id": "old", "title": "Danube", "text": "text", "url": None}
    assert Citation.from_json(record).label == "Danube"
    assert Citation.from_json({**record, "title": ""}).label == "old"  # no title: the id
    result = AskResult(
        question="q",
        answer="a [1]",
        short_answer="a",
        citations=citations,
        sub_queries=[],
        verdicts=[],
        stopped="sufficient",
        llm_calls=0,
        prompt_tokens=0,
        completion_tokens=0,
        seconds=0.0,
    )
    assert "[1] Report > Risks p. 7 (p7)" in sources_block(result.citations)
    assert ask_output(result).citations[0].page == 7
    assert Hit(Passage("x", "T", "t", {"page": "7"}), 0.0).label == "T"  # malformed: no page


# --------------------------------------------------------------------------- hoptree index build


def test_index_build_reads_a_folder_of_documents_and_names_what_it_could_not(
    cli, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    make_pdf(folder / "survey.pdf", pages=3, sentences=8)
    make_html(folder / "gazette.html", sections=2, sentences=4, title="Gazette Article")
    make_docx(folder / "memo.docx", sections=2, sentences=4, title="Harbour Memo")
    (folder / "notes.md").write_text("# Notes\n\nThe ferry leaves at noon.\n")
    make_corrupt_pdf(folder / "broken.pdf")
    make_encrypted_pdf(folder / "locked.pdf")
    make_image_only_pdf(folder / "scan.pdf")
    (folder / "table.xlsx").write_bytes(b"PK")
    (folder / ".hoptreeignore").write_text("draft*\n")
    (folder / "draft.txt").write_text("ignored on purpose")
    (folder / "draft.bin").write_bytes(b"ignored: neither read nor blamed")
    index = tmp_path / "idx"

    result = cli("index", "build", str(folder), "--index", str(index), "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in report["failed"]}
    assert failed == {
        "broken.pdf": "corrupt",
        "locked.pdf": "encrypted",
        "scan.pdf": "no-text",
        "table.xlsx": "unsupported",
    }
    assert {Path(s["path"]).name: s["reason"] for s in report["skipped"]} == {
        "draft.txt": "ignored"
    }
    read = {s["name"]: s for s in report["sources"]}
    assert set(read) == {"survey.pdf", "gazette.html", "memo.docx", "notes.md"}
    assert read["survey.pdf"]["format"] == "pdf" and read["survey.pdf"]["passages"] >= 3
    assert read["gazette.html"]["format"] == "html" and read["memo.docx"]["format"] == "docx"

    # a sentence of page 2 comes back from the index with its page, and the table shows it
    query = sentence(2, 3)
    args = ["retrieve", "--index", str(index), "--retriever", "sparse", "-k", "5"]
    found = cli(*args, "--json", query)
    assert found.exit_code == 0, found.output
    # the survey's sentences share most words, so the one holding it is among the first five
    hit = next(h for h in json.loads(found.stdout)["hits"] if query in _fold(h["text"]))
    assert hit["metadata"]["page"] == 2
    assert hit["title"] == "River Survey > Survey 2 of the Corran valley"
    human = cli(*args, query)
    assert "p. 2" in _fold(human.stdout)

    # the human report names every file that was not read, and why; a re-run adds nothing
    again = cli("index", "build", str(folder), "--index", str(index))
    assert again.exit_code == 3
    stderr = _fold(again.stderr)
    for name, why in [
        ("broken.pdf", "not a readable PDF"),
        ("locked.pdf", "encrypted"),
        ("scan.pdf", "no text layer"),
        ("table.xlsx", "unsupported file type .xlsx"),
        ("draft.txt", "ignored by"),
    ]:
        assert name in stderr and why in stderr, (name, stderr)
    assert "4 file(s) not read (exit 3)" in stderr
    assert "nothing new" in again.stdout


def test_index_build_exits_0_when_every_file_is_read(cli, tmp_path: Path) -> None:
    pdf = tmp_path / "survey.pdf"
    make_pdf(pdf, pages=2, sentences=3)
    result = cli("index", "build", str(pdf), "--index", str(tmp_path / "idx"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["failed"] == [] and report["sources"][0]["format"] == "pdf"


def test_html_without_h1_is_titled_by_its_title_tag(tmp_path: Path) -> None:
    page = tmp_path / "notes.html"
    body = " ".join(sentence(9, i) for i in range(1, 8))
    page.write_text(
        "<html><head><title>Harbour Notes | Valley Gazette</title></head><body>"
        f"<article><h2>Tides</h2><p>{body}</p></article></body></html>",
        encoding="utf-8",
    )
    passages = list(read_passages(page))
    assert passages and {p.title for p in passages} == {"Harbour Notes > Tides"}


def test_pdf_page_text_cleanup() -> None:
    """PDFium's soft-hyphen marks go, a word cut at a line end is joined (keeping a hyphen
    that is the word's own), page-number lines and dot leaders do not become text."""
    from searchers.documents import _page_lines

    text = (
        "Rules for manip\x02ulation of a well-\r\nknown\r\n"
        "2.2 Naming . . . . . . . . 3\r\nPage 7 of 9\r\n- 12 -"
    )
    assert [line for line in _page_lines(text) if line] == [
        "Rules for manipulation of a well-known",
        "2.2 Naming ... 3",
    ]


def test_a_pdf_title_a_tool_filled_in_gives_way_to_the_file_name(tmp_path: Path) -> None:
    from searchers.documents import _pdf_title

    assert _pdf_title("Microsoft Word - draft3.docx") is None and _pdf_title("untitled") is None
    assert _pdf_title(" Annual  Report 2025 ") == "Annual Report 2025"
    make_pdf(tmp_path / "harbour_survey.pdf", pages=1, sentences=2, title="Document1")
    assert {p.title.split(" > ")[0] for p in read_passages(tmp_path / "harbour_survey.pdf")} == {
        "harbour survey"
    }


def test_a_pdf_restricted_by_an_owner_password_only_is_read(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner")  # no user password: anyone may open it
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "Restricted but readable text.")
    pdf.output(str(tmp_path / "restricted.pdf"))
    assert [p.text for p in read_passages(tmp_path / "restricted.pdf")] == [
        "Restricted but readable text."
    ]
