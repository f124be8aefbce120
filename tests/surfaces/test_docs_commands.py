"""Every command README.md, docs/*.md and evals/results/README.md show still works as shown, at
least as far as parsing.

``hoptree ...`` commands are parsed by the real command line (its Click command, built by
Typer): an unknown sub-command, an option the command does not have, a missing required
argument or a value of the wrong type fails, and ``--help`` on the same sub-command path must
succeed through the real app. Nothing is run, so no model starts. ``make X`` needs the Makefile
target, ``python benchmarks/X.py`` (or ``python -m evals.X``) the file, a working ``--help`` and
each option it is given,
``curl`` a route of the HTTP app with that method and path, ``pytest`` its test files and
registered markers, ``pip install -e '.[x]'`` the extra, and every ``HOPTREE_*`` variable the
pages name a setting. A command of any other kind fails until it is checked here or listed in
``NOT_EXERCISED`` with the reason it is not, so a new command cannot slip in unchecked.

The pages themselves live in the repository; nothing here reads ``../shared``.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tomllib
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.doc_commands import Extracted, Statement, extract, extract_files
from tests.locations import REPO

DOCS_PAGES = sorted((REPO / "docs").glob("*.md"))
# the front page, the reference, and the results' front page (its commands are the suite's)
DOC_FILES = [REPO / "README.md", *DOCS_PAGES, REPO / "evals" / "results" / "README.md"]
SERVE_PORT = 8642  # `hoptree serve`'s default; a curl elsewhere is not to hoptree's API

# Shown in the docs but not checked here: each with the reason. Keyed by the exact argv, so a
# changed command falls out of this list and must be checked (or listed) again.
NOT_EXERCISED: dict[tuple[str, ...], str] = {
    ("docker", "compose", "up", "-d"): "starts Elasticsearch from the compose file docs/"
    "documents.md shows; nothing of hoptree's runs",
    ("curl", "-s", "localhost:9200"): "asks Elasticsearch whether it is up, not hoptree",
    (".venv/bin/langgraph", "dev", "--no-browser", "--no-reload"): "langgraph-cli serving the "
    "planner (the optional `studio` extra); tests/surfaces/test_studio_graph.py checks the "
    "graph that langgraph.json names",
}

# Environment variables the pages may name that are not settings fields, with why.
OTHER_ENV = {
    "HOPTREE_CONFIG": "the TOML file's path (agent.settings.CONFIG_ENV_VAR)",
    "HOPTREE_ES_URL": "tests/searchers/test_elasticsearch_live.py's cluster, not a setting",
}
# A searcher plugin's own table, HOPTREE_SEARCHERS__<NAME>__<KEY> (extra="allow").
PLUGIN_ENV = re.compile(r"HOPTREE_SEARCHERS__[A-Z0-9]+__[A-Z0-9_]+")
_ENV_TOKEN = re.compile(r"HOPTREE_[A-Z0-9_]+")

EXTRACTED = extract_files(REPO, DOC_FILES)


def _ids(statements: list[Statement]) -> list[str]:
    return [f"{s.source} {' '.join(s.argv)[:60]}" for s in statements]


# --------------------------------------------------------------------------- the CLI


@functools.cache
def _cli() -> Any:
    """The root Click command of ``hoptree``, as ``main()`` builds it (plugins mounted)."""
    import typer

    from agent.cli.main import app

    return typer.main.get_command(app)


def _option(command: Any, token: str) -> Any | None:
    name = token.split("=", 1)[0]
    for param in command.params:
        if name in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
            return param
    return None


def _takes_value(param: Any, token: str) -> bool:
    return not (param.is_flag or param.count or "=" in token)


def resolve(argv: tuple[str, ...], *, partial: bool = False) -> tuple[list[str], Any, list[str]]:
    """(sub-command path, leaf command, its arguments) of ``hoptree ARGS``; raises
    ``AssertionError`` naming what the command line does not have. ``partial``: a group named
    alone (prose saying "``hoptree eval``") is fine."""
    command, path, i = _cli(), [], 0
    while hasattr(command, "commands"):
        while i < len(argv) and argv[i].startswith("-"):
            param = _option(command, argv[i])
            assert param is not None, f"hoptree {' '.join(path)} has no option {argv[i]}"
            i += 2 if _takes_value(param, argv[i]) else 1
        if partial and i >= len(argv):
            return path, command, []
        assert i < len(argv), f"hoptree {' '.join(path)} needs a sub-command"
        sub = command.commands.get(argv[i])
        assert sub is not None, (
            f"hoptree {' '.join(path)} has no sub-command {argv[i]!r}; "
            f"it has {', '.join(sorted(command.commands))}"
        )
        path.append(argv[i])
        command, i = sub, i + 1
    return path, command, list(argv[i:])


def check_hoptree(args: tuple[str, ...]) -> None:
    """Parse like the real CLI without running the command, then ``--help`` through the app."""
    from typer.testing import CliRunner

    from agent.cli.main import app

    path, command, rest = resolve(args)
    try:
        command.make_context(" ".join(["hoptree", *path]), rest)
    except Exception as exc:  # click's UsageError family, raised by the vendored click
        pytest.fail(f"hoptree {' '.join(args)}: {type(exc).__name__}: {exc}")
    shown = CliRunner().invoke(app, [*path, "--help"])
    assert shown.exit_code == 0, shown.output


def check_hoptree_names(args: tuple[str, ...]) -> None:
    """For prose: the sub-command path and every option named exist (arguments may be left out)."""
    _path, command, rest = resolve(args, partial=True)
    for token in rest:
        if token.startswith("-") and token != "-" and not token.startswith("-1"):
            assert _option(command, token) is not None or token == "--help", (
                f"hoptree {' '.join(args)}: no option {token}"
            )


# --------------------------------------------------------------------------- the rest


@functools.cache
def _make_targets() -> frozenset[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.MULTILINE))


def check_make(args: tuple[str, ...]) -> None:
    assert args, "make needs a target in the docs"
    for target in args:
        assert target in _make_targets(), f"the Makefile has no target {target!r}"


@functools.cache
def _help_of(*program: str) -> str:
    """``--help`` of a script or ``-m`` module, run as the docs show it (from the checkout)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, *program, "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{' '.join(program)} --help failed:\n{done.stderr[-2000:]}"
    return done.stdout


