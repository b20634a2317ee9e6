"""Token splits for a DataConfig, tokenized once per (corpus, tokenizer) and cached.

Cache: <cache_dir>/<corpus key>/<tokenizer key>/ holds train.bin and val.bin (flat uint16),
vocab_map.npy for gpt2-compact, and manifest.json, written last: a directory without a
valid manifest is not prepared. Every load checks each file's size and sha256 against the
manifest, so a damaged cache is rebuilt instead of silently training on bad tokens.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import hashlib
import io
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.core.files import write_atomic, write_json_atomic
from sweeps.data.baselines import split_baselines
from sweeps.data.corpora import HubUnreachable, corpus, describe, load_documents
from sweeps.data.tokenizers import SEPARATORS, apply_compact, compact_vocab, encode_documents

DTYPE = np.uint16  # every vocabulary here fits: bytes 256, gpt2 50257, compact K + 1
MANIFEST = "manifest.json"
SPLITS = ("train", "val")
VOCAB_MAP = "vocab_map.npy"  # gpt2-compact: the gpt2 id of each compact id


@dataclass(frozen=True)
class TokenSplits:
    train: np.ndarray  # flat token ids, read-only (memory-mapped, shared between processes)
    val: np.ndarray
    vocab_size: int
    manifest: dict


def default_cache_dir() -> Path:
    return Path(os.environ.get("QKNORM_DATA_DIR") or "~/.cache/qknorm").expanduser()


def cache_path(data: DataConfig, cache_dir: str | Path | None = None) -> Path:
    tokenizer = data.tokenizer
    if tokenizer == "gpt2-compact":
        tokenizer += f"-{data.compact_vocab}"
    return Path(cache_dir or default_cache_dir()) / describe(data)["key"] / tokenizer


def load_tokens(
    data: DataConfig,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    program: str = "qkmlx",
) -> TokenSplits:
    """The corpus's token splits: prepared on first use, verified on every later one.
    program: the command a refusal tells to run (the caller's, qkmlx or qktorch)."""
    data.validate()
    directory = cache_path(data, cache_dir)
    manifest, _ = _verify(directory, data)
    if manifest is None:
        directory.mkdir(parents=True, exist_ok=True)
        with _locked(directory):
            # Checked again under the lock: another process may have just prepared it. A
            # problem found outside the lock may have been that process's build in flight.
            manifest, problem = _verify(directory, data)
            if problem:
                print(
                    f"warning: damaged data cache {directory} ({problem}); rebuilding",
                    file=sys.stderr,
                )
            if manifest is None:
                try:
                    manifest = _build(directory, data, cache_dir, progress)
                except HubUnreachable as e:  # name the split this run needs (its tokenizer)
                    raise HubUnreachable(e.repo, prepare_command(data, program)) from None
    if "baselines" not in manifest:  # a cache prepared before baselines were recorded
        with _locked(directory):
            manifest = _add_baselines(directory)
    return _open(directory, manifest)


def offline_tokens(data: DataConfig) -> TokenSplits | None:
    """The corpus's token splits where no network is needed: prepared now if need be, except a
    corpus that may not be prepared in passing (tinystories: a download, or a long preparation
    of a local copy), which only a prepared cache holds; None then."""
    if not corpus(data.corpus).prepare_in_passing:
        try:
            read_manifest(data)
        except DataError:
            return None
    return load_tokens(data)


def read_manifest(
    data: DataConfig, cache_dir: str | Path | None = None, program: str = "qkmlx"
) -> dict:
    data.validate()
    directory = cache_path(data, cache_dir)
    manifest, problem = _verify(directory, data)
    if manifest is None:
        state = f"is damaged ({problem})" if problem else "is not prepared yet"
        raise DataError(
            f"the {data.corpus} corpus with tokenizer {data.tokenizer} {state}: "
            f"run `{prepare_command(data, program)}`"
        )
    return manifest


def is_prepared(data: DataConfig, cache_dir: str | Path | None = None) -> bool:
    """Whether the split is in the cache, checked cheaply (the manifest and every file's size;
    load_tokens verifies the checksums): what `sweep --dry-run` reports before any work."""
    directory = cache_path(data, cache_dir)
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        return manifest["vocab_size"] == data.vocab_size and all(
            (directory / name).stat().st_size == f["bytes"] for name, f in manifest["files"].items()
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _build(directory: Path, data: DataConfig, cache_dir, progress: bool) -> dict:
    (directory / MANIFEST).unlink(missing_ok=True)  # not prepared until every file is in place
    for stale in directory.glob(".*.tmp"):  # left by a killed writer; we hold the lock
        stale.unlink()
    files: dict[str, bytes] = {}
    if data.tokenizer == "gpt2-compact":
        # Derived from the gpt2 cache (prepared first if needed): tokenizing runs only once.
        full = load_tokens(dataclasses.replace(data, tokenizer="gpt2"), cache_dir, progress)
        kept = compact_vocab(full.train, data.compact_vocab)
        arrays = {s: apply_compact(getattr(full, s), kept) for s in SPLITS}
        documents = full.manifest["documents"]
        separator = int(np.searchsorted(kept, SEPARATORS["gpt2"]))
        buffer = io.BytesIO()
        np.save(buffer, kept.astype(np.uint16))
        files[VOCAB_MAP] = buffer.getvalue()
    else:
        docs = dict(zip(SPLITS, load_documents(data)))
        arrays = {
            s: encode_documents(
                docs[s], data.tokenizer, progress, f"tokenizing {s} ({data.tokenizer})"
            )
            for s in SPLITS
        }
        documents = {s: len(docs[s]) for s in SPLITS}
        separator = SEPARATORS[data.tokenizer]
    largest = max(int(a.max()) for a in arrays.values())
    if largest >= data.vocab_size:
        raise DataError(
            f"token id {largest} does not fit the vocabulary of {data.vocab_size} "
            f"ids of tokenizer {data.tokenizer}"
        )
    files.update({f"{s}.bin": arrays[s].astype(DTYPE, copy=False).tobytes() for s in SPLITS})
    for name, blob in files.items():
        write_atomic(directory / name, blob)
    manifest = {
        "source": describe(data),
        "tokenizer": data.tokenizer,
        "vocab_size": data.vocab_size,
        "separator_id": separator,
        "dtype": np.dtype(DTYPE).name,
        "tokens": {s: int(arrays[s].size) for s in SPLITS},
        "documents": documents,
        "files": {
            name: {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
            for name, blob in files.items()
        },
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if data.tokenizer == "gpt2-compact":
        manifest["unknown_id"] = data.compact_vocab
    manifest["baselines"] = _baselines(arrays["train"], data.vocab_size)
    write_json_atomic(directory / MANIFEST, manifest)
    return manifest


def _baselines(train: np.ndarray, vocab_size: int) -> dict:
    """The unigram and bigram losses of the train split (sweeps.data.baselines)."""
    return {**split_baselines(train, vocab_size), "split": "train", "units": "nats/token"}


def _add_baselines(directory: Path) -> dict:
    manifest = json.loads((directory / MANIFEST).read_text())  # reread under the lock
    if "baselines" not in manifest:
        train = np.memmap(directory / "train.bin", dtype=DTYPE, mode="r")
        manifest["baselines"] = _baselines(train, manifest["vocab_size"])
        write_json_atomic(directory / MANIFEST, manifest)
    return manifest


def _verify(directory: Path, data: DataConfig) -> tuple[dict | None, str | None]:
    """(manifest, None) for a sound cache, (None, None) for none, (None, problem) if damaged."""
    path = directory / MANIFEST
    if not path.exists():
        return None, None
    try:
        manifest = json.loads(path.read_text())
        files = manifest["files"]
        if manifest["vocab_size"] != data.vocab_size:
            return None, f"vocab_size {manifest['vocab_size']} instead of {data.vocab_size}"
        if not {f"{s}.bin" for s in SPLITS} <= set(files):
            return None, "the manifest does not list train.bin and val.bin"
        for name, expected in sorted(files.items()):
            actual = directory / name
            if not actual.is_file():
                return None, f"{name} is missing"
            if actual.stat().st_size != expected["bytes"]:
                return None, (
                    f"{name} has {actual.stat().st_size} bytes, expected {expected['bytes']}"
                )
            if _sha256(actual) != expected["sha256"]:
                return None, f"{name} fails its sha256 check"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"unreadable manifest ({type(e).__name__}: {e})"
    return manifest, None


def _open(directory: Path, manifest: dict) -> TokenSplits:
    arrays = {
        s: np.asarray(np.memmap(directory / f"{s}.bin", dtype=DTYPE, mode="r")) for s in SPLITS
    }
    return TokenSplits(arrays["train"], arrays["val"], manifest["vocab_size"], manifest)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(directory: Path):
    """An exclusive flock: two processes preparing one cache take turns instead of racing."""
    with open(directory / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def prepare_command(data: DataConfig, program: str = "qkmlx") -> str:
    """The exact command that prepares this split (corpus, tokenizer and any non-default
    data field); either program prepares the same cache."""
    parts = [f"{program} data prepare", f"--corpus {data.corpus}", f"--tokenizer {data.tokenizer}"]
    if data.path:
        parts.append(f"--path {shlex.quote(data.path)}")
    default = DataConfig()
    for f in dataclasses.fields(DataConfig):
        value = getattr(data, f.name)
        if f.name not in ("corpus", "tokenizer", "path") and value != getattr(default, f.name):
            parts.append(f"--set data.{f.name}={value}")
    return " ".join(parts)
