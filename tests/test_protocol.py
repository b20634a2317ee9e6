"""Every study digest a report cites resolves to byte-identical protocol text, and the archived
versions in docs/protocol/ are never edited (sweeps/study/protocol.py, docs/protocol/README.md).
Reads files only; no training."""

import hashlib
import json
import re
import shutil
from pathlib import Path

from sweeps.study.protocol import (
    ARCHIVE_NAME,
    PROTOCOL_DIR,
    cited_digests,
    judged_under,
    protocol_file,
    sha256_of,
    version_of,
)
from sweeps.study.stats import STUDY_PATH, STUDY_SHA256, STUDY_VERSION

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
    # the reports cite at least the rules that judged them (kept while a later version moves
    # none of their numbers), the v3 rules their re-judged sections compare against, and
    # docs/tiny's own, older one
    assert len(cited) >= 3
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


# -- a document's stamp: the rules that first judged its numbers keep naming them -----------
def _archive(tmp_path, version: int, body: str):
    """A protocol dir holding one archived version; returns (dir, its digest)."""
    folder = tmp_path / "protocol"
    folder.mkdir(exist_ok=True)
    text = f"# STUDY.md: the pre-registration (v{version})\n{body}\n"
    digest = hashlib.sha256(text.encode()).hexdigest()
    (folder / f"STUDY-v{version}-{digest[:12]}.md").write_text(text)
    return folder, digest


def test_the_version_a_digest_names_comes_from_its_archive_or_the_live_title(tmp_path):
    folder, digest = _archive(tmp_path, 7, "old rules")
    live = tmp_path / "STUDY.md"
    live.write_text("# STUDY.md: the pre-registration (v8)\nnew rules\n")
    where = {"protocol_dir": folder, "live": live}
    assert version_of(digest, **where) == "v7"
    assert version_of(sha256_of(live), **where) == "v8"
    assert version_of("ab" * 32, **where) is None
    assert version_of(STUDY_SHA256) == STUDY_VERSION  # the live rules are archived too


def test_an_unchanged_document_keeps_the_stamp_of_the_rules_that_first_judged_it(tmp_path):
    folder, old = _archive(tmp_path, 7, "old rules")
    where = {"protocol_dir": folder, "live": tmp_path / "none.md"}
    new = {"study_sha256": "f" * 64, "study_version": "v8", "slope": -0.031, "verdict": "ruled out"}
    earlier = {"study_sha256": old, "slope": -0.031, "verdict": "ruled out"}  # before versions
    kept = judged_under(new, earlier, **where)
    assert kept == {**new, "study_sha256": old, "study_version": "v7"}
    # a number that moved, a key added, a verdict changed: the live rules judged it
    for moved in ({"slope": -0.032}, {"extra": 1}, {"verdict": "inconclusive"}):
        assert judged_under({**new, **moved}, earlier, **where) == {**new, **moved}
    # an earlier digest no archive holds, or one that says another version: the live stamp
    assert judged_under(new, {**earlier, "study_sha256": "e" * 64}, **where) == new
    assert judged_under(new, {**earlier, "study_version": "v6"}, **where) == new
    assert judged_under(new, None, **where) == new and judged_under(new, [], **where) == new


def test_a_new_rules_version_leaves_a_report_it_does_not_change_as_it_was(tmp_path, monkeypatch):
    """docs/cpu-control regenerated as if a later protocol were live: nothing it judges moved, so
    its analysis.json and report.md still name the rules that wrote them; with one committed
    number edited, the regeneration is the live rules' and says so."""
    from figures import charts
    from figures.report.assemble import make_report
    from sweeps.analysis import compute

    monkeypatch.setattr(charts, "save", lambda *args, **kwargs: None)
    committed = json.loads((DOCS / "cpu-control" / "analysis.json").read_text())
    later = sorted(PROTOCOL_DIR.glob("STUDY-v*.md"), key=lambda p: p.stat().st_size)[0]
    later_digest, later_version = sha256_of(later), "v" + ARCHIVE_NAME.fullmatch(later.name)[1]
    monkeypatch.setattr(compute, "STUDY_SHA256", later_digest)
    monkeypatch.setattr(compute, "STUDY_VERSION", later_version)
    report = tmp_path / "cpu-control"
    shutil.copytree(DOCS / "cpu-control", report)
    make_report(None, None, formats=("svg",), from_report=report)
    again = json.loads((report / "analysis.json").read_text())
    assert again["study_sha256"] == committed["study_sha256"] != later_digest
    assert f"sha256 `{committed['study_sha256'][:16]}`" in (report / "report.md").read_text()
    edited = {**committed, "sweep": "edited"}
    (report / "analysis.json").write_text(json.dumps(edited))
    make_report(None, None, formats=("svg",), from_report=report)
    again = json.loads((report / "analysis.json").read_text())
    assert (again["study_sha256"], again["study_version"]) == (later_digest, later_version)
    assert f"sha256 `{later_digest[:16]}` ({later_version})" in (report / "report.md").read_text()
