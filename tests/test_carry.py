"""Section 16's decision (sweeps/study/carry.py) proven before it judges cpu-text: synthetic run
tables modelled on docs/cpu with planted answers (a new report drawn like the reference carries
everything; each planted difference flips its own quantity and no other; too few seeds or a
noisy gap are inconclusive; a borderline run that decides is inconclusive), and docs/cpu's own
runs judged against themselves, where every quantity carries and the reference values are the
ones section 16 quotes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sweeps.study import carry as c
from sweeps.study.stats import CONFIDENCE, t_quantile

DOCS = Path(__file__).resolve().parents[1] / "docs"
BIGRAM, INIT = 2.34, 5.55
LRS = (3.16e-4, 1e-3, 3.16e-3, 0.01, 0.0316, 0.0562, 0.1, 0.316, 0.562, 1.0)
# docs/cpu's shape: seed-mean capped losses per LR; "stuck" finishes at 2.55 (above the bigram
# cut), "diverged" stops. off is 0.27-0.5 nats worse below its best LR 0.01 (the cold start),
# equal to on at 0.0316, stuck from 0.1; on trains to 0.562; off-warm closes most of the gap.
ON = (1.95, 1.38, 1.01, 0.91, 1.11, 1.33, 1.35, 1.36, 1.43, "diverged")
OFF = (2.22, 1.88, 1.24, 0.86, 1.13, 2.0, "stuck", "stuck", "stuck", "diverged")
OFF_WARM = (2.07, 1.45)  # at the two lowest LRs
NOISE = 0.02


def rows(arms: dict, lrs=LRS, seeds=(0, 1, 2, 3), rng_seed=0, noise=NOISE) -> list[dict]:
    """A run table as runs.parquet's records: arm -> per-LR mean loss or fate; a per-seed
    override is a tuple of per-seed values at that LR."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for arm, profile in arms.items():
        for lr, entry in zip(lrs, profile):
            for k, seed in enumerate(seeds):
                x = entry[k] if isinstance(entry, tuple) else entry
                if x == "diverged":
                    status, final = "diverged", math.nan
                elif x == "stuck":
                    status, final = "unstable", 2.55 + rng.normal(0, NOISE)
                elif isinstance(x, str) and x.startswith("border"):  # border+0.005: near the cut
                    status, final = "unstable", BIGRAM + float(x[6:])
                else:
                    status, final = "ok", float(x) + rng.normal(0, noise)
                out.append(
                    {
                        "run_id": f"{arm}-lr{lr:g}-s{seed}",
                        "arm": arm,
                        "lr": lr,
                        "seed": seed,
                        "n_layer": 4,
                        "status": status,
                        "init_loss": INIT,
                        "final_val_loss": final,
                        "bigram_loss": BIGRAM,
                    }
                )
    return out


def table(off=OFF, on=ON, warm=OFF_WARM, **kw) -> list[dict]:
    return rows({"off": off, "on": on, "off-warm": warm}, **kw)


REFERENCE = table(rng_seed=1)


def outcomes(new, reference=REFERENCE) -> dict[str, str]:
    return {x.quantity: x.outcome for x in c.carry(reference, new)}


def judged(new, reference=REFERENCE) -> dict[str, c.Carry]:
    return {x.quantity: x for x in c.carry(reference, new)}


ALL_CARRY = dict.fromkeys(c.SECTION_16.quantities, c.CARRIES)


@pytest.mark.parametrize("rng_seed", [2, 3, 4])
def test_a_new_report_drawn_like_the_reference_carries_everything(rng_seed):
    assert outcomes(table(rng_seed=rng_seed)) == ALL_CARRY


def test_the_synthetic_reference_is_docs_cpus_shape():
    ref = judged(REFERENCE)
    assert ref["T1"].reference.interval == pytest.approx((3.16, 5.62))
    assert ref["T2"].reference.per_seed == ("stuck",) * 4
    assert ref["T3"].reference.value == pytest.approx(10, rel=0.05)
    assert ref["T5"].reference.value == pytest.approx(0.5, abs=0.05)
    assert ref["T6"].reference.value == pytest.approx(0.14, abs=0.06)


