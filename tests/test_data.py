"""The data pipeline: corpora, tokenizers, the verified cache, deterministic batches, the CLI."""

import json
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.config import DataConfig
from sweeps.core.errors import DataError
from sweeps.data import cache as data_mod
from sweeps.data import (
    cache_path,
    corpora,
    get_batch,
    load_tokens,
    read_manifest,
    tokenizers,
    val_batches,
)
from sweeps.data.builtin import GENERATOR_VERSION
from sweeps.data.corpora import describe, load_documents
from sweeps.data.tokenizers import apply_compact, compact_vocab, encode_documents, gpt2_encoding

SMALL = DataConfig(builtin_stories=200)
STORIES = [f"Story {i}: Once upon a time, a cat named Tom{i} found a ball." for i in range(20)]


@pytest.fixture
def small(tmp_path):
    return load_tokens(SMALL, cache_dir=tmp_path)


# -- batches ---------------------------------------------------------------------------------


def test_batch_is_a_pure_function_of_seed_and_step():
    tokens = np.arange(5000, dtype=np.uint16)
    x, y = get_batch(tokens, seed=1, step=7, batch_size=4, block_size=16)
    assert x.shape == y.shape == (4, 16) and x.dtype == y.dtype == np.int32
    again = get_batch(tokens, seed=1, step=7, batch_size=4, block_size=16)
    assert np.array_equal(x, again[0]) and np.array_equal(y, again[1])
    assert not np.array_equal(x, get_batch(tokens, 2, 7, 4, 16)[0])
    assert not np.array_equal(x, get_batch(tokens, 1, 8, 4, 16)[0])
    assert np.array_equal(y, x + 1)  # tokens are consecutive: y is x shifted by one


def test_batch_windows_reach_the_last_token():
    tokens = np.arange(18, dtype=np.uint16)  # exactly two possible windows of 16 + 1
    seen = {int(get_batch(tokens, 0, step, 4, 16)[1][0, -1]) for step in range(50)}
    assert seen == {16, 17}


def test_split_shorter_than_a_window_is_an_error():
    with pytest.raises(DataError, match="block_size"):
        get_batch(np.arange(16, dtype=np.uint16), 0, 0, 2, 16)
    with pytest.raises(DataError, match="block_size"):
        val_batches(np.arange(10, dtype=np.uint16), 1, 2, 16)


def test_val_batches_are_fixed_evenly_spaced_and_from_val_only():
    val = np.arange(10_000, 12_000, dtype=np.uint16)
    batches = val_batches(val, n_batches=3, batch_size=4, block_size=32)
    assert len(batches) == 3
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(batches, val_batches(val, 3, 4, 32)))
    xs = np.concatenate([x for x, _ in batches])
    ys = np.concatenate([y for _, y in batches])
    assert xs.min() >= 10_000 and ys.max() < 12_000
    assert xs[0, 0] == 10_000 and ys[-1, -1] == 11_999  # spans the whole split
    assert np.array_equal(ys, xs + 1)
    starts = xs[:, 0].astype(int)
    assert np.ptp(np.diff(starts)) <= 1  # evenly spaced


# -- the builtin corpus through the cache -----------------------------------------------------


def test_builtin_splits_are_disjoint_and_decode_to_the_documents(small):
    train_docs, val_docs = load_documents(SMALL)
    assert len(val_docs) == 10 and len(train_docs) == 190
    assert not set(train_docs) & set(val_docs)
    assert bytes(small.val.astype(np.uint8)).decode() == "\0".join(val_docs) + "\0"
    assert bytes(small.train.astype(np.uint8)).decode() == "\0".join(train_docs) + "\0"
    m = small.manifest
    assert small.vocab_size == m["vocab_size"] == 256 and m["separator_id"] == 0
    assert m["documents"] == {"train": 190, "val": 10}
    assert m["tokens"] == {"train": small.train.size, "val": small.val.size}
    assert m["source"]["synthetic"] is True
    assert small.train.dtype == np.uint16 and not small.train.flags.writeable


