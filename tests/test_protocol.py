"""Every study digest a report cites resolves to byte-identical protocol text, and the archived
versions in docs/protocol/ are never edited (sweeps/study/protocol.py, docs/protocol/README.md).
Reads files only; no training."""

import re
from pathlib import Path

from sweeps.study.protocol import (
    ARCHIVE_NAME,
    PROTOCOL_DIR,
    cited_digests,
    protocol_file,
    sha256_of,
)
from sweeps.study.stats import STUDY_PATH, STUDY_SHA256

DOCS = Path(__file__).resolve().parents[1] / "docs"


def archive_problems(protocol_dir: Path) -> list[str]:
    """Archived versions whose name is not STUDY-v<N>-<12 hex>.md, whose sha256 does not start
    with that hex (an edit after archiving), or whose title's version is not N (v0: none)."""
    wrong = []
    for path in sorted(Path(protocol_dir).glob("STUDY-v*.md")):
        match = ARCHIVE_NAME.fullmatch(path.name)
        if not match:
            wrong.append(f"{path.name}: not STUDY-v<N>-<12 hex>.md")
            continue
        if not sha256_of(path).startswith(match[2]):
            wrong.append(f"{path.name}: sha256 {sha256_of(path)[:16]}, edited after archiving")
        title = path.read_text().splitlines()[0]
        numbered = re.search(r"\(v(\d+)\)\s*$", title)
        if (numbered[1] if numbered else "0") != match[1]:
            wrong.append(f"{path.name}: title {title!r} is not v{match[1]}")
    return wrong


def test_every_cited_digest_resolves_to_its_bytes():
    cited = cited_digests(DOCS)
    # the reports cite at least the live protocol (every report regenerates under it), the v3
    # rules their re-judged sections compare against, and docs/tiny's own, older one
    assert len(cited) >= 3 and any(d.startswith(STUDY_SHA256[:16]) for d in cited)
    unresolved = {d: files for d, files in cited.items() if protocol_file(d) is None}
    assert unresolved == {}
    for digest in cited:
        digest_of_file = sha256_of(protocol_file(digest))
        assert digest_of_file == digest if len(digest) == 64 else digest_of_file.startswith(digest)


def test_archived_versions_are_unedited():
    assert sorted(PROTOCOL_DIR.glob("STUDY-v*.md"))
    assert archive_problems(PROTOCOL_DIR) == []


def test_an_unknown_or_malformed_digest_resolves_to_nothing():
    assert protocol_file("0123456789abcdef" * 4) is None
    assert protocol_file("not a digest") is None
    assert protocol_file(sha256_of(STUDY_PATH)[:8]) is None  # shorter than a file name's hex
    assert protocol_file("") is None


def test_the_live_protocol_resolves_until_it_is_archived(tmp_path):
    live = tmp_path / "STUDY.md"
    live.write_bytes(b"# STUDY.md: the pre-registration (v9)\n")
    digest = sha256_of(live)
    assert protocol_file(digest, protocol_dir=tmp_path / "protocol", live=live) == live
    assert protocol_file(digest[:16], protocol_dir=tmp_path / "protocol", live=live) == live


def test_the_checks_fail_on_an_edited_archive(tmp_path):
    """The checkers themselves must be able to fail: one byte added to an archived copy."""
    original = sorted(PROTOCOL_DIR.glob("STUDY-v*.md"))[0]
    copy = tmp_path / original.name
    copy.write_bytes(original.read_bytes() + b"\n")
    digest = sha256_of(original)
    assert protocol_file(digest, protocol_dir=tmp_path, live=tmp_path / "none.md") is None
    assert len(archive_problems(tmp_path)) == 1
    (tmp_path / "STUDY-v4-nothex.md").write_text("# STUDY.md: the pre-registration (v4)\n")
    assert len(archive_problems(tmp_path)) == 2


def test_citations_are_read_from_json_and_report_prefixes(tmp_path):
    docs = tmp_path / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "protocol").mkdir()
    full = "ab" * 32
    (docs / "a" / "analysis.json").write_text(f'{{"schema": 4, "study_sha256": "{full}"}}')
    (docs / "a" / "report.md").write_text(f"Analysed under docs/STUDY.md sha256 `{full[:16]}`.")
    (docs / "a" / "report-v1.md").write_text("under docs/STUDY.md\nsha256 `` (lost).")
    (docs / "protocol" / "README.md").write_text(f"docs/STUDY.md sha256 `{'cd' * 32}`")
    assert cited_digests(docs) == {
        "": ["docs/a/report-v1.md"],  # a malformed citation is kept, so it fails to resolve
        full: ["docs/a/analysis.json", "docs/a/report.md"],
    }
