"""Every protocol a committed report cites, kept byte for byte (docs/protocol/README.md).

A report records the sha256 of the docs/STUDY.md it was judged under (`study_sha256` in its
analysis*.json; the first 16 hex digits in its report*.md). STUDY.md moves on (v4, then v5),
so a digest alone would soon name text nobody can read. docs/protocol/ therefore holds each
cited version, byte-identical to its git blob, as STUDY-v<N>-<first 12 hex of its sha256>.md
(v0: a title without a version number). These files are frozen: an amendment is a new version
of docs/STUDY.md that gives its reasons, archived here in turn, never an edit of an old one.

`protocol_file` finds the file a digest names and checks its bytes (so an edited archive, or
a digest that matches nothing, gives None); `cited_digests` lists what docs/ cites.
tests/test_protocol.py holds the two together. Only the standard library and the live file's
path from sweeps.study.stats are used.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from sweeps.study.stats import STUDY_PATH

PROTOCOL_DIR = STUDY_PATH.parent / "protocol"
NAME_HEX = 12  # hex digits of the digest in an archived file's name
ARCHIVE_NAME = re.compile(r"STUDY-v(\d+)-([0-9a-f]{12})\.md")  # 12: NAME_HEX
MIN_PREFIX = NAME_HEX  # a shorter cited prefix resolves to nothing
# What reports write: analysis*.json's key, and figures' "docs/STUDY.md sha256 `<16 hex>`".
# Anything between the backticks is taken, so a malformed citation fails to resolve.
JSON_CITATION = re.compile(r'"study_sha256"\s*:\s*"([^"]*)"')
MD_CITATION = re.compile(r"STUDY\.md\s+sha256\s+`([^`\n]*)`")
HEX = re.compile(r"[0-9a-f]+")


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
