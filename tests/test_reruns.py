"""benchmarks/reruns.py: the same run ids trained twice, compared run by run, on tables with
a known answer."""

import json

import pandas as pd
import pytest

from benchmarks import reruns

L0, BIGRAM = 5.5, 2.34


def run(arm, lr, seed, status, final, cpu="CPU A", prov=None):
    """prov: the run's whole provenance (default: a host record naming only `cpu`)."""
    return {
        "run_id": f"torch-{arm}-lr{lr}-s{seed}",
        "arm": arm,
        "lr": lr,
        "seed": seed,
        "status": status,
        "init_loss": L0,
        "final_val_loss": final,
        "bigram_loss": BIGRAM,
        "provenance_json": json.dumps({"host": {"cpu": cpu}} if prov is None else prov),
    }


@pytest.fixture
def tables(tmp_path):
    a = [
        run("off", 0.1, 0, "ok", 1.30),
        run("off", 0.1, 1, "ok", 1.50),
        run("off", 1.0, 0, "diverged", float("nan")),
        run("off", 1.0, 1, "unstable", 2.20),  # below the bigram baseline: not stuck
        run("on", 0.1, 0, "ok", 1.20),
        run("on", 0.1, 1, "running", float("nan")),  # unfinished: pairs with nothing
    ]
    b = [
        run("off", 0.1, 0, "ok", 1.40, "CPU B"),
        run("off", 0.1, 1, "ok", 1.45, "CPU B"),
        run("off", 1.0, 0, "unstable", 3.00, "CPU B"),  # fate changes, still stuck
        run("off", 1.0, 1, "unstable", 2.50, "CPU B"),  # now stuck
        run("on", 0.1, 0, "ok", 1.20, "CPU B"),
        run("on", 0.1, 1, "ok", 1.25, "CPU B"),
        run("on", 0.3, 0, "ok", 1.25, "CPU B"),  # only in B
    ]
    pd.DataFrame(a).to_parquet(tmp_path / "a.parquet")
    (tmp_path / "b").mkdir()
    pd.DataFrame(b).to_parquet(tmp_path / "b" / "runs.parquet")
    return tmp_path


def test_pairs_by_run_id_and_measures_fate_and_effective_loss_drift(tables):
    a, b = reruns.load_runs(tables / "a.parquet"), reruns.load_runs(tables / "b")
    table = reruns.drift(a, b).set_index(["arm", "lr"])
    assert list(table.index) == [("off", 1.0), ("off", 0.1), ("on", 0.1)]  # highest LR first
    off_top = table.loc[("off", 1.0)]
    # a diverged run counts at L0: |5.5 - 3.0| and |2.2 - 2.5|
    assert off_top.pairs == 2 and off_top.max_gap == pytest.approx(2.5)
    assert off_top.median_gap == pytest.approx((2.5 + 0.3) / 2)
    assert off_top.same_fate == 1 and off_top.same_stuck == 1
    off_mid = table.loc[("off", 0.1)]
    assert off_mid.same_fate == 2 and off_mid.max_gap == pytest.approx(0.1)
    assert off_mid.seed_sd == pytest.approx(pd.Series([1.30, 1.50]).std())
    on = table.loc[("on", 0.1)]  # the unfinished run of A pairs with nothing
    assert on.pairs == 1 and on.max_gap == 0.0 and pd.isna(on.seed_sd)
    # equal bit for bit: on's one pair; a pair diverged in A is not "finished" on both sides
    assert (on.identical, on.finished) == (1, 1)
    assert (off_top.identical, off_top.finished) == (0, 1)