def check_python(args: tuple[str, ...]) -> None:
    """``python benchmarks/X.py ...`` or ``python -m evals.X ...``: the script or module is
    there, its ``--help`` works, and it has every ``--option`` the docs give it."""
    if args[:2] == ("-m", "agent.cli"):
        check_hoptree(args[2:])
        return
    if args[:1] == ("-m",) and len(args) > 1 and args[1].startswith("evals."):
        program, rest = args[:2], args[2:]
    elif args and args[0].startswith("benchmarks/"):
        assert (REPO / args[0]).is_file(), f"no {args[0]}"
        program, rest = args[:1], args[1:]
    else:
        pytest.fail(f"python {' '.join(args)}: not checked")
    shown = _help_of(*program)
    for token in rest:
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", shown), (
                f"{' '.join(program)} has no option {name}"
            )


@functools.cache
def _app_routes() -> Any:
    """The HTTP app as ``hoptree serve`` builds it, with the scripted agent: only its routes
    are read, nothing is asked."""
    from agent.serve.api import create_app
    from agent.serve.documents import DocumentStore
    from agent.settings import ServerSettings, Settings
    from tests.fake_agent import ScriptedAgent

    nowhere = REPO / "docs" / "no-index-here"  # never written: no request is made
    return create_app(ScriptedAgent(), ServerSettings(), DocumentStore(Settings(), nowhere))


_CURL_VALUED = frozenset(
    {"-X", "--request", "-d", "--data", "--data-raw", "--data-binary", "-H", "--header", "-o",
     "--output", "-F", "--form", "-u", "--user"}
)  # fmt: skip
_CURL_DATA = frozenset({"-d", "--data", "--data-raw", "--data-binary", "-F", "--form"})


def curl_request(args: tuple[str, ...]) -> tuple[str, str, int | None]:
    """(method, path, port) a curl command line sends."""
    method, data, url = None, False, None
    i = 0
    while i < len(args):
        token = args[i]
        if token in _CURL_VALUED:
            if token in ("-X", "--request"):
                method = args[i + 1]
            data = data or token in _CURL_DATA
            i += 2
            continue
        if not token.startswith("-") and url is None:
            url = token
        i += 1
    assert url is not None, f"curl {' '.join(args)}: no URL"
    parts = urlsplit(url if "://" in url else f"http://{url}")
    return (method or ("POST" if data else "GET")).upper(), parts.path or "/", parts.port


def route_matches(method: str, path: str) -> bool:
    from starlette.routing import Match

    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    return any(route.matches(scope)[0] == Match.FULL for route in _app_routes().router.routes)