def test_a_threshold_two_decades_higher_differs_on_t1_alone():
    lrs = LRS + (1.78, 3.16, 5.62)
    on = ON[:-1] + (1.45, 1.47, 1.5, 1.55)  # on trains to 5.62
    off = ON[:3] + (0.86,) + ON[4:-1] + (1.45, 1.47, 1.5, "stuck")  # off as on up to 3.16
    off = (2.22, 1.88, 1.24) + off[3:]  # the cold start kept
    got = judged(table(off, on, lrs=lrs))
    assert got["T1"].new.interval == pytest.approx((316, 562))  # docs/cpu's x(3.16, 5.62] x 100
    assert got["T1"].outcome == c.DIFFERS and got["T1"].reason == c.OUTSIDE
    assert {q: x.outcome for q, x in got.items() if q != "T1"} == {
        q: c.CARRIES for q in c.SECTION_16.quantities if q != "T1"
    }


def test_off_failing_by_divergence_differs_on_t2_alone():
    off = tuple("diverged" if x == "stuck" else x for x in OFF)
    got = judged(table(off))
    assert got["T2"].new.per_seed == ("stopped",) * 4
    assert got["T2"].outcome == c.DIFFERS and got["T2"].reason == c.STOPS
    assert outcomes(table(off)) == {**ALL_CARRY, "T2": c.DIFFERS}


def test_two_of_four_stops_differ_and_one_of_four_carries():
    two = tuple(("diverged", "diverged", "stuck", "stuck") if x == "stuck" else x for x in OFF)
    one = tuple(("diverged", "stuck", "stuck", "stuck") if x == "stuck" else x for x in OFF)
    assert outcomes(table(two))["T2"] == c.DIFFERS
    assert outcomes(table(one))["T2"] == c.CARRIES


def test_on_failing_as_early_as_off_differs_on_t3_alone():
    on = ON[:6] + ("stuck", "stuck", "stuck", "diverged")
    got = judged(table(on=on))
    assert got["T3"].new.value == pytest.approx(1.0)
    assert got["T3"].new.verdict == "not supported"
    assert outcomes(table(on=on)) == {**ALL_CARRY, "T3": c.DIFFERS}


def test_no_low_lr_gap_differs_on_t5_and_leaves_t6_without_a_gap_to_share():
    off = ON[:3] + OFF[3:]
    got = judged(table(off, warm=ON[:2]))
    assert got["T5"].outcome == c.DIFFERS
    assert got["T5"].reason in (c.AT_OR_BELOW_FLOOR, c.OUT_OF_WINDOW)
    assert got["T6"].outcome == c.INCONCLUSIVE and got["T6"].reason == c.NO_GAP
    assert {q: got[q].outcome for q in ("T1", "T2", "T3", "T4")} == dict.fromkeys(
        ("T1", "T2", "T3", "T4"), c.CARRIES
    )


def test_a_warm_start_that_does_not_close_the_gap_differs_on_t6_alone():
    got = judged(table(warm=OFF[:2]))
    assert got["T6"].new.value == pytest.approx(1.0, abs=0.15)
    assert got["T6"].reason == c.OVER
    assert outcomes(table(warm=OFF[:2])) == {**ALL_CARRY, "T6": c.DIFFERS}


def test_two_seeds_decide_nothing():
    assert outcomes(table(seeds=(0, 1))) == dict.fromkeys(c.SECTION_16.quantities, c.INCONCLUSIVE)


