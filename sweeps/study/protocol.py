"""Every protocol a committed report cites, kept byte for byte (docs/protocol/README.md).

A report records the sha256 of the docs/STUDY.md it was judged under (`study_sha256` in its
analysis*.json; the first 16 hex digits in its report*.md). STUDY.md moves on (v4, then v5),
so a digest alone would soon name text nobody can read. docs/protocol/ therefore holds each
cited version, byte-identical to its git blob, as STUDY-v<N>-<first 12 hex of its sha256>.md
(v0: a title without a version number). These files are frozen: an amendment is a new version
of docs/STUDY.md that gives its reasons, archived here in turn, never an edit of an old one.

`protocol_file` finds the file a digest names and checks its bytes (so an edited archive, or
a digest that matches nothing, gives None); `cited_digests` lists what docs/ cites.
tests/test_protocol.py holds the two together.

A written document (analysis.json, carry.json, side_by_side.json) carries a *stamp*: the digest
and version of the rules that judged it. `judged_under` keeps an earlier document's stamp when
regenerating it changes nothing else, so a new STUDY.md version that adds a section or amends a
rule a report does not use leaves that report's files as they were: the report still names the
version that first judged it, and the tests that regenerate it prove the live rules agree. Only
the standard library and sweeps.study.stats are used.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from sweeps.study.stats import STUDY_PATH, STUDY_SHA256, STUDY_VERSION

PROTOCOL_DIR = STUDY_PATH.parent / "protocol"
NAME_HEX = 12  # hex digits of the digest in an archived file's name
ARCHIVE_NAME = re.compile(r"STUDY-v(\d+)-([0-9a-f]{12})\.md")  # 12: NAME_HEX
MIN_PREFIX = NAME_HEX  # a shorter cited prefix resolves to nothing
# What reports write: analysis*.json's key, and figures' "docs/STUDY.md sha256 `<16 hex>`".
# Anything between the backticks is taken, so a malformed citation fails to resolve.
JSON_CITATION = re.compile(r'"study_sha256"\s*:\s*"([^"]*)"')
MD_CITATION = re.compile(r"STUDY\.md\s+sha256\s+`([^`\n]*)`")
HEX = re.compile(r"[0-9a-f]+")
TITLE_VERSION = re.compile(r"\(v(\d+)\)\s*$")  # "# STUDY.md: the pre-registration (v16)"
STAMP = ("study_sha256", "study_version")  # the keys of a document's stamp


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def protocol_file(
    digest: str, *, protocol_dir: Path = PROTOCOL_DIR, live: Path = STUDY_PATH
) -> Path | None:
    """The archived STUDY-v<N>-<hex>.md whose name starts the digest and whose sha256 starts
    with it (a full digest, or a cited prefix of at least MIN_PREFIX hex digits); else the live
    docs/STUDY.md if its sha256 does; else None."""
    digest = digest.strip().lower()
    if len(digest) < MIN_PREFIX or len(digest) > 64 or not HEX.fullmatch(digest):
        return None
    for path in sorted(Path(protocol_dir).glob(f"STUDY-v*-{digest[:NAME_HEX]}.md")):
        if ARCHIVE_NAME.fullmatch(path.name) and sha256_of(path).startswith(digest):
            return path
    if Path(live).is_file() and sha256_of(live).startswith(digest):
        return Path(live)
    return None


def cited_digests(docs_dir: Path) -> dict[str, list[str]]:
    """Study digest -> the files under docs_dir citing it (paths as 'docs/<name>/<file>'),
    from every *.json and *.md there except docs/protocol/ and STUDY.md itself. A prefix cited
    in a report*.md is filed under the one full digest a *.json cites that it starts; without
    exactly one, it stays as written (and must resolve on its own)."""
    docs_dir = Path(docs_dir).resolve()
    skip = {docs_dir / "protocol"}
    cites: dict[str, set[str]] = {}
    for suffix, pattern in ((".json", JSON_CITATION), (".md", MD_CITATION)):
        for path in sorted(docs_dir.rglob(f"*{suffix}")):
            if path == docs_dir / "STUDY.md" or any(p in skip for p in path.parents):
                continue
            name = path.relative_to(docs_dir.parent).as_posix()
            for digest in pattern.findall(path.read_text(errors="replace")):
                cites.setdefault(digest.strip().lower(), set()).add(name)
    full = [d for d in cites if len(d) == 64]
    for prefix in [d for d in cites if len(d) < 64]:
        matches = [d for d in full if prefix and d.startswith(prefix)]
        if len(matches) == 1:
            cites[matches[0]] |= cites.pop(prefix)
    return {d: sorted(names) for d, names in sorted(cites.items())}


def version_of(digest: str, **where) -> str | None:
    """ "v<N>" for the protocol a digest resolves to (its archived name, or the live file's
    title; "v0" for a title without a number); None where it resolves to nothing."""
    path = protocol_file(digest, **where)
    if path is None:
        return None
    named = ARCHIVE_NAME.fullmatch(path.name)
    if named:
        return f"v{named[1]}"
    numbered = TITLE_VERSION.search(path.read_text().splitlines()[0])
    return f"v{numbered[1] if numbered else 0}"


def live_stamp() -> dict[str, str]:
    """The stamp of the rules this code implements (sweeps.study.stats pins them)."""
    return {"study_sha256": STUDY_SHA256, "study_version": STUDY_VERSION}


def judged_under(new: dict, earlier: dict | None, **where) -> dict:
    """`new` (a document stamped with live_stamp()) with `earlier`'s stamp instead where the two
    are equal but for their stamps and the earlier digest resolves to an archived (or the live)
    protocol: the rules that first wrote these numbers still name them. Anything else (no
    earlier document, a number, verdict or key that moved, a digest that resolves to nothing)
    gives `new` as it is."""
    if not earlier or not isinstance(earlier, dict):
        return new
    digest = str(earlier.get("study_sha256", ""))
    version = version_of(digest, **where)
    if version is None or earlier.get("study_version", version) != version:
        return new
    unstamped = {k: v for k, v in new.items() if k not in STAMP}
    if unstamped != {k: v for k, v in earlier.items() if k not in STAMP}:
        return new
    return {**unstamped, "study_sha256": digest, "study_version": version}


def stamp_words(doc: dict) -> str:
    """A document's stamp as its page prints it: "sha256 `<16 hex>`, v16" (the version left
    out where the document predates it)."""
    version = doc.get("study_version")
    return f"sha256 `{str(doc.get('study_sha256', ''))[:16]}`" + (f", {version}" if version else "")


def earlier_json(path: Path) -> dict | None:
    """The JSON document a path already holds (None: no file, or not a JSON object)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
