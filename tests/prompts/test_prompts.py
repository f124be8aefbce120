"""Every prompt template is well formed, and every call site fills exactly its variables."""

from __future__ import annotations

import ast

import pytest

import prompts
from tests.locations import REPO

ROOT = REPO
SOURCE_PACKAGES = ("agent", "searchers", "tree", "evals")

# Templates whose callers arrive with later issues; each entry must disappear when its caller
# lands (the test below fails if a listed template gains a caller, or an unlisted one has none).
AWAITING_CALLER: set[str] = set()


def call_sites() -> list[tuple[str, int, str, set[str]]]:
    """(file, line, template name, keyword names) for each prompts.render("...") call."""
    sites = []
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "render"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "prompts"
                ):
                    continue
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                assert node.args and isinstance(node.args[0], ast.Constant), (
                    f"{where}: prompts.render needs a literal template name"
                )
                assert all(kw.arg is not None for kw in node.keywords), (
                    f"{where}: pass prompt variables as explicit keywords, not **kwargs"
                )
                keywords = {kw.arg for kw in node.keywords if kw.arg is not None}
                sites.append(
                    (str(path.relative_to(ROOT)), node.lineno, node.args[0].value, keywords)
                )
    return sites


def test_every_template_loads_with_both_sections() -> None:
    names = prompts.names()
    assert len(names) >= 12
    for name in names:
        template = prompts.load(name)
        assert template.system and template.user
        assert template.variables, f"{name} has no variables: it could not depend on its input"


def test_every_call_site_fills_exactly_the_template_variables() -> None:
    sites = call_sites()
    assert sites, "no prompts.render call found at all"
    for where, line, name, keywords in sites:
        assert name in prompts.names(), f"{where}:{line} renders unknown prompt {name!r}"
        expected = set(prompts.load(name).variables)
        assert keywords == expected, f"{where}:{line} fills {keywords} but {name} needs {expected}"


def test_every_template_has_a_caller_or_is_awaiting_one() -> None:
    called = {name for _, _, name, _ in call_sites()}
    for name in prompts.names():
        if name in AWAITING_CALLER:
            assert name not in called, f"{name} has a caller now: remove it from AWAITING_CALLER"
        else:
            assert name in called, f"prompt {name} is never rendered"


def test_render_is_strict() -> None:
    with pytest.raises(prompts.PromptError, match=r"missing variables \['question'\]"):
        prompts.render("closed_book")
    with pytest.raises(prompts.PromptError, match=r"unexpected \['extra'\]"):
        prompts.render("closed_book", question="q", extra="x")
    messages = prompts.render("closed_book", question="Who wrote {this}?")
    assert "Who wrote {this}?" in messages[1].content  # braces in values are not re-formatted
    assert messages[0].type == "system" and messages[1].type == "human"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("[user]\nhi {x}", "missing section"),
        ("[system]\ns\n[user]\n{a.b}", "plain"),
        ("[system]\ns {x:>3}\n[user]\nu", "plain"),
        ("[system]\ns\n[user]\nu {", "malformed"),
        ("preamble\n[system]\ns\n[user]\nu", "before the first"),
        ("[system]\ns\n[system]\nt\n[user]\nu", "twice"),
        ("[system]\n\n[user]\nu", "empty"),
    ],
)
def test_malformed_templates_are_rejected(raw: str, error: str) -> None:
    with pytest.raises(prompts.PromptError, match=error):
        prompts.parse_template("bad", raw)


def test_unknown_prompt_name() -> None:
    with pytest.raises(prompts.PromptError, match="no prompt named"):
        prompts.load("does_not_exist")