def test_a_noisy_gap_is_inconclusive():
    # the gap at 1e-3 scatters over seeds from -0.1 to 0.9: its interval overlaps [0.25, 1.0]
    # and 0, and the warm start's share of a gap not shown is no share
    off = OFF[:1] + ((2.28, 1.28, 1.98, 1.48),) + OFF[2:]
    got = judged(table(off, warm=(2.07, 1.38)))
    assert got["T5"].outcome == c.INCONCLUSIVE and got["T5"].reason == c.STRADDLES
    assert got["T6"].outcome == c.INCONCLUSIVE and got["T6"].reason == c.NO_GAP
    assert {q: got[q].outcome for q in ("T1", "T2", "T3", "T4")} == dict.fromkeys(
        ("T1", "T2", "T3", "T4"), c.CARRIES
    )


def test_a_borderline_first_failure_that_decides_t2_is_inconclusive():
    # seeds 1-3 finish 0.005 nats above the cut at 0.0562 and stop at 0.1: stuck as recorded
    # (3 of 4 carries), stops if they trained (4 of 4 differs)
    off = OFF[:5] + ((1.9,) + ("border+0.005",) * 3,) + ("diverged",) * 4
    got = judged(table(off))
    assert got["T2"].new.per_seed == ("stopped", "stuck", "stuck", "stuck")
    assert got["T2"].outcome == c.INCONCLUSIVE and got["T2"].reason == c.BORDERLINE_DECIDES
    assert got["T1"].outcome == c.CARRIES


# -- the rules on their own --------------------------------------------------------------------
@pytest.mark.parametrize(
    "span, kind, outcome",
    [
        ((3.16, 5.62), "", c.CARRIES),
        ((5.62, 10.0), "", c.CARRIES),
        ((1.0, 3.16), "", c.CARRIES),
        ((1.0, 1.78), "", c.DIFFERS),  # touches x1.78 (10^0.25) only
        ((10.0, 17.8), "", c.DIFFERS),
        ((0.0, 1.0), "below", c.DIFFERS),  # necessary already at off's best LR
        ((31.6, math.inf), "none", c.DIFFERS),
        (None, "unjudged", c.INCONCLUSIVE),
    ],
)
def test_t1_rule(span, kind, outcome):
    assert c.decide("T1", c.Side(interval=span, verdict=kind))[0] == outcome


@pytest.mark.parametrize(
    "interval, outcome",
    [
        ((0.44, 0.55), c.CARRIES),
        ((0.01, 0.30), c.CARRIES),
        ((-0.10, 0.50), c.INCONCLUSIVE),
        ((-0.10, 0.02), c.DIFFERS),
        ((0.05, 0.20), c.DIFFERS),
        ((1.10, 1.50), c.DIFFERS),
        (None, c.INCONCLUSIVE),
    ],
)
def test_t5_rule(interval, outcome):
    assert c.decide("T5", c.Side(0.0, interval))[0] == outcome


@pytest.mark.parametrize(
    "value, interval, lower, outcome",
    [
        (0.15, (0.07, 0.23), 0.46, c.CARRIES),
        (0.30, (0.0, 0.9), 0.1, c.CARRIES),  # the ratio decides; its interval is said with it
        (0.50, (0.3, 0.7), 0.46, c.INCONCLUSIVE),
        (0.90, (0.6, 1.2), 0.46, c.DIFFERS),
        (0.10, None, -0.02, c.INCONCLUSIVE),  # no gap shown: no share
        (0.10, (0.05, 0.2), -0.3, c.INCONCLUSIVE),  # on worse than off: a gap, not a share
    ],
)
def test_t6_rule(value, interval, lower, outcome):
    side = c.Side(value, interval, parts=(("denominator_lower", lower),))
    assert c.decide("T6", side)[0] == outcome


