"""Real PDF, HTML and DOCX files made on the spot, for the document readers' tests and the
ingest benchmark (``benchmarks/ingest_bench.py``): what a converter gets out of them is compared
with what was put in, so the files carry known sentences, headings and page numbers.

PDFs are written with fpdf2 (a text layer in a core font), DOCX with python-docx (real Heading
styles), HTML by hand with the navigation, cookie banner and footer a crawled page has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

_RIVERS = ["Alder", "Brenna", "Corran", "Dunmore", "Elsby", "Fenwick", "Garrow", "Holt"]
_GOODS = ["barley", "slate", "timber", "wool", "salt", "copper", "flax", "coal"]


@dataclass
class Section:
    """One heading and its sentences; ``page`` is the PDF page it is printed on (1-based)."""

    heading: str
    sentences: list[str]
    page: int = 1


@dataclass
class DocumentSpec:
    """What a made file holds, for scoring a converter's text against it."""

    title: str
    sections: list[Section] = field(default_factory=list)
    boilerplate: list[str] = field(default_factory=list)  # HTML only: what should not be read

    @property
    def sentences(self) -> list[str]:
        return [s for section in self.sections for s in section.sentences]


def sentence(page: int, number: int) -> str:
    """A unique, checkable sentence: its numbers say where it was written."""
    river = _RIVERS[(page + number) % len(_RIVERS)]
    goods = _GOODS[(page * 3 + number) % len(_GOODS)]
    return (
        f"In survey {page}.{number} the river {river} carried {100 + 7 * page + number} "
        f"barges of {goods} past the mill at Low {river} Bridge."
    )


def spec_of(title: str, sections: int, sentences: int) -> DocumentSpec:
    return DocumentSpec(
        title=title,
        sections=[
            Section(
                heading=f"Survey {n} of the {_RIVERS[n % len(_RIVERS)]} valley",
                sentences=[sentence(n, i) for i in range(1, sentences + 1)],
                page=n,
            )
            for n in range(1, sections + 1)
        ],
    )


def make_pdf(
    path: Path, pages: int = 3, sentences: int = 12, *, title: str = "River Survey"
) -> DocumentSpec:
    """A PDF with a text layer: one section per page, its heading in bold and in the outline
    (bookmarks), page numbers in the footer (a converter should not glue them into the text)."""
    from fpdf import FPDF

    spec = spec_of(title, pages, sentences)
    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_auto_page_break(auto=False)
    for section in spec.sections:
        pdf.add_page()
        pdf.start_section(section.heading)
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, section.heading)
        pdf.ln(3)
        pdf.set_font("Helvetica", "", 10)
        for text in section.sentences:
            pdf.multi_cell(0, 5.5, text)
            pdf.ln(1.5)
        pdf.set_y(-15)
        pdf.set_font("Helvetica", "I", 8)
        pdf.cell(0, 10, f"- {section.page} -", align="C")
    pdf.output(str(path))
    return spec


def make_image_only_pdf(path: Path) -> None:
    """A 'scanned' PDF: shapes, no text layer."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_fill_color(40, 40, 40)
    for row in range(12):
        pdf.rect(20, 20 + row * 12, 150, 6, style="F")
    pdf.output(str(path))


def make_encrypted_pdf(path: Path, password: str = "secret") -> None:
    """A PDF that opens only with a user password."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, "This text is behind a password.")
    pdf.output(str(path))


def make_corrupt_pdf(path: Path) -> None:
    """A file named .pdf that is not one: a header, then noise."""
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF-not-really\n")


def make_html(
    path: Path, sections: int = 4, sentences: int = 8, *, title: str = "River Survey"
) -> DocumentSpec:
    """An article page as a crawler saves it: head, nav menu, cookie banner, sidebar, the
    article with h1/h2 headings, related links and a footer."""
    spec = spec_of(title, sections, sentences)
    spec.boilerplate = [
        "Accept all cookies to continue browsing our website.",
        "Subscribe to the Valley Gazette newsletter for weekly updates.",
        "Copyright 2026 Valley Gazette Media Group. All rights reserved.",
        "Most read this week: ten cheeses of the lowlands ranked.",
    ]
    nav = "".join(f'<li><a href="/s/{n}">Section {n}</a></li>' for n in range(1, 9))
    body = [f"<h1>{title}</h1>"]
    for section in spec.sections:
        body.append(f"<h2>{section.heading}</h2>")
        half = len(section.sentences) // 2
        body.append("<p>" + " ".join(section.sentences[:half]) + "</p>")
        body.append("<p>" + " ".join(section.sentences[half:]) + "</p>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} | Valley Gazette</title>
<style>body {{ font-family: serif; }}</style>
<script>window.analytics = {{track: function() {{}}}};</script></head>
<body>
<header><nav class="menu"><ul>{nav}</ul></nav></header>
<div class="cookie-banner"><p>{spec.boilerplate[0]}</p><button>OK</button></div>
<main><article>
{chr(10).join(body)}
</article>
<aside class="related"><h3>Related</h3><ul><li><a href="/x">{spec.boilerplate[3]}</a></li></ul>
<p>{spec.boilerplate[1]}</p></aside></main>
<footer><p>{spec.boilerplate[2]}</p><a href="/privacy">Privacy</a> <a href="/terms">Terms</a>
</footer>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return spec


def make_docx(
    path: Path, sections: int = 4, sentences: int = 8, *, title: str = "River Survey"
) -> DocumentSpec:
    """A Word document: the title in the Title style, Heading 1 sections, body paragraphs."""
    from docx import Document

    spec = spec_of(title, sections, sentences)
    document = Document()
    document.core_properties.title = title
    document.add_heading(title, level=0)
    for section in spec.sections:
        document.add_heading(section.heading, level=1)
        half = len(section.sentences) // 2
        document.add_paragraph(" ".join(section.sentences[:half]))
        document.add_paragraph(" ".join(section.sentences[half:]))
    document.save(str(path))
    return spec
