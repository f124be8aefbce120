"""Any real folder (issue 54 part 1): one folder made to hold everything a real one does, built
with the real ``hoptree index build`` (tantivy, the real embedding model): every readable file
is searchable, every other one is named with its reason, and the exit code is 3.

What the operating system cannot be made to do here (the tests run as root, who may open any
file) is done by a stand-in at the call that would refuse: ``Path.open`` raising
PermissionError for one file, ``os.scandir`` for one folder; so are a file deleted between the
listing and the read, files written while they are read, and converters that raise (an
ImportError as a broken install gives, a RuntimeError). The real refusal is tested too, in a
child process without the capability to override file permissions
(``test_real_permission_denied_files_and_folders_are_named``)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import agent.indexing
import searchers.documents
import searchers.source_reading
from searchers.source_files import display_path
from tests.child_env import child_environment
from tests.document_files import make_docx, make_html
from tests.locations import REPO

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 3


@dataclass
class Messy:
    """The folder, what each readable file says (a word found nowhere else), and what each
    unreadable one must be named with: (reason, a piece of the detail)."""

    root: Path
    words: dict[str, str] = field(default_factory=dict)
    unread: dict[str, tuple[str, str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    too_long: Path | None = None  # a folder whose path is past PATH_MAX (one failed entry)


def _text(messy: Messy, rel: str, word: str, *, codec: str = "utf-8", extra: str = "") -> None:
    path = messy.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f"The survey of {word} counted barges on the river. {extra}\n"
    path.write_bytes(body.encode(codec))
    messy.words[rel] = word


def _nested(base: Path, name: str, levels: int) -> tuple[Path, int]:
    """``levels`` folders named ``name`` one inside the other, made relative to an open folder
    (a path past PATH_MAX cannot be made by name); the deepest folder and an open fd of it."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    path = base
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, path = inner, path / name
    return path, fd


