"""The `builtin` corpus: the project's generated stories (sweeps/data/builtin), synthetic and
offline; its last val_fraction of stories is the validation split."""

from __future__ import annotations

from sweeps.core.config import DataConfig
from sweeps.data.builtin import GENERATOR_VERSION, generate_stories
from sweeps.data.corpora._corpus import Corpus
from sweeps.data.corpora._text import hold_out


def load(data: DataConfig) -> tuple[list[str], list[str]]:
    stories = generate_stories(data.builtin_stories, data.builtin_seed)
    return hold_out(stories, data.val_fraction, "the builtin corpus")


def describe(data: DataConfig) -> dict:
    return {
        "corpus": "builtin",
        "synthetic": True,
        "generator_version": GENERATOR_VERSION,
        "stories": data.builtin_stories,
        "seed": data.builtin_seed,
        "val_fraction": data.val_fraction,
        "key": f"builtin-g{GENERATOR_VERSION}-n{data.builtin_stories}-"
        f"s{data.builtin_seed}-v{data.val_fraction:g}",
    }


def banner(data: DataConfig) -> str:
    return (
        "> **SYNTHETIC built-in corpus.** These runs trained on the project's generated "
        "stories, not on TinyStories: they show the harness and the mechanism, not results about "
        "natural text."
    )


CORPUS = Corpus("builtin", load, describe, banner, prepare_note="offline, about a minute")