def test_cache_layout_and_key(tmp_path, small):
    directory = cache_path(SMALL, tmp_path)
    assert directory.parent.name == f"builtin-g{GENERATOR_VERSION}-n200-s0-v0.05"
    assert directory.name == "bytes"
    assert {p.name for p in directory.iterdir()} >= {"train.bin", "val.bin", "manifest.json"}
    other = DataConfig(builtin_stories=200, builtin_seed=1)
    assert cache_path(other, tmp_path) != directory
    assert (
        cache_path(DataConfig(tokenizer="gpt2-compact", compact_vocab=100), tmp_path).name
        == "gpt2-compact-100"
    )


def test_second_load_reuses_the_cache(tmp_path, small, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(data_mod, "encode_documents", fail)
    again = load_tokens(SMALL, cache_dir=tmp_path)
    assert again.manifest == small.manifest
    assert np.array_equal(again.train, small.train)
    assert read_manifest(SMALL, tmp_path) == small.manifest


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest", "missing"])
def test_damaged_cache_is_reported_and_rebuilt(tmp_path, small, capsys, damage):
    directory = cache_path(SMALL, tmp_path)
    train, val = small.train.copy(), small.val.copy()  # the damage below writes in place
    if damage == "truncate":
        blob = (directory / "train.bin").read_bytes()
        (directory / "train.bin").write_bytes(blob[:-2])
    elif damage == "flip":
        blob = bytearray((directory / "val.bin").read_bytes())
        blob[len(blob) // 2] ^= 1
        (directory / "val.bin").write_bytes(bytes(blob))
    elif damage == "manifest":
        (directory / "manifest.json").write_text('{"files": ')
    else:
        (directory / "val.bin").unlink()
    capsys.readouterr()
    with pytest.raises(DataError, match="damaged"):
        read_manifest(SMALL, tmp_path)
    rebuilt = load_tokens(SMALL, cache_dir=tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: damaged data cache")
    assert np.array_equal(rebuilt.train, train) and np.array_equal(rebuilt.val, val)
    assert rebuilt.manifest["files"] == small.manifest["files"]
    load_tokens(SMALL, cache_dir=tmp_path)
    assert capsys.readouterr().err == ""  # sound again


def test_concurrent_prepares_build_once(tmp_path, monkeypatch):
    calls = []
    encode = data_mod.encode_documents

    def counting(docs, *args, **kwargs):
        calls.append(len(docs))
        return encode(docs, *args, **kwargs)

    monkeypatch.setattr(data_mod, "encode_documents", counting)
    results = [None, None]

    def prepare(i):
        results[i] = load_tokens(SMALL, cache_dir=tmp_path)

    threads = [threading.Thread(target=prepare, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 2  # train and val, tokenized by one of the two
    assert np.array_equal(results[0].train, results[1].train)
    assert results[0].manifest == results[1].manifest


def test_read_manifest_before_prepare_names_the_command(tmp_path):
    with pytest.raises(
        DataError,
        match=r"not prepared yet: run `qkmlx data prepare --corpus "
        r"builtin --tokenizer bytes --set "
        r"data.builtin_stories=200`",
    ):
        read_manifest(SMALL, tmp_path)


# -- tokenizers ----------------------------------------------------------------------------


def test_gpt2_matches_tiktoken_without_network(tmp_path, monkeypatch):
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: pytest.fail("used the network"))
    gpt2_encoding.cache_clear()
    try:
        enc = gpt2_encoding()
        assert enc.encode("Once upon a time") == [7454, 2402, 257, 640]
        assert enc.n_vocab == 50257
        ids = encode_documents(["Once upon a time", "The end."], "gpt2")
        assert ids.tolist() == [7454, 2402, 257, 640, 50256, 464, 886, 13, 50256]
        assert enc.decode(ids[5:8].tolist()) == "The end."
    finally:
        gpt2_encoding.cache_clear()


def test_bytes_tokenizer_rejects_nul():
    assert encode_documents(["ab", "c"], "bytes").tolist() == [97, 98, 0, 99, 0]
    with pytest.raises(DataError, match="NUL"):
        encode_documents(["a\0b"], "bytes")


def test_compact_vocab_keeps_top_k_ties_to_smaller_id_and_the_separator():
    ids = np.array([5] * 4 + [9] * 3 + [7] * 3 + [2] * 3 + [1] * 1 + [50256], dtype=np.uint16)
    kept = compact_vocab(ids, 3)
    assert kept.tolist() == [2, 5, 50256]  # 5 (4x), then 2 (3x, the smaller of 2/7/9) ...
    kept = compact_vocab(ids, 4)  # ... and the separator replaces the least frequent kept id
    assert kept.tolist() == [2, 5, 7, 50256]
    mapped = apply_compact(np.array([5, 9, 2, 50256, 1], dtype=np.uint16), kept)
    assert mapped.tolist() == [1, 4, 0, 3, 4]  # 9 and 1 are unknown: id K = 4


def test_gpt2_compact_cache(tmp_path):
    cfg = DataConfig(builtin_stories=200, tokenizer="gpt2-compact", compact_vocab=60)
    compact = load_tokens(cfg, cache_dir=tmp_path)
    full = load_tokens(DataConfig(builtin_stories=200, tokenizer="gpt2"), cache_dir=tmp_path)
    kept = np.load(cache_path(cfg, tmp_path) / "vocab_map.npy")
    assert compact.vocab_size == 61 and len(kept) == 60
    assert max(compact.train.max(), compact.val.max()) <= 60
    assert kept[compact.manifest["separator_id"]] == 50256
    for split in ("train", "val"):
        c, f = getattr(compact, split), getattr(full, split)
        known = c < 60
        assert np.array_equal(kept[c[known]], f[known])  # kept ids map back exactly
        assert not np.isin(f[~known], kept).any()  # everything else is the unknown id
    counts = np.bincount(full.train, minlength=50257)
    assert counts[kept].min() >= np.delete(counts, kept).max()  # the most frequent ones


# -- corpora -----------------------------------------------------------------------------------


def _write(path, stories):
    if path.suffix == ".txt":
        path.write_text("\n<|endoftext|>\n".join(stories) + "\n<|endoftext|>\n")
    elif path.suffix == ".jsonl":
        path.write_text(
            "".join(json.dumps({"text": s, "id": i}) + "\n" for i, s in enumerate(stories))
        )
    else:
        pq.write_table(pa.table({"text": stories}), path)


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".parquet"])
def test_file_corpus(tmp_path, suffix):
    path = tmp_path / f"stories{suffix}"
    _write(path, STORIES)
    cfg = DataConfig(corpus="file", path=str(path), val_fraction=0.1)
    train, val = load_documents(cfg)
    assert train == STORIES[:18] and val == STORIES[18:]
    splits = load_tokens(cfg, cache_dir=tmp_path / "cache")
    assert splits.manifest["documents"] == {"train": 18, "val": 2}
    assert splits.manifest["source"]["path"] == str(path.resolve())


def test_file_key_follows_the_content(tmp_path):
    path = tmp_path / "stories.txt"
    _write(path, STORIES)
    cfg = DataConfig(corpus="file", path=str(path))
    first = describe(cfg)["key"]
    assert describe(cfg)["key"] == first
    _write(path, STORIES + ["One more story."])
    assert describe(cfg)["key"] != first


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.txt", None, "does not exist"),
        ("empty.txt", "", "is empty"),
        ("blank.txt", "\n<|endoftext|>\n  \n", "holds no text"),
        ("one.txt", "Just one story.", "too few"),
        ("stories.csv", "text\nhello\n", "unknown extension"),
        ("notext.jsonl", '{"story": "hi"}\n', "no string 'text' field"),
        ("broken.jsonl", '{"text": \n', "not valid JSON"),
        ("notext.parquet", "parquet-without-text", "no 'text' column"),
        ("garbage.parquet", "not parquet at all", "not a readable parquet"),
    ],
)
def test_file_corpus_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if content == "parquet-without-text":
        pq.write_table(pa.table({"story": ["a", "b"]}), path)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_tokens(DataConfig(corpus="file", path=str(path)), cache_dir=tmp_path / "cache")


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """datasets writes its own arrow cache: keep it in the test's directory."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_tinystories_from_a_local_copy_in_the_hub_layout(tmp_path, hub_cache, fmt):
    root = tmp_path / "TinyStories"
    (root / "data").mkdir(parents=True)
    train, val = STORIES[:15], STORIES[15:] + [STORIES[0]]  # one duplicate must be dropped
    _write(root / "data" / f"train-00000-of-00001.{fmt}", train)
    _write(root / "data" / f"validation-00000-of-00001.{fmt}", val)
    cfg = DataConfig(corpus="tinystories", path=str(root))
    key = describe(cfg)["key"]
    assert key.startswith("tinystories-TinyStories-")
    assert load_documents(cfg) == (train, STORIES[15:])
    splits = load_tokens(cfg, cache_dir=tmp_path / "cache")
    assert splits.manifest["documents"] == {"train": 15, "val": 5}
    assert describe(cfg)["key"] == key  # loading leaves the local copy untouched


def test_tinystories_errors(tmp_path, hub_cache, monkeypatch):
    with pytest.raises(DataError, match="not a directory"):
        load_documents(DataConfig(corpus="tinystories", path=str(tmp_path / "nope")))
    root = tmp_path / "only-train"
    (root / "data").mkdir(parents=True)
    _write(root / "data" / "train-00000-of-00001.parquet", STORIES)
    with pytest.raises(DataError, match="cannot load tinystories"):
        load_documents(DataConfig(corpus="tinystories", path=str(root)))

    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'roneneldan/TinyStories' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="network access, or pass --set data.path=DIR"):
        load_documents(DataConfig(corpus="tinystories"))
    assert describe(DataConfig(corpus="tinystories"))["key"] == "tinystories-roneneldan-TinyStories"


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_prepare_then_info(tmp_path, monkeypatch):
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path))
    runner = CliRunner()
    cli = make_cli("mlx")
    result = runner.invoke(cli, ["data", "info", "--set", "data.builtin_stories=200"])
    assert result.exit_code == 2 and "not prepared yet" in result.output
    result = runner.invoke(cli, ["data", "prepare", "--set", "data.builtin_stories=200"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["data", "info", "--set", "data.builtin_stories=200"])
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    assert manifest["documents"] == {"train": 190, "val": 10}
    assert (tmp_path / manifest["source"]["key"] / "bytes" / "manifest.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--corpus", "wikipedia"], "unknown data.corpus 'wikipedia'"),
        (["--tokenizer", "sentencepiece"], "unknown data.tokenizer 'sentencepiece'"),
        (["--corpus", "file", "--path", "no/such/file.txt"], "does not exist"),
        (["--corpus", "file"], "data.corpus=file needs a file"),
    ],
)
def test_cli_bad_inputs_are_one_line_errors(tmp_path, monkeypatch, args, message):
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(make_cli("mlx"), ["data", "prepare", *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]


def test_no_backend_imports():
    for module in (data_mod, corpora, tokenizers):
        source = open(module.__file__).read()
        assert "import mlx" not in source and "import torch" not in source


def test_each_corpus_is_one_module_found_by_its_name():
    """sweeps/data/corpora finds a corpus by scanning its modules, and core/config.py reads the
    same names from the file names (core cannot import the data layer): the two lists agree,
    and each module's CORPUS carries its own name, a loader, a description, a banner."""
    from sweeps.core.config import CORPORA as CONFIG_NAMES
    from sweeps.data import corpora

    assert tuple(corpora.CORPORA) == CONFIG_NAMES
    assert {"builtin", "file", "shakespeare", "tinystories"} <= set(CONFIG_NAMES)
    for name, found in corpora.CORPORA.items():
        assert found.name == name and callable(found.load) and callable(found.describe)
        assert found.banner(DataConfig(corpus=name, path="x.txt")).startswith("> **")
    with pytest.raises(DataError, match="unknown corpus 'nowhere'; use one of builtin"):
        corpora.corpus("nowhere")
    # the network: only tinystories from the hub needs it to prepare
    assert not corpora.corpus("tinystories").offline(DataConfig(corpus="tinystories"))
    assert corpora.corpus("tinystories").offline(DataConfig(corpus="tinystories", path="d"))
    assert corpora.corpus("builtin").offline(DataConfig())
    # a quick look prepares builtin on the spot, never a TinyStories copy (long, or a download)
    assert corpora.corpus("builtin").prepare_in_passing
    assert not corpora.corpus("tinystories").prepare_in_passing