def make_messy_folder(root: Path, outside: Path) -> Messy:
    messy = Messy(root)
    root.mkdir()
    # --- read: text in the encodings people have, odd names, long paths, links to files
    _text(messy, "plain.txt", "zorvane")
    (root / "notes.md").write_text("# Harbour notes\n\nThe pilot of quellhaven boards at dawn.\n")
    messy.words["notes.md"] = "quellhaven"
    _text(messy, "latin1.txt", "brelkin", codec="latin-1", extra="La rivière était gelée.")
    _text(messy, "windows.txt", "tarnwick", codec="cp1252", extra="“Quoted” at €5 — naïve.")
    _text(messy, "utf16.txt", "mossgrave", codec="utf-16", extra="Ålesund.")
    _text(messy, "bom.md", "fennimore", codec="utf-8-sig")
    _text(messy, "name with spaces.txt", "dollowmere")
    _text(messy, "Ålesund ferry 渡し.txt", "yarrowind")
    _text(messy, "[bold]markup[red] name.txt", "skellbrook")  # rich markup, printed as is
    _text(messy, "n" * 240 + ".txt", "orrisdale")  # a 244-byte name (the limit is 255)
    deep, fd = _nested(root, "d" * 100, 30)  # a 3,000-character path, under PATH_MAX
    os.close(fd)
    _text(messy, str((deep / "deep.txt").relative_to(root)), "wendlecombe")
    with contextlib.suppress(OSError):  # a file system that refuses newlines in names
        _text(messy, "new\nline.txt", "pellimore")
    (outside / "linked.txt").write_text("The lighthouse of grimsholt burns all night.\n")
    (root / "link to a file.txt").symlink_to(outside / "linked.txt")
    messy.words["link to a file.txt"] = "grimsholt"
    spec = make_html(root / "gazette.html", sections=2, sentences=3, title="Gazette")
    messy.words["gazette.html"] = spec.sections[1].sentences[0].split()[5]  # the river's name
    (root / "empty.txt").write_bytes(b"")  # read: nothing in it
    _text(messy, "growing.txt", "hallowfen")  # written to while it is read: read again
    messy.words["growing.txt+"] = "brackwater"  # ... and what was written is indexed

    # --- not read, each with its reason
    def unread(rel: str, reason: str, detail: str) -> None:
        messy.unread[rel] = (reason, detail)

    (root / "dangling.txt").symlink_to("/nonexistent/target.txt")
    unread("dangling.txt", "missing", "dangling symbolic link (to /nonexistent/target.txt)")
    (root / "loop.txt").symlink_to("loop.txt")
    unread("loop.txt", "unreadable", "symbolic link loop")
    os.mkfifo(root / "pipe.txt")
    unread("pipe.txt", "unreadable", "not a regular file (a named pipe)")
    (root / "junk.txt").write_bytes(os.urandom(64) + b"\x00" + bytes(range(256)) * 4)
    unread("junk.txt", "binary", "binary data")
    (root / "photo.md").write_bytes(PNG)
    unread("photo.md", "binary", "binary data")
    (root / "noise.txt").write_bytes(bytes(range(0x80, 0x100)) * 12)
    unread("noise.txt", "encoding", "no other encoding reads it")
    (root / "empty.pdf").write_bytes(b"")
    unread("empty.pdf", "corrupt", "not a readable PDF")
    (root / "package.json").write_text('{\n  "name": "site",\n  "version": "1.0.0"\n}\n')
    unread("package.json", "corrupt", "line 1: not JSON lines")
    _text(messy, "secret.txt", "unseen")
    del messy.words["secret.txt"]
    unread("secret.txt", "permission", "permission denied")
    _text(messy, "locked/inside.txt", "unseen")
    del messy.words["locked/inside.txt"]
    unread("locked", "permission", "permission denied: the folder cannot be listed")
    (root / "needs-cleaner.html").write_text("<html><body><p>x</p></body></html>")
    unread("needs-cleaner.html", "error", "needs a module that is not installed")
    make_docx(root / "crash.docx", sections=1, sentences=1)
    unread("crash.docx", "error", "RuntimeError: the converter fell over")
    _text(messy, "vanished.txt", "unseen")
    del messy.words["vanished.txt"]
    unread("vanished.txt", "missing", "deleted while the build ran")
    _text(messy, "restless.txt", "unseen")
    del messy.words["restless.txt"]
    unread("restless.txt", "changing", "changed while it was read, 3 times")
    (root / "table.xlsx").write_bytes(b"PK\x03\x04")
    unread("table.xlsx", "unsupported", "unsupported file type .xlsx")
    _text(messy, "no-ignore/inside.txt", "unseen")
    del messy.words["no-ignore/inside.txt"]
    (root / "no-ignore" / ".hoptreeignore").symlink_to("/nonexistent/ignore")
    unread("no-ignore", "unreadable", ".hoptreeignore is not a regular file")
    try:
        fd = os.open(os.fsencode(root) + b"/caf\xe9.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"Latin-1 bytes in the name\n")
        os.close(fd)
        unread(os.fsdecode(b"caf\xe9.txt"), "unreadable", "name is not valid UTF-8")
    except OSError:  # a file system that only takes UTF-8 names
        pass
    # a folder past PATH_MAX: the walk cannot list it by name
    _, fd = _nested(root, "t" * 250, 20)
    fd_file = os.open("beyond.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(fd_file, b"too deep to read by name\n")
    os.close(fd_file)
    os.close(fd)
    messy.too_long = root / ("t" * 250)

    # --- skipped on purpose
    (root / "folder link").symlink_to(root / "no-ignore", target_is_directory=True)
    messy.skipped["folder link"] = "link"
    (root / ".hidden.txt").write_text("hidden")
    messy.skipped[".hidden.txt"] = "hidden"
    return messy


def install_stand_ins(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """What root cannot be refused, what happens during a build, converters that raise."""
    real_open, real_scandir = Path.open, os.scandir

    def open_(self: Path, *args, **kwargs):
        if self.name == "secret.txt":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    def scandir(path=".", *args, **kwargs):
        if os.fspath(path) == str(root / "locked"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(os, "scandir", scandir)

    def raising(real: Callable, name: str, exc: Exception) -> Callable:
        def convert(path: Path, *args, **kwargs):
            if path.name == name:
                raise exc
            return real(path, *args, **kwargs)

        return convert

    cleaner = ImportError(
        "lxml.html.clean module is now a separate project lxml_html_clean.\n"
        "Install lxml[html_clean] or lxml_html_clean directly."
    )
    monkeypatch.setattr(
        searchers.documents,
        "convert_html",
        raising(searchers.documents.convert_html, "needs-cleaner.html", cleaner),
    )
    monkeypatch.setattr(
        searchers.documents,
        "convert_docx",
        raising(
            searchers.documents.convert_docx,
            "crash.docx",
            RuntimeError("the converter fell over"),
        ),
    )

    real_select = agent.indexing.select_sources

    def select_then_delete(sources):
        selection = real_select(sources)
        (root / "vanished.txt").unlink(missing_ok=True)  # listed, then gone
        return selection

    monkeypatch.setattr(agent.indexing, "select_sources", select_then_delete)

    real_read = searchers.source_reading.read_file
    grown: set[str] = set()

    def read_while_written(path: Path, *args, **kwargs):
        read = real_read(path, *args, **kwargs)
        if path.name == "restless.txt" or (path.name == "growing.txt" and path.name not in grown):
            grown.add(path.name)
            with real_open(path, "a", encoding="utf-8") as fh:
                fh.write("Later the brackwater ferry was added.\n")
        return read

    monkeypatch.setattr(searchers.source_reading, "read_file", read_while_written)


def _rel(root: Path, path: str) -> str:
    return Path(path).relative_to(root).as_posix()


def test_a_messy_folder_indexes_every_readable_file_and_names_the_rest(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    messy = make_messy_folder(tmp_path / "docs", outside)
    install_stand_ins(monkeypatch, messy.root)
    index = tmp_path / "idx"

    result = cli("index", "build", str(messy.root), "--index", str(index), "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)

    # every file not read is named with its reason and what happened
    failed = {_rel(messy.root, f["path"]): (f["reason"], f["detail"]) for f in report["failed"]}
    assert messy.too_long is not None
    beyond = [k for k in failed if k.startswith(messy.too_long.name)]
    assert len(beyond) == 1 and failed.pop(beyond[0])[0] == "unreadable"
    assert "too long" in json.dumps(report["failed"])
    assert set(failed) == set(messy.unread), sorted(set(failed) ^ set(messy.unread))
    for rel, (reason, detail) in messy.unread.items():
        assert failed[rel][0] == reason and detail in failed[rel][1], (rel, failed[rel])
    skipped = {_rel(messy.root, s["path"]): s["reason"] for s in report["skipped"]}
    assert skipped == messy.skipped

    # every readable file is a source, in the encoding it was written in
    sources = {_rel(messy.root, s["path"]) if "outside" not in s["path"] else "": s
               for s in report["sources"]}  # fmt: skip
    linked = sources.pop("")  # a link to a file is read, and recorded by its target's path
    assert linked["name"] == "link to a file.txt" and linked["passages"] == 1
    expected = {rel for rel in messy.words if not rel.endswith("+")} - {"link to a file.txt"}
    assert set(sources) == expected | {"empty.txt"}
    assert sources["empty.txt"]["passages"] == 0
    encodings = {rel: s["encoding"] for rel, s in sources.items()}
    assert encodings["latin1.txt"] == encodings["windows.txt"] == "windows-1252"
    assert encodings["utf16.txt"] == "utf-16-le" and encodings["bom.md"] == "utf-8-sig"
    assert encodings["plain.txt"] == "utf-8" and encodings["gazette.html"] is None

    # ... and searchable: each file's own word finds it first in the real tantivy index
    args = ["retrieve", "--index", str(index), "--retriever", "sparse", "-k", "1", "--json"]
    for rel, word in [*messy.words.items(), ("latin1.txt", "rivière"), ("utf16.txt", "Ålesund")]:
        found = cli(*args, word)
        assert found.exit_code == 0, found.output
        hits = json.loads(found.stdout)["hits"]
        name = Path(rel.removesuffix("+")).name
        assert hits and hits[0]["metadata"]["source"] == name, (rel, word, hits)

    # the human report: the encoding in the table, one line per file not read, exit 3
    _text(messy, "vanished.txt", "unseen")  # deleted again after the listing
    again = cli("index", "build", str(messy.root), "--index", str(index))
    assert again.exit_code == 3, again.output
    table = "".join(again.stdout.split())  # the cells wrap at the runner's 80 columns
    assert "(windows-1252)" in table and "(utf-16-le)" in table
    assert "nothing new" in again.stdout and "[bold]markup" in table
    lines = again.stderr.splitlines()
    for rel, (reason, detail) in messy.unread.items():
        shown = display_path(messy.root / rel)
        line = next((ln for ln in lines if ln.startswith(f"not read {shown}: ")), None)
        assert line is not None and line.endswith(f"[{reason}]"), (rel, again.stderr)
        assert detail.split(" (")[0] in line, (rel, line)
    assert f"{len(messy.unread) + 1} file(s) not read (exit 3)" in " ".join(lines)
    assert f"skipped {display_path(messy.root / 'folder link')}: a symbolic link" in again.stderr


def _without_override() -> list[str] | None:
    """The prefix that runs a command without the power to read files its mode forbids: none
    for a user who has no such power, setpriv dropping CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH for root; None when neither is possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_real_permission_denied_files_and_folders_are_named(tmp_path: Path) -> None:
    prefix = _without_override()
    if prefix is None:
        pytest.skip("running as root without setpriv: every file can be read")
    folder = tmp_path / "docs"
    (folder / "closed").mkdir(parents=True)
    (folder / "open.txt").write_text("The ferry to quarnholt leaves at noon.\n")
    (folder / "secret.txt").write_text("Not for the index.\n")
    (folder / "closed" / "inside.txt").write_text("Not for the index either.\n")
    os.chmod(folder / "secret.txt", 0)
    os.chmod(folder / "closed", 0)
    try:
        probe = subprocess.run(
            [*prefix, "cat", str(folder / "secret.txt")], capture_output=True, timeout=60
        )
        if probe.returncode == 0:
            pytest.skip("this user reads files whatever their mode")
        env = {
            **child_environment(),
            "HOPTREE_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(REPO),
        }
        index = tmp_path / "idx"
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "agent.cli", "index", "build", str(folder),
             "--index", str(index), "--json"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        os.chmod(folder / "secret.txt", 0o644)
        os.chmod(folder / "closed", 0o755)
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    failed = {Path(f["path"]).name: (f["reason"], f["detail"]) for f in report["failed"]}
    assert failed == {
        "secret.txt": ("permission", "permission denied"),
        "closed": ("permission", "permission denied: the folder cannot be listed"),
    }
    assert [s["name"] for s in report["sources"]] == ["open.txt"]


def test_a_sync_keeps_the_files_of_a_folder_it_cannot_list(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    (folder / "trips").mkdir(parents=True)
    (folder / "trips" / "ferry.txt").write_text("The ferry to quarnholt leaves at noon.\n")
    (folder / "home.txt").write_text("The kettle of brimsley whistles at four.\n")
    index = tmp_path / "idx"
    assert cli("index", "build", str(folder), "--index", str(index)).exit_code == 0

    blocked = [True]
    real_scandir = os.scandir

    def scandir(path=".", *args, **kwargs):
        if blocked[0] and os.fspath(path) == str(folder / "trips"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    synced = cli("index", "sync", str(folder), "--index", str(index), "--json")
    assert synced.exit_code == 3, synced.output
    report = json.loads(synced.stdout)
    assert [(Path(f["path"]).name, f["reason"]) for f in report["failed"]] == [
        ("trips", "permission")
    ]
    assert report["removed"] == 0 and report["total"] == 2  # not "deleted": not seen
    args = ["retrieve", "--index", str(index), "--retriever", "sparse", "-k", "1", "--json"]
    hit = json.loads(cli(*args, "quarnholt").stdout)["hits"][0]
    assert hit["metadata"]["source"] == "ferry.txt"

    # listed again, with the file deleted meanwhile: now the sync drops it
    blocked[0] = False
    (folder / "trips" / "ferry.txt").unlink()
    again = cli("index", "sync", str(folder), "--index", str(index), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["removed"] == 1
