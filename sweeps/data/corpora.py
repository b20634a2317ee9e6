"""Corpora -> text documents, as (train_docs, val_docs) that never share a document.

`builtin` and `file` hold out their last val_fraction of documents; `tinystories` uses the
dataset's own train and validation splits; `shakespeare` (sweeps/data/shakespeare.py) holds
out a fixed list of whole plays. `describe` names the source for the cache: its key changes
whenever the documents could.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import socket
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data import shakespeare
from sweeps.data.builtin import GENERATOR_VERSION, generate_stories

TINYSTORIES_REPO = "roneneldan/TinyStories"
TXT_SEPARATOR = "<|endoftext|>"  # TinyStories' .txt files put this on a line between stories
FILE_TYPES = (".txt", ".jsonl", ".parquet")
HUB_LAYOUT = "DIR/data/train-*.parquet and DIR/data/validation-*.parquet with a text column"
# One connection to the hub (or the proxy that reaches it) within this many seconds, else the
# load runs offline: from the datasets cache, or failing at once, instead of the hub client's
# retries (about 24 s with no network).
HUB_PROBE_TIMEOUT_S = 3.0
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")  # what the hub client reads
TRUE_VALUES = {"1", "on", "yes", "true"}


class HubUnreachable(DataError):
    """The hub could not be reached: sweeps.data.cache.load_tokens names the command that
    prepares the split the run needs (with its tokenizer) once the network is back."""

    def __init__(self, repo: str, prepare: str = "qkmlx data prepare --corpus tinystories"):
        self.repo = repo
        super().__init__(
            f"cannot reach the Hugging Face hub for {repo}: run `{prepare}` once "
            f"with network access, or pass --set data.path=DIR with a local copy "
            f"({HUB_LAYOUT})"
        )


def load_documents(data: DataConfig) -> tuple[list[str], list[str]]:
    if data.corpus == "builtin":
        stories = generate_stories(data.builtin_stories, data.builtin_seed)
        return _hold_out(stories, data.val_fraction, "the builtin corpus")
    if data.corpus == "file":
        path = _existing_file(data.path)
        return _hold_out(_read_file(path), data.val_fraction, str(path))
    if data.corpus == "shakespeare":
        return _disjoint(*shakespeare.load_documents(), "the shakespeare corpus")
    return _load_tinystories(data.path)


def describe(data: DataConfig) -> dict:
    """The source as recorded in the manifest; `key` names its cache directory."""
    if data.corpus == "builtin":
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
    if data.corpus == "file":
        path = _existing_file(data.path)
        stat = path.stat()
        signature = _digest(f"{path}|{stat.st_size}|{stat.st_mtime_ns}")
        return {
            "corpus": "file",
            "path": str(path),
            "bytes": stat.st_size,
            "modified": _iso(stat.st_mtime),
            "val_fraction": data.val_fraction,
            "key": f"file-{_slug(path.stem)}-{signature}-v{data.val_fraction:g}",
        }
    if data.corpus == "shakespeare":
        return {
            "corpus": "shakespeare",
            "package": shakespeare.PACKAGE,
            "converter_version": shakespeare.CONVERTER_VERSION,
            "held_out": list(shakespeare.HELD_OUT),
            "key": f"shakespeare-c{shakespeare.CONVERTER_VERSION}-{shakespeare.signature()}",
        }
    if not data.path:
        return {
            "corpus": "tinystories",
            "repo": TINYSTORIES_REPO,
            "key": f"tinystories-{_slug(TINYSTORIES_REPO)}",
        }
    root = _existing_dir(data.path)
    # Every file's size and mtime: replacing a local copy's contents changes the key.
    stats = sorted(
        f"{p.relative_to(root)}|{p.stat().st_size}|{p.stat().st_mtime_ns}"
        for p in root.rglob("*")
        if p.is_file()
    )
    return {
        "corpus": "tinystories",
        "path": str(root),
        "key": f"tinystories-{_slug(root.name)}-{_digest(str(root) + ''.join(stats))}",
    }


def _hold_out(docs: list[str], val_fraction: float, source: str) -> tuple[list, list]:
    """The last val_fraction of the documents (at least one) become the validation split."""
    n_val = max(1, round(len(docs) * val_fraction))
    if len(docs) - n_val < 1:
        raise DataError(
            f"{source} has {len(docs)} document(s), too few to hold some out for "
            f"validation; give it more stories (in a .txt, separate them with a "
            f"line {TXT_SEPARATOR})"
        )
    return _disjoint(docs[:-n_val], docs[-n_val:], source)


def _disjoint(train: list[str], val: list[str], source: str) -> tuple[list, list]:
    """Drop validation documents that also occur in train: a duplicate would leak."""
    seen = set(train)
    val = [doc for doc in val if doc not in seen]
    if not val:
        raise DataError(
            f"every validation document of {source} also occurs in its train "
            f"split; use a corpus with more distinct documents"
        )
    return train, val


def _read_file(path: Path) -> list[str]:
    if path.suffix == ".txt":
        try:
            texts = path.read_text(encoding="utf-8").split(TXT_SEPARATOR)
        except UnicodeDecodeError as e:
            raise DataError(
                f"{path} is not UTF-8 text ({e.reason} at byte {e.start}); convert it to UTF-8"
            ) from None
    elif path.suffix == ".jsonl":
        texts = _read_jsonl(path)
    else:
        texts = _read_parquet(path)
    docs = _clean(texts)
    if not docs:
        raise DataError(f"{path} holds no text; give it at least two stories")
    return docs


def _read_jsonl(path: Path) -> list[str]:
    try:
        return _parse_jsonl(path)
    except UnicodeDecodeError as e:
        raise DataError(
            f"{path} is not UTF-8 text ({e.reason} at byte {e.start}); convert it to UTF-8"
        ) from None


def _parse_jsonl(path: Path) -> list[str]:
    texts = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(
                    f"{path}:{number} is not valid JSON ({e.msg}); write one JSON object per line"
                ) from None
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise DataError(
                    f"{path}:{number} has no string 'text' field; write each line "
                    f'as {{"text": "..."}}'
                )
            texts.append(row["text"])
    return texts


def _read_parquet(path: Path) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as e:  # pyarrow raises several types for a file that is not parquet
        raise DataError(f"{path} is not a readable parquet file ({type(e).__name__})") from None
    if "text" not in schema.names:
        raise DataError(
            f"{path} has no 'text' column (columns: {', '.join(schema.names)}); "
            f"rename the story column to text"
        )
    kind = schema.field("text").type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise DataError(
            f"{path}: column 'text' holds {kind}, not strings; store the stories as text"
        )
    return pq.read_table(path, columns=["text"]).column("text").to_pylist()


def _load_tinystories(path: str) -> tuple[list[str], list[str]]:
    """The dataset's train and validation splits, from the hub or a local copy (data.path).
    From the hub: offline (the datasets cache, or HubUnreachable at once) when the user set
    HF_HUB_OFFLINE, or when hub_reachable finds no way to the hub (HF_HUB_OFFLINE=0 skips it)."""
    repo = str(_existing_dir(path)) if path else TINYSTORIES_REPO
    import datasets

    setting = offline_setting()
    offline = not path and (setting or (setting is None and not hub_reachable()))
    try:
        with offline_mode() if offline else contextlib.nullcontext():
            splits = [datasets.load_dataset(repo, split=s) for s in ("train", "validation")]
    except ConnectionError:
        raise HubUnreachable(repo) from None
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as e:
        if offline:  # offline, and the datasets cache does not hold it
            raise HubUnreachable(repo) from None
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"cannot load tinystories from {repo} ({reason}); a local copy needs {HUB_LAYOUT}"
        ) from None
    for split in splits:
        if "text" not in split.column_names:
            raise DataError(
                f"tinystories at {repo} has no 'text' column (columns: "
                f"{', '.join(split.column_names)}); a local copy needs {HUB_LAYOUT}"
            )
    train, val = (_clean(split["text"]) for split in splits)
    if not train or not val:
        raise DataError(f"tinystories at {repo} has an empty train or validation split")
    return _disjoint(train, val, repo)


def offline_setting() -> bool | None:
    """The user's offline setting (HF_HUB_OFFLINE, or HF_DATASETS_OFFLINE): True, False when
    set to anything else (0: online, no probe), None when neither is set."""
    values = [os.environ[k].strip().lower() for k in OFFLINE_VARS if os.environ.get(k)]
    return any(v in TRUE_VALUES for v in values) if values else None


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether one TCP connection to the hub (HF_ENDPOINT, default huggingface.co), or to the
    proxy the environment routes it through, opens within timeout seconds."""
    endpoint = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    scheme, host = endpoint.scheme or "https", endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = via.hostname or host, via.port or 8080
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def offline_mode():
    """The hub client offline while the block runs: the environment (read when datasets and
    huggingface_hub are first imported) and the flags of those already imported."""
    saved = {k: os.environ.get(k) for k in OFFLINE_VARS}
    os.environ.update({k: "1" for k in OFFLINE_VARS})
    flags = [
        (module, name)
        for module in (
            sys.modules.get("huggingface_hub.constants"),
            sys.modules.get("datasets.config"),
        )
        if module is not None
        for name in OFFLINE_VARS
        if isinstance(getattr(module, name, None), bool)
    ]
    before = [getattr(module, name) for module, name in flags]
    for module, name in flags:
        setattr(module, name, True)
    try:
        yield
    finally:
        for (module, name), value in zip(flags, before):
            setattr(module, name, value)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _clean(texts) -> list[str]:
    """Stripped documents, empty ones dropped (a trailing separator leaves one behind)."""
    return [t.strip() for t in texts if t and t.strip()]


def _existing_file(path: str) -> Path:
    p = Path(path).expanduser().resolve()
    if p.suffix not in FILE_TYPES:
        raise DataError(
            f"data.path {path} has an unknown extension '{p.suffix}'; use a "
            f"{', '.join(FILE_TYPES)} file"
        )
    if p.is_dir():
        raise DataError(
            f"data file {p} is a directory; give data.path a "
            f"{', '.join(FILE_TYPES)} file (--path or --set data.path=FILE)"
        )
    if not p.is_file():
        raise DataError(
            f"data file {p} does not exist; check data.path (--path or --set data.path=FILE)"
        )
    if p.stat().st_size == 0:
        raise DataError(f"data file {p} is empty; give it at least two stories")
    return p


def _existing_dir(path: str) -> Path:
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise DataError(
            f"tinystories data.path {p} is not a directory; pass a local copy of "
            f"the hub dataset ({HUB_LAYOUT})"
        )
    return p


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:40] or "x"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).isoformat(
        timespec="seconds"
    )