def test_the_report_names_hosts_counts_and_the_command(tables, capsys):
    out = tables / "drift.md"
    reruns.main([str(tables / "a.parquet"), str(tables / "b"), "--out", str(out)])
    text = out.read_text()
    assert text == capsys.readouterr().out.rstrip("\n") + "\n"
    assert "5 runs with the same run id" in text and "Hosts: A CPU A; B CPU B" in text
    assert "Fate kept: 4 of 5" in text and "kept: 4 of 5." in text
    assert "| off | 1 | 2 | 1 | 1 | 0 of 1 | 1.400 | 2.500 | 2.333 |" in text
    assert "Final loss equal bit for bit: 1 of the 4 pairs that trained to the end" in text
    # the other 3: |2.2 - 2.5|, |1.3 - 1.4|, |1.5 - 1.45|
    assert "; the other 3 differ by a median 0.100 nats, at most 0.300." in text
    # the 4 pairs finished on both sides ran on other CPUs: none expected identical
    assert "and kernels): not expected (cpu differs): 1 of 4 equal.\n" in text
    assert f"Made by `python benchmarks/reruns.py {tables / 'a.parquet'} " in text


def test_bad_input_is_one_line_exit_2_and_writes_nothing(tables, capsys):
    out = tables / "drift.md"
    with pytest.raises(SystemExit) as stop:
        reruns.main([str(tables / "absent"), str(tables / "b"), "--out", str(out)])
    assert stop.value.code == 2 and not out.exists()
    assert capsys.readouterr().err.count("\n") == 1
    lone = pd.DataFrame([run("on", 0.5, 9, "ok", 1.0)])
    lone.to_parquet(tables / "lone.parquet")
    with pytest.raises(SystemExit) as stop:
        reruns.main([str(tables / "a.parquet"), str(tables / "lone.parquet"), "--out", str(out)])
    assert stop.value.code == 2 and not out.exists()
    assert "share no finished run id" in capsys.readouterr().err


def grid_value(value, bracket=None, kind=""):
    return {"value": value, "bracket": bracket, "kind": kind, "interpolated": False}


def rung(best_lr, threshold, sensitivity):
    crit = {"median": grid_value(0.075)}
    by = {"diverged": {"median": grid_value(0.75)}, "degraded": {"median": grid_value(0.0178)}}
    arm = {"best_lr": best_lr, "eta_crit": crit, "eta_crit_by_definition": by}
    return {
        "arms": {"off": {**arm, "sensitivity": {"mean": sensitivity}}, "on": arm},
        "comparisons": {
            "off vs on": {
                "threshold": grid_value(0.075, threshold),
                "seed_thresholds": {"0": grid_value(0.0316, None, "below")},
            }
        },
        "h2b": {"mean": 0.6, "ci90": [0.5, 0.7], "verdict": "supported"},
    }


def test_the_rung_both_judged_is_found_by_the_ladder_field_and_worded_as_the_report_does():
    width = {
        "settings": {"ladder": {"field": "n_embd"}, "reference": "off", "primary": "on"},
        "depths": {"64": rung(0.0316, [0.0562, 0.1], 1.0), "96": rung(0.01, None, 1.0)},
    }
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "n_embd": [64, 64, 96], "n_layer": 4})
    assert reruns.rung_of(runs, {"a", "b"}, width) == "64"
    assert reruns.rung_of(runs, {"a", "c"}, width) is None  # two rungs: no one to compare
    depth = {**width, "settings": {**width["settings"], "ladder": None}}  # a depth ladder
    assert reruns.rung_of(runs, {"a"}, depth) is None  # its rung 4 is not in "depths"
    said = reruns.rung_quantities(width, "64")
    assert said["best LR (off)"] == "0.0316"
    assert said["necessity threshold"] == "(0.0562, 0.1]"
    assert said["per seed"] == "0: <= 0.0316"
    assert said["critical LR, off (stuck; diverged; degraded)"] == "0.075; 0.75; 0.0178"
    assert said["LR sensitivity, off"] == "1.000" and said["LR sensitivity, on"] == "n/a"
    assert said["H2b: off - on sensitivity"] == "0.600 [0.500, 0.700], supported"