def test_fiellers_interval_is_the_t_test_inverted():
    rng = np.random.default_rng(5)
    b = 0.5 + rng.normal(0, 0.15, 4)  # noisy enough that the interval is far from symmetric
    a = 0.1 + 0.3 * (b - 0.5) + rng.normal(0, 0.05, 4)
    lo, hi = c.fieller(a, b, 0.01)
    t = t_quantile(CONFIDENCE, 3)
    saa, sbb = max(np.var(a, ddof=1), 1e-4), max(np.var(b, ddof=1), 1e-4)

    def inside(rho):  # the one-sample t interval of a - rho b (floored variances) holds 0
        var = saa - 2 * rho * np.cov(a, b)[0, 1] + rho**2 * sbb
        return abs((a - rho * b).mean()) <= t * math.sqrt(var / 4)

    assert lo < a.mean() / b.mean() < hi
    assert inside(lo + 1e-6) and inside(hi - 1e-6)
    assert not inside(lo - 1e-3) and not inside(hi + 1e-3)
    assert c.fieller(a, b - b.mean(), 0.01) is None  # no gap: unbounded


def test_several_rungs_are_refused():
    two = REFERENCE + [dict(r, n_layer=8) for r in REFERENCE]
    with pytest.raises(ValueError, match="one n_layer"):
        c.cells_of(two)


# -- docs/cpu against itself -------------------------------------------------------------------
def committed(name: str) -> list[dict]:
    return pd.read_parquet(DOCS / name / "runs.parquet").to_dict("records")


@pytest.fixture(scope="module")
def docs_cpu():
    cpu, control = committed("cpu"), committed("cpu-control")
    # the new side as cpu-text holds it: off, on and off-warm in one table
    new = cpu + [r for r in control if r["arm"] == "off-warm"]
    return {x.quantity: x for x in c.carry(cpu, new, control)}


def test_docs_cpu_carries_to_itself(docs_cpu):
    assert {q: x.outcome for q, x in docs_cpu.items()} == ALL_CARRY
    for x in docs_cpu.values():
        assert x.reference == x.new


def test_docs_cpus_values_are_the_ones_section_16_quotes(docs_cpu):
    t1 = docs_cpu["T1"].reference
    assert t1.part("best_lr") == 0.01 and t1.interval == pytest.approx((3.16, 5.62))
    assert (t1.part("threshold_lo"), t1.part("threshold_hi")) == (0.0316, 0.0562)
    t2 = docs_cpu["T2"].reference
    assert t2.per_seed == ("stuck",) * 4
    assert t2.part("stuck_edge") == pytest.approx(0.0649, abs=5e-5)
    assert (t2.part("diverged_censored"), t2.part("diverged_beyond")) == (1, 1.0)
    t3 = docs_cpu["T3"].reference
    assert t3.verdict == "supported" and t3.value == pytest.approx(11.55, abs=0.005)
    t4 = docs_cpu["T4"].reference
    assert t4.verdict == "supported" and t4.value == pytest.approx(0.614, abs=5e-4)
    assert t4.interval == pytest.approx((0.524, 0.703), abs=5e-4)
    t5 = docs_cpu["T5"].reference
    assert t5.value == pytest.approx(0.498, abs=5e-4)
    assert t5.interval == pytest.approx((0.442, 0.553), abs=5e-4)
    t6 = docs_cpu["T6"].reference
    assert t6.part("numerator") == pytest.approx(0.073, abs=5e-4)
    assert t6.part("denominator") == pytest.approx(0.498, abs=5e-4)
    assert round(t6.value, 2) == 0.15
    lo, hi = t6.interval
    assert lo < t6.value < hi < 1 / 3