def check_curl(args: tuple[str, ...]) -> None:
    method, path, port = curl_request(args)
    assert port == SERVE_PORT, (
        f"curl {' '.join(args)}: not hoptree's API (port {port}); list it in NOT_EXERCISED"
    )
    assert route_matches(method, path), f"the HTTP app has no route {method} {path}"


@functools.cache
def _pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def check_pytest(args: tuple[str, ...]) -> None:
    registered = _pyproject()["tool"]["pytest"]["ini_options"]["markers"]
    markers = {marker.split(":", 1)[0].strip() for marker in registered}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "-m":
            words = set(re.findall(r"[\w-]+", args[i + 1])) - {"not", "and", "or"}
            assert words <= markers, f"pytest -m {args[i + 1]}: unregistered {words - markers}"
            i += 2
            continue
        if not token.startswith("-"):
            assert (REPO / token.split("::", 1)[0]).exists(), f"pytest: no {token}"
        i += 1


def check_pip(args: tuple[str, ...]) -> None:
    assert args[:1] == ("install",), f"pip {' '.join(args)}: not checked"
    extras = _pyproject()["project"]["optional-dependencies"]
    for token in args[1:]:
        wanted = re.fullmatch(r"\.\[([\w,-]+)\]", token)
        if wanted:
            for extra in wanted.group(1).split(","):
                assert extra in extras, f"pyproject.toml has no extra {extra!r}"
        else:
            assert token in ("-e", "--editable"), f"pip install {token}: not checked"


@functools.cache
def setting_env_names() -> frozenset[str]:
    """``HOPTREE_SECTION__NAME`` of every field of the settings model."""
    from pydantic import BaseModel

    from agent.settings import Settings

    names: set[str] = set()

    def walk(model: type[BaseModel], prefix: list[str]) -> None:
        for name, info in model.model_fields.items():
            kind = info.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                walk(kind, [*prefix, name])
            else:
                names.add("HOPTREE_" + "__".join(p.upper() for p in [*prefix, name]))

    walk(Settings, [])
    return frozenset(names)


def env_name_known(name: str) -> bool:
    from searchers.searcher_configs import _FLAT_SEARCHER_KEYS

    known = setting_env_names()
    if name in known or name in OTHER_ENV or PLUGIN_ENV.fullmatch(name):
        return True
    if name.startswith("HOPTREE_SEARCHERS__") and name[19:].lower() in _FLAT_SEARCHER_KEYS:
        return True  # the flat names of earlier releases, still read
    # a section written as a prefix: HOPTREE_SEARCHERS__<NAME>__<KEY>
    return name.endswith("__") and any(k.startswith(name) for k in known)


def check_env(assignments: tuple[str, ...]) -> None:
    for assignment in assignments:
        name = assignment.split("=", 1)[0]
        if name.startswith("HOPTREE_"):
            assert env_name_known(name), f"{name} is no setting"


CHECKS = {
    "hoptree": check_hoptree,
    ".venv/bin/hoptree": check_hoptree,
    "make": check_make,
    "python": check_python,
    "python3": check_python,
    ".venv/bin/python": check_python,
    "curl": check_curl,
    "pytest": check_pytest,
    ".venv/bin/pytest": check_pytest,
    ".venv/bin/pip": check_pip,
    "export": check_env,
}


def exercise(statement: Statement) -> None:
    """Check one statement, or fail saying it is not checked."""
    check_env(statement.assignments)
    if not statement.argv:
        return  # assignments alone
    if statement.argv in NOT_EXERCISED:
        return
    check = CHECKS.get(statement.program)
    if check is None:
        pytest.fail(
            f"{statement.source}: `{' '.join(statement.argv)}` is not exercised: check it in "
            "tests/surfaces/test_docs_commands.py or list it in NOT_EXERCISED with a reason"
        )
    check(statement.argv[1:])


# --------------------------------------------------------------------------- the pages


def test_the_pages_show_commands() -> None:
    """The extraction finds what the pages hold (an empty list would pass everything)."""
    programs = {s.program for s in EXTRACTED.statements}
    assert {"hoptree", "make", "curl", ".venv/bin/python"} <= programs
    assert len(EXTRACTED.statements) > 100
    assert len(EXTRACTED.inline) > 10


@pytest.mark.parametrize("statement", EXTRACTED.statements, ids=_ids(EXTRACTED.statements))
def test_every_command_shown_is_exercised(statement: Statement) -> None:
    exercise(statement)


