"""The `file` corpus: a local .txt (stories separated by a line <|endoftext|>), .jsonl (one
{"text": ...} object a line) or .parquet (a text column) at data.path; its last val_fraction of
documents is the validation split."""

from __future__ import annotations

import json
from pathlib import Path

from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data.corpora._corpus import Corpus
from sweeps.data.corpora._text import TXT_SEPARATOR, clean, digest, hold_out, iso, slug

FILE_TYPES = (".txt", ".jsonl", ".parquet")


def load(data: DataConfig) -> tuple[list[str], list[str]]:
    path = _existing_file(data.path)
    return hold_out(_read_file(path), data.val_fraction, str(path))


def describe(data: DataConfig) -> dict:
    path = _existing_file(data.path)
    stat = path.stat()
    signature = digest(f"{path}|{stat.st_size}|{stat.st_mtime_ns}")
    return {
        "corpus": "file",
        "path": str(path),
        "bytes": stat.st_size,
        "modified": iso(stat.st_mtime),
        "val_fraction": data.val_fraction,
        "key": f"file-{slug(path.stem)}-{signature}-v{data.val_fraction:g}",
    }


def banner(data: DataConfig) -> str:
    return f"> **Corpus: a local text file** ({data.path}); what the findings say depends on it."


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
    docs = clean(texts)
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


CORPUS = Corpus("file", load, describe, banner)