# -- the renderer (figures/carry.py) -----------------------------------------------------------
def write_runs(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(records).to_parquet(folder / "runs.parquet")
    return folder


def run_main(new: Path, reference: Path, control: Path) -> int:
    from figures import carry as fc

    return fc.main([str(new), "--reference", str(reference), "--control", str(control)])


def md_rows(folder: Path) -> dict[str, str]:
    lines = (folder / "carry.md").read_text().splitlines()
    return {q: next(x for x in lines if x.startswith(f"| {q} |")) for q in c.SECTION_16.quantities}


def test_the_report_of_docs_cpu_against_itself_words_section_16s_numbers(tmp_path, capsys):
    import json

    cpu, control = committed("cpu"), committed("cpu-control")
    new = write_runs(tmp_path / "cpu-text", cpu + [r for r in control if r["arm"] == "off-warm"])
    assert run_main(new, DOCS / "cpu", DOCS / "cpu-control") == 0
    assert capsys.readouterr().out.count("\n") == 1
    rows = md_rows(new)
    quoted = {
        "T1": "(x3.16, x5.62] (best 0.01, threshold (0.0316, 0.0562])",
        "T2": "stuck first in 4 of 4 seeds, stopped first in 0",
        "T3": "supported, x11.55 [x8.23, x16.21]",
        "T4": "supported, 0.614 [0.524, 0.703] nats",
        "T5": "+0.498 [+0.442, +0.553] nats",
        "T6": "0.073 / 0.498 = 0.15 [",
    }
    for q, text in quoted.items():
        assert rows[q].count(text) == 2, rows[q]  # both sides
        assert "**carries**" in rows[q]
    assert "stuck edge 0.0649; diverged edge above 1 in 1 of 4 seeds" in rows["T2"]
    doc = json.loads((new / "carry.json").read_text())
    assert [q["outcome"] for q in doc["quantities"]] == [c.CARRIES] * 6
    assert doc["quantities"][4]["new"]["interval"] == pytest.approx([0.4419, 0.5533], abs=1e-4)
    assert sorted(p.name for p in new.iterdir()) == ["carry.json", "carry.md", "runs.parquet"]


def test_a_report_still_training_says_so_first(tmp_path, capsys):
    """A carry page drawn while the new sweep trains opens with its 'Not finished' line (from
    the report's analysis.json); a folder with runs.parquet alone has none to say."""
    import json

    new = write_runs(tmp_path / "cpu-head64", committed("cpu"))
    assert run_main(new, DOCS / "cpu", DOCS / "cpu-control") == 0
    assert "Not finished" not in (new / "carry.md").read_text()
    doc = json.loads((DOCS / "cpu" / "analysis.json").read_text())
    missing = {"status": "missing", "arm": "on", "n_layer": 4, "n_embd": 64, "lr": 0.1}
    doc["problems"] += [
        {**missing, "run_id": f"torch-x-{k}", "seed": k, "error": ""} for k in (4, 5, 6)
    ]
    (new / "analysis.json").write_text(json.dumps(doc))
    assert run_main(new, DOCS / "cpu", DOCS / "cpu-control") == 0
    text = (new / "carry.md").read_text()
    said = f"> `cpu-head64`: **Not finished: 3 of the plan's {len(doc['runs']) + 3} runs"
    assert said in text and text.index(said) < text.index("| # | quantity |")


def test_the_report_words_each_outcome(tmp_path):
    ref = write_runs(tmp_path / "ref", REFERENCE)
    off = tuple("diverged" if x == "stuck" else x for x in OFF)
    new = write_runs(tmp_path / "new", table(off, warm=OFF[:2], seeds=(0, 1, 2, 3)))
    assert run_main(new, ref, ref) == 0
    rows = md_rows(new)
    assert "**differs**" in rows["T2"] and "stopped first in 4" in rows["T2"]
    assert "**differs**" in rows["T6"] and "(above 2/3)" in rows["T6"]
    assert all("**carries**" in rows[q] for q in ("T1", "T3", "T4", "T5"))
    assert "(H2a supported)" in rows["T3"]
    noisy = write_runs(tmp_path / "noisy", table(seeds=(0, 1)))
    assert run_main(noisy, ref, ref) == 0
    assert all("**inconclusive**" in row for row in md_rows(noisy).values())


def test_a_folder_without_runs_is_refused_in_one_line(tmp_path, capsys):
    assert run_main(tmp_path / "none", DOCS / "cpu", DOCS / "cpu-control") == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "runs.parquet" in out.err
    new = write_runs(tmp_path / "new", REFERENCE)
    assert run_main(new, tmp_path / "no-reference", DOCS / "cpu-control") == 2
    assert not (new / "carry.md").exists() and not (new / "carry.json").exists()


# -- section 20: head width --------------------------------------------------------------------
W64, W128 = c.SECTION_20_WIDTH_64, c.SECTION_20_WIDTH_128


def judged20(new, reference=REFERENCE, predictions=W64) -> dict[str, c.Carry]:
    return {x.quantity: x for x in c.carry(reference, new, None, predictions)}


@pytest.mark.parametrize("rng_seed", [2, 3])
def test_section_20_a_sweep_drawn_like_the_reference_carries_everything(rng_seed):
    got = judged20(table(rng_seed=rng_seed))
    assert list(got) == list(W64.quantities)
    assert {q: x.outcome for q, x in got.items()} == dict.fromkeys(W64.quantities, c.CARRIES)


def test_section_20_a_cost_at_the_best_lr_that_moves_differs_on_t7_and_t8_alone():
    # on 0.25 nats better at every LR from off's best up: QK-norm's cost shifts up there
    on = tuple(x - 0.25 if isinstance(x, float) and lr >= 0.01 else x for lr, x in zip(LRS, ON))
    got = judged20(table(on=on))
    for q in ("T7", "T8"):
        assert (got[q].outcome, got[q].reason) == (c.DIFFERS, c.SMALLER), got[q]
        assert got[q].new.value == pytest.approx(got[q].reference.value + 0.25, abs=0.04)
    assert got["T8"].new.part("on_lr") == 0.01
    rest = {q: x.outcome for q, x in got.items() if q not in ("T7", "T8", "T1")}
    assert rest == dict.fromkeys(rest, c.CARRIES)


def test_section_20_a_harm_window_the_reference_lacks_differs_on_t9():
    # on 0.15 nats worse than off at 0.01 and 0.0316: two adjacent harmed LRs
    on = ON[:3] + (0.86 + 0.15, 1.13 + 0.15) + ON[5:]
    got = judged20(table(on=on))
    assert got["T9"].reference.value == 0 and got["T9"].new.value == 1
    assert got["T9"].new.interval == (0.01, 0.0316)
    assert (got["T9"].outcome, got["T9"].reason) == (c.DIFFERS, c.HARM_NEW)
    assert got["T7"].outcome == c.DIFFERS and got["T7"].reason == c.LARGER


def test_the_shift_is_welchs_interval():
    ref, new = np.array([0.1, 0.2, 0.15, 0.05]), np.array([0.3, 0.5, 0.35, 0.4, 0.45])
    sh = c.shift(ref, new, 0.01)
    va, vb = np.var(ref, ddof=1) / 4, np.var(new, ddof=1) / 5
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 4)
    half = t_quantile(CONFIDENCE, df) * math.sqrt(va + vb)
    assert sh.mean == pytest.approx(new.mean() - ref.mean())
    assert (sh.lower, sh.upper, sh.df) == pytest.approx((sh.mean - half, sh.mean + half, df))
    assert c.decide_shift(sh) == (c.DIFFERS, c.SMALLER)
    assert c.decide_shift(c.shift(new, ref, 0.01)) == (c.DIFFERS, c.LARGER)
    assert c.decide_shift(c.shift(ref, ref + 0.01, 0.01))[0] == c.CARRIES
    # identical samples: the floor keeps the interval open, never a zero-width "differs"
    same = c.shift([0.1] * 4, [0.105] * 4, 0.01)
    assert same.lower < 0 < same.upper
    assert c.decide_shift(c.shift(ref[:2], new, 0.01)) == (c.INCONCLUSIVE, c.TOO_FEW_SEEDS)