@pytest.mark.parametrize("statement", EXTRACTED.inline, ids=_ids(EXTRACTED.inline))
def test_hoptree_commands_named_in_prose_exist(statement: Statement) -> None:
    check_hoptree_names(statement.argv[1:])


def test_no_command_outside_a_checked_block() -> None:
    assert EXTRACTED.stray == [], "mark these blocks ```bash (or prefix the lines with '$ ')"


def test_nothing_listed_as_not_exercised_is_gone_from_the_pages() -> None:
    shown = {s.argv for s in EXTRACTED.statements}
    assert set(NOT_EXERCISED) <= shown, set(NOT_EXERCISED) - shown


def test_every_environment_variable_named_is_a_setting() -> None:
    named = {
        (path.name, token)
        for path in DOC_FILES
        for token in _ENV_TOKEN.findall(path.read_text(encoding="utf-8"))
    }
    unknown = sorted(f"{page}: {name}" for page, name in named if not env_name_known(name))
    assert unknown == []


def test_every_setting_is_in_the_configuration_page() -> None:
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = sorted(name for name in setting_env_names() if f"`{name}`" not in page)
    assert missing == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250, "the front page is read in five minutes"
    for page in DOCS_PAGES:
        assert f"(docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


# --------------------------------------------------------------------------- the checks fail


def _statements(markdown: str) -> Extracted:
    return extract("sample.md", markdown)


@pytest.mark.parametrize(
    "line",
    [
        "hoptree ask --index ./idx --no-such-option 'q'",  # an option the command lacks
        "hoptree index rebuild ./docs --index ./idx",  # a sub-command that does not exist
        "hoptree ask 'a question'",  # --index is required
        "hoptree search --index ./idx -k many 'q'",  # -k is a number
        "hoptree --no-config doctor",  # the root has --config only
        "make deploy",
        "python benchmarks/no_such_bench.py",
        ".venv/bin/python benchmarks/load_test.py --no-such-flag",
        ".venv/bin/python -m evals.no_such_study --help",
        ".venv/bin/python -m evals.searcher_study --no-such-flag",
        "curl -s http://127.0.0.1:8642/v1/nothing",
        "curl -s -X DELETE http://127.0.0.1:8642/v1/ask",
        "curl -s http://127.0.0.1:9999/v1/ask",  # another service: must be listed
        "export HOPTREE_LLM__NO_SUCH=1",
        "HOPTREE_PLANER__SEARCHERS=sparse hoptree doctor",
        ".venv/bin/pytest tests/test_no_such_module.py",
        ".venv/bin/pytest -m 'not gpu'",
        ".venv/bin/pip install -e '.[no-such-extra]'",
        "rm -rf ~/.cache/hoptree",  # a program nobody checks
    ],
)
def test_a_wrong_command_fails(line: str) -> None:
    (statement,) = _statements(f"```bash\n{line}\n```\n").statements
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        exercise(statement)


def test_right_commands_pass_the_same_checks() -> None:
    sample = """```bash
hoptree --config my.toml index build ./notes --index ./idx --format text --json
HOPTREE_LLM__LOCAL_PARALLEL=2 hoptree tree build ./notes --index ./idx --one-tree --doc a.md
curl -s -X DELETE http://127.0.0.1:8642/v1/documents/notes.md
.venv/bin/python benchmarks/load_test.py --write --clients 5
```
"""
    for statement in _statements(sample).statements:
        exercise(statement)


def test_extraction_joins_continuations_and_skips_output_blocks() -> None:
    found = _statements(
        "```bash\n# a comment\nhoptree eval run --dataset d.jsonl \\\n    --pipeline bm25 --out r"
        "   # resumable\n```\n\n```\nQ: output, not a command\nhoptree ask stray\n```\n\n"
        "```text\n$ make test\n```\n\nProse with `hoptree index info --verify` in it.\n"
    )
    assert [s.argv for s in found.statements] == [
        ("hoptree", "eval", "run", "--dataset", "d.jsonl", "--pipeline", "bm25", "--out", "r"),
        ("make", "test"),
    ]
    assert found.stray == ["sample.md:9: hoptree ask stray"]
    assert [s.argv for s in found.inline] == [("hoptree", "index", "info", "--verify")]


def test_prose_names_are_checked_too() -> None:
    check_hoptree_names(("index", "info", "--verify"))
    with pytest.raises(AssertionError):
        check_hoptree_names(("index", "info", "--verfy"))