def test_a_sweeps_run_directories_read_as_figures_reads_them(tmp_path):
    """A sweep in progress (its run directories and plan.json, no report yet) compares with
    itself run by run: every run keeps its fate and no loss moves."""
    import figures_fakes as ff

    root = tmp_path / "study"
    ff.write_study(root, depths=[2], seeds=[0, 1])
    runs = reruns.load_runs(root)
    assert len(runs) > 0 and {"effective", "stuck", "provenance_json", "n_layer"} <= set(runs)
    table = reruns.drift(runs, runs)
    assert table.pairs.sum() == len(runs) and (table.max_gap == 0).all()
    assert (table.same_fate == table.pairs).all()


HOST = {"cpu": "CPU A", "simd": ["avx2"], "cpus": 2, "threads": {"OMP_NUM_THREADS": "1"}}
PROV = {"host": HOST, "versions": {"torch": "2.13.0"}, "device": "cpu", "git_commit": "a"}


def test_each_pair_is_classed_by_its_provenance_and_counted_equal_per_class(tmp_path):
    """Pairs expected identical (one of them not equal: named), not expected by the first
    field that differs (most pairs first), unknown without a host; a pair diverged on one
    side trained to no final loss and counts in no class."""
    other_cpu = {**PROV, "host": {**HOST, "cpu": "CPU B"}}
    two_threads = {**PROV, "host": {**HOST, "threads": {"OMP_NUM_THREADS": "2"}}}
    newer = {**PROV, "git_commit": "b", "started_at": "later"}  # neither counts
    pairs = [  # (seed, A's provenance, B's, A's final loss, B's)
        (0, PROV, newer, 1.30, 1.30),
        (1, PROV, PROV, 1.40, 1.40),
        (2, PROV, PROV, 1.50, 1.51),  # expected, but not equal
        (3, PROV, other_cpu, 1.60, 1.60),  # equal all the same
        (4, PROV, other_cpu, 1.70, 1.75),
        (5, PROV, two_threads, 1.80, 1.85),
        (6, {}, PROV, 1.90, 1.90),
        (7, PROV, {"host": None}, 2.00, 2.10),
    ]
    a = [run("off", 0.1, seed, "ok", fa, prov=pa) for seed, pa, _, fa, _ in pairs]
    b = [run("off", 0.1, seed, "ok", fb, prov=pb) for seed, _, pb, _, fb in pairs]
    a.append(run("off", 0.1, 8, "diverged", float("nan"), prov=PROV))
    b.append(run("off", 0.1, 8, "ok", 1.2, prov=PROV))
    for name, rows in (("a", a), ("b", b)):
        pd.DataFrame(rows).to_parquet(tmp_path / f"{name}.parquet")
    ra, rb = (reruns.load_runs(tmp_path / f"{name}.parquet") for name in "ab")
    classed = reruns.identity(ra, rb).set_index("run_id")
    assert len(classed) == 8 and "torch-off-lr0.1-s8" not in classed.index
    assert classed.loc["torch-off-lr0.1-s5", "reason"] == (
        "threads: OMP_NUM_THREADS=1 vs OMP_NUM_THREADS=2"
    )
    assert reruns.by_identity(reruns.identity(ra, rb)) == (
        "expected identical: 2 of 3 equal; not expected (cpu differs): 1 of 2 equal; "
        "not expected (threads differs): 0 of 1 equal; unknown (host not recorded): 1 of 2 "
        "equal. Expected identical but not: torch-off-lr0.1-s2 (something the provenance "
        "does not record differs)."
    )
    text = reruns.render(reruns.drift(ra, rb), "a", "b", ra, rb)
    assert "expected identical: 2 of 3 equal; not expected (cpu differs)" in text
    # a table that records no provenance: every finished pair unknown
    bare = [{k: v for k, v in r.items() if k != "provenance_json"} for r in a]
    pd.DataFrame(bare).to_parquet(tmp_path / "bare.parquet")
    plain = reruns.load_runs(tmp_path / "bare.parquet")
    said = reruns.by_identity(reruns.identity(plain, rb))
    assert said.startswith("unknown (host not recorded): 4 of 8 equal.")