def test_the_shift_rule_on_simulated_sweeps_holds_its_false_rate_and_finds_a_planted_shift():
    """Section 20's numbers (benchmarks/head_width_design.py), at fewer trials: 'differs' either
    way near 10% under the null (4 seeds a side, width 128's spread), and a shift of 0.25 nats
    found most of the time."""
    from benchmarks.head_width_design import rates

    rng = np.random.default_rng(0)
    up, carries = rates(rng, "normal", 0.091, 0.0, 1500)
    assert 0.02 < up < 0.08 and 0.85 < carries < 0.96
    found, _ = rates(rng, "normal", 0.091, 0.25, 600)
    assert found > 0.85
    noisy, _ = rates(rng, "new side 2x noisier", 0.091, 0.25, 600)
    assert 0.45 < noisy < found


@pytest.fixture(scope="module")
def width_128():
    w = committed("cpu-width")
    ref = [r for r in w if r["n_embd"] == 128]
    return {x.quantity: x for x in c.carry(ref, ref, None, W128)}


def test_the_width_128_reference_is_the_one_section_20_quotes(width_128):
    assert {q: x.outcome for q, x in width_128.items()} == dict.fromkeys(W128.quantities, c.CARRIES)
    t1 = width_128["T1"].reference
    assert t1.interval == pytest.approx((1.0, 1.78)) and t1.part("best_lr") == 0.01
    t5 = width_128["T5"].reference
    assert (t5.value, *t5.interval) == pytest.approx((0.326, 0.277, 0.375), abs=5e-4)
    t7 = width_128["T7"].reference
    assert (t7.value, *t7.interval) == pytest.approx((-0.219, -0.325, -0.112), abs=5e-4)
    t8 = width_128["T8"].reference
    assert (t8.value, *t8.interval) == pytest.approx((0.092, 0.012, 0.172), abs=5e-4)
    assert (t8.part("off_lr"), t8.part("on_lr")) == (0.01, 0.00316)
    assert width_128["T9"].reference.value == 0
    # section 20's windows: the reference's bracket and gap widened as section 16 widened
    assert W128.t1_window == pytest.approx((10**-0.25, 1.78 * 10**0.25), rel=2e-3)
    assert W128.t5_window == pytest.approx((0.326 / 2, 0.326 * 2), abs=1e-3)


def test_docs_cpus_section_20_values():
    cpu = committed("cpu")
    got = {x.quantity: x for x in c.carry(cpu, cpu, None, W64)}
    t4 = got["T4"].reference
    assert t4.verdict == "supported" and t4.part("lrs") == 6
    assert (t4.value, *t4.interval) == pytest.approx((0.663, 0.562, 0.765), abs=5e-4)
    t7 = got["T7"].reference
    assert (t7.value, *t7.interval) == pytest.approx((-0.051, -0.120, 0.019), abs=5e-4)
    assert got["T8"].reference.value == pytest.approx(t7.value)
    assert {x.outcome for x in got.values()} == {c.CARRIES}


def test_a_head_width_report_is_carried_by_section_20_against_its_reference(tmp_path):
    from figures import carry as fc
    from sweeps.analysis import carry_page as cp

    assert cp.plan_for(Path("docs/cpu-head64")).predictions is W64
    assert cp.plan_for(Path("docs/cpu-width128-head64")).reference_rows == (("n_embd", 128),)
    assert cp.plan_for(Path("docs/cpu-text")).predictions is c.SECTION_16
    new = write_runs(tmp_path / "cpu-head64", committed("cpu"))
    assert fc.main([str(new), "--reference", str(DOCS / "cpu")]) == 0
    text = (new / "carry.md").read_text()
    assert "section 20's predictions" in text and "| T6 |" not in text
    rows = {
        q: next(x for x in text.splitlines() if x.startswith(f"| {q} |")) for q in W64.quantities
    }
    assert "-0.051 [-0.120, +0.019] nats (at 0.01; 4 seeds); shift +0.000" in rows["T7"]
    assert "over [1e-3, 0.316]" in rows["T4"] and "(LRs 1e-3, 3.16e-3, 0.01" in rows["T4"]
    assert all("**carries**" in r for r in rows.values())
