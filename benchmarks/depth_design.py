"""The depth ladder's design, chosen by simulation under study v5's rules before it runs
(docs/STUDY.md section 14): for each candidate set of depths, its cost on 2 CPU cores, the
fewest tokens per parameter of its rungs, and H3's power at the prediction (-0.25 decades per
doubling) and false rates, analytic (sweeps.study.trend.power) and simulated
(sweeps.study.simulation.rungs.ladder_rates) at several rung-level deviations.

Cost: the committed cpu-depth runs (docs/cpu-depth/runs.parquet: mean wall seconds per run at
each depth, with --workers 2) fitted by a line in depth; every rung the committed ladder holds
(2, 4, 8) is reused from it, each new rung trains the design's base LRs plus the refinement
LRs cpu-depth's rungs needed on average, both arms, every seed, on 2 workers. Simulated
ladders judge LRs a quarter decade apart above 1e-2 (the spec's refinement resolution).

    python benchmarks/depth_design.py --ladders 4000

`--matched` designs the ladder at matched tokens per parameter (docs/STUDY.md section 18,
sweeps/specs/cpu-depth-matched.toml): every rung at depth 4's 10.32 tokens per parameter, the
fixed quarter-decade grid, costed at this machine's measured run times, with H3's power and
false rates at rung sds 0.15, 0.25 and 0.3, how often a verdict is fragile or reversed by one
rung, and how often "ruled out" is said when -0.25 holds from depth 2 and depth 1 sits 0.3
decades low.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sweeps.core.params import count_params  # noqa: E402
from sweeps.core.presets import get_preset  # noqa: E402
from sweeps.study.simulation import rungs as sim  # noqa: E402
from sweeps.study.trend import power  # noqa: E402

COMMITTED = ROOT / "docs" / "cpu-depth" / "runs.parquet"
PREDICTION = -0.25
RUNG_SDS = (0.1, 0.15, 0.2, 0.25)
SIMULATED_SDS = (0.15, 0.2, 0.25)
NEW_RUNG_LRS = 6  # 3.16e-3 .. 1 on the half-decade grid (section 14)
WORKERS = 2
DESIGNS = [
    (1, 2, 3, 4, 6, 8),
    (1, 2, 3, 4, 6, 8, 10),
    (1, 2, 3, 4, 6, 8, 12),
    (1, 2, 3, 4, 5, 6, 8, 12),
    (1, 2, 4, 8, 12),
]


def committed_costs(path: Path = COMMITTED) -> tuple[float, float, set[int], float]:
    """(intercept, seconds per layer) of the mean run wall time against depth, the depths held,
    and the refinement LRs a rung gained on average (beyond the 8-LR base grid)."""
    runs = pd.read_parquet(path)
    mean = runs.groupby("n_layer")["wall_time_s"].mean()
    b, a = np.polyfit(mean.index.to_numpy(float), mean.to_numpy(), 1)
    lrs_per_rung = runs.groupby("n_layer")["lr"].nunique()
    extra = float((lrs_per_rung - 8).mean())
    return float(a), float(b), set(int(d) for d in mean.index), extra


def tokens_per_param(depth: int) -> float:
    cfg = get_preset("cpu").with_overrides([f"model.n_layer={depth}"])
    params = count_params(cfg.model, cfg.vocab_size)["total"]
    return cfg.train.max_steps * cfg.tokens_per_step / params


def design_row(sizes, seeds: int, ladders: int, costs) -> dict:
    a, b, held, extra = costs
    new = [d for d in sizes if d not in held]
    runs_per_rung = (NEW_RUNG_LRS + extra) * 2 * seeds
    run_seconds = sum(runs_per_rung * (a + b * d) for d in new)
    row = {
        "depths": ", ".join(map(str, sizes)),
        "new rungs": ", ".join(map(str, new)),
        "new runs": round(runs_per_rung * len(new)),
        "hours on 2 workers": run_seconds / WORKERS / 3600,
        "fewest tokens/param": min(tokens_per_param(d) for d in sizes),
    }
    for sd in RUNG_SDS:
        row[f"analytic power, rung sd {sd}"] = power(sizes, seeds, PREDICTION, sd)
    ladder = sim.Ladder(str(sizes), tuple(sizes), seeds=seeds, step_above=0.25)
    for sd in SIMULATED_SDS if ladders else ():
        rates = sim.ladder_rates(replace(ladder, rung_sd=sd), ladders, PREDICTION)
        row[f"sd {sd}: power"] = rates["planted: v5 supported"]
        row[f"sd {sd}: false supported"] = rates["flat: v5 supported"]
        row[f"sd {sd}: false ruled out"] = rates["planted: v5 ruled out"]
    return row


# -- the real-scale studies (sweeps/specs/depth.toml and core.toml; section 15) --------------
REAL_PRESET = "core"  # width 384, 6 heads, 8,192 tokens per step
REAL_LRS = 9  # the core grid: half-decade LRs 1e-4 .. 1, every rung (no prior runs at this scale)
REAL_WARM_LRS = 3  # off-warm at the three lowest
REAL_REFINE_LRS = 4  # refinement to 0.125 decades: 2.67 LRs a rung at 0.25 on cpu-depth, ~+1.5
MIN_TOKENS = 5.0  # sweeps.study.rules.MIN_TOKENS_PER_PARAM
REAL_DESIGNS = [
    ((3, 6, 12), 4, 5000),  # the spec before section 15
    ((1, 2, 3, 4, 6, 8), 4, None),
    ((1, 2, 3, 4, 6, 8), 3, None),
    ((2, 3, 4, 6, 8, 12), 4, None),
    ((1, 2, 4, 8), 4, None),
]


def real_config(depth: int, steps: int):
    return get_preset(REAL_PRESET).with_overrides(
        [f"model.n_layer={depth}", f"train.max_steps={steps}"]
    )


def steps_for_floor(sizes) -> int:
    """The fewest steps (rounded up to 100) that give every rung MIN_TOKENS per parameter."""
    base = get_preset(REAL_PRESET)
    deepest = base.with_overrides([f"model.n_layer={max(sizes)}"])
    params = count_params(deepest.model, deepest.vocab_size)["total"]
    steps = MIN_TOKENS * params / base.tokens_per_step
    return int(-(-steps // 100) * 100)


def real_row(sizes, seeds: int, steps: int | None, ladders: int) -> dict:
    from sweeps.sweep.measured import MEASURED, applies, run_seconds

    steps = steps or steps_for_floor(sizes)
    cfgs = {d: real_config(d, steps) for d in sizes}
    runs_per_rung = (REAL_LRS * 2 + REAL_WARM_LRS) * seeds
    refine_per_rung = REAL_REFINE_LRS * 2 * seeds
    fewest = min(
        steps * c.tokens_per_step / count_params(c.model, c.vocab_size)["total"]
        for c in cfgs.values()
    )
    row = {
        "depths": ", ".join(map(str, sizes)),
        "seeds": seeds,
        "steps": steps,
        "fewest tokens/param": fewest,
        "planned runs": runs_per_rung * len(sizes),
    }
    for m in MEASURED:
        if applies(m, cfgs[sizes[0]], "torch") and m.dtype == "float32":
            hours = sum(
                (runs_per_rung + refine_per_rung) * run_seconds(m, c) for c in cfgs.values()
            )
            row[f"H200 {m.mode} h (with ~{REAL_REFINE_LRS} refinement LRs a rung)"] = hours / 3600
    row["analytic power, rung sd 0.15"] = power(sizes, seeds, PREDICTION, 0.15)
    ladder = sim.Ladder(str(sizes), tuple(sizes), seeds=seeds, step_above=0.125)
    for sd in SIMULATED_SDS if ladders else ():
        rates = sim.ladder_rates(replace(ladder, rung_sd=sd), ladders, PREDICTION)
        row[f"sd {sd}: power, false sup., false ruled out"] = (
            f"{rates['planted: v5 supported']:.0%}, {rates['flat: v5 supported']:.0%}, "
            f"{rates['planted: v5 ruled out']:.0%}"
        )
    return row


def print_table(rows: list[dict]) -> None:
    cols = list(dict.fromkeys(c for row in rows for c in row))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c, "-")
            if isinstance(v, float):
                v = f"{v:.0%}" if ("power" in c or "false" in c) else f"{v:.1f}"
            cells.append(str(v))
        print("| " + " | ".join(cells) + " |")


# -- the ladder at matched tokens per parameter (section 18) -------------------------------
MATCHED_TOKENS = 1200 * 2048 / 238144  # depth 4's 1200 steps: 10.32 tokens per parameter
MATCHED_GRID = (3.16e-3, 5.62e-3, 1e-2, 1.78e-2, 3.16e-2, 5.62e-2, 0.1, 0.316, 1.0)
MATCHED_SDS = (0.15, 0.25, 0.3)
# A run's wall time on this project's 2-core machine (Intel Xeon, MKL's own path, two runs at
# once, one thread each; measured 2026-12-06 with `qktorch train --preset cpu-L1` and `cpu-L8`
# at 300 steps): (A + B x depth) s a step (periodic evaluations included), plus the final
# evaluation of the whole validation split (C + E x depth s) and STARTUP s.
STEP_A, STEP_B, FINAL_C, FINAL_E, STARTUP = 0.0083, 0.0256, 2.4, 4.2, 9.0
STOPPED_SHARE = 0.3  # of a run that trains at LR 1: it diverges early (cpu-depth: 0.23-0.39)
MATCHED_DESIGNS = [
    (1, 2, 3, 4, 6, 8),
    (1, 2, 4, 6, 8),
    (1, 2, 3, 4, 5, 8),
    (1, 2, 3, 4, 8),
    (2, 3, 4, 6, 8),
]


def matched_steps(depth: int, tokens: float = MATCHED_TOKENS, unit: int = 50) -> int:
    """max_steps at `tokens` per parameter, a multiple of `unit` (spec.Budget's rule)."""
    from sweeps.sweep.spec import Budget

    return Budget(tokens, unit).steps(get_preset("cpu").with_overrides([f"model.n_layer={depth}"]))


def matched_run_seconds(depth: int, steps: int) -> float:
    return STARTUP + steps * (STEP_A + STEP_B * depth) + FINAL_C + FINAL_E * depth


def matched_row(sizes, seeds: int, ladders: int) -> dict:
    lrs = len(MATCHED_GRID)
    per_rung = (lrs - 1 + STOPPED_SHARE) * 2 * seeds  # every LR but 1 trains to the end
    seconds = sum(per_rung * matched_run_seconds(d, matched_steps(d)) for d in sizes)
    row = {
        "depths": ", ".join(map(str, sizes)),
        "steps": ", ".join(str(matched_steps(d)) for d in sizes),
        "runs": lrs * 2 * seeds * len(sizes),
        "hours on 2 workers": seconds / WORKERS / 3600,
        "analytic power at 0.15": power(sizes, seeds, PREDICTION, 0.15),
    }
    lad = sim.Ladder(str(sizes), tuple(sizes), seeds=seeds, grid=MATCHED_GRID)
    for sd in MATCHED_SDS if ladders else ():
        r = sim.ladder_rates(replace(lad, rung_sd=sd), ladders, PREDICTION)
        row[f"sd {sd}: power, false supported, false ruled out"] = (
            f"{r['planted: v5 supported']:.0%}, {r['flat: v5 supported']:.0%}, "
            f"{r['planted: v5 ruled out']:.0%}"
        )
        if sd == MATCHED_SDS[0]:
            row["sd 0.15: fragile (planted / flat)"] = (
                f"{r['planted: fragile']:.0%} / {r['flat: fragile']:.0%}"
            )
            row["sd 0.15: reversed by one rung (planted / flat)"] = (
                f"{r['planted: reversed']:.0%} / {r['flat: reversed']:.0%}"
            )
            row["sd 0.15, one reversal -> inconclusive: power, false sup., false r.o."] = (
                f"{r['planted: unreversed supported']:.0%}, {r['flat: unreversed supported']:.0%}, "
                f"{r['planted: unreversed ruled out']:.0%}"
            )
    if ladders and min(sizes) == 1:
        special = replace(lad, rung_sd=MATCHED_SDS[0], first_offset=-0.3)
        r = sim.ladder_rates(special, ladders, PREDICTION)
        row["depth 1 0.3 low: ruled out (rule / with reversal)"] = (
            f"{r['planted: v5 ruled out']:.0%} / {r['planted: unreversed ruled out']:.0%}"
        )
        row["depth 1 0.3 low: supported (rule / with reversal)"] = (
            f"{r['planted: v5 supported']:.0%} / {r['planted: unreversed supported']:.0%}"
        )
    return row


# -- H3 from depth 2 to 12, confirmatory (section 22) -----------------------------------------
SCATTER = 0.2  # decades: a seed's threshold about its rung, as cpu-depth-matched measured (0.199)
H3_FALLS = (-0.25, -0.15)  # the prediction, and a moderate fall (about cpu-depth-matched's 2-8)
# Candidate ladders, every run new (fresh seeds), depth 1 trained beside and set apart
H3_DESIGNS = [
    (2, 3, 4, 6, 8, 12),
    (2, 3, 4, 5, 6, 8, 12),
    (2, 3, 4, 6, 8, 10, 12),
    (2, 3, 4, 5, 6, 8, 10, 12),
    (2, 3, 4, 6, 8, 12, 16),
]
# A run's wall time on the machine this ladder was designed on (an AMD EPYC, Zen 4, MKL's Intel
# path, two runs at once, one thread each; measured 2026-12-07 with `qktorch train --preset cpu
# --set model.n_layer=2|12 --set train.max_steps=300 --threads 1`, two copies at once: 0.041 and
# 0.200 s a step with its periodic evaluations, final evaluation 8.7 and 39.6 s, start-up about
# 2.4 s): the same shape as section 18's model, this machine's constants. Short probes weigh the
# early evaluations more than a whole run does, so it errs long.
H3_MACHINE = "AMD EPYC, 2 cores, measured 2026-12-07"
H3_STEP_A, H3_STEP_B, H3_FINAL_C, H3_FINAL_E, H3_STARTUP = 0.0092, 0.0159, 2.5, 3.09, 2.4


def h3_run_seconds(depth: int, steps: int) -> float:
    return H3_STARTUP + steps * (H3_STEP_A + H3_STEP_B * depth) + H3_FINAL_C + H3_FINAL_E * depth


SEEN = ROOT / "docs" / "cpu-depth-matched" / "analysis.json"
REUSED_NEW_RUNGS = [(3, 12), (3, 10, 12)]


def verdict_rates(lad, ladders: int, slope: float, seed: int) -> tuple[float, float, float]:
    """(supported, supported with the reversal rule, ruled out with the rule) at `slope`."""
    return sim.verdict_rates(lad, ladders, slope, seed, PREDICTION)


def run_hours(depths, seeds: int, seconds) -> float:
    """Hours on WORKERS workers for every LR of MATCHED_GRID, both arms, `seeds` seeds at each
    depth; `seconds(depth, steps)` is one run's wall time (runs at LR 1 stop early)."""
    per_rung = (len(MATCHED_GRID) - 1 + STOPPED_SHARE) * 2 * seeds
    return sum(per_rung * seconds(d, matched_steps(d)) for d in depths) / WORKERS / 3600


def h3_row(sizes, seeds: int, ladders: int, seconds) -> dict:
    row = {
        "depths (H3)": ", ".join(map(str, sizes)),
        "steps": ", ".join(str(matched_steps(d)) for d in sizes),
        "runs with depth 1": len(MATCHED_GRID) * 2 * seeds * (len(sizes) + 1),
        "h on 2 workers": run_hours((1, *sizes), seeds, seconds),
    }
    for k, sd in enumerate(MATCHED_SDS):
        lad = sim.Ladder(str(sizes), tuple(sizes), seeds, sd, SCATTER, grid=MATCHED_GRID)
        p25 = verdict_rates(lad, ladders, PREDICTION, 31 + k)
        p15 = verdict_rates(lad, ladders, H3_FALLS[1], 41 + k)
        flat = verdict_rates(lad, ladders, 0.0, 51 + k)
        row[f"sd {sd}: power at -0.25 (rule / with reversal), at -0.15"] = (
            f"{p25[0]:.0%} / {p25[1]:.0%}, {p15[1]:.0%}"
        )
        row[f"sd {sd}: false sup., false r.o."] = f"{flat[1]:.1%}, {p25[2]:.1%}"
    # section 22's null ladder: QK-norm never matters; any verdict is false (the shared
    # failure edge flat, or falling 0.25 decades a doubling)
    # failure edge flat, or falling 0.25 decades a doubling), on the ladder's grid and on one
    # refined to 1/8 decade as the grown specs refine (section 25)
    for name, grid in (("", MATCHED_GRID), (" (1/8-decade grid)", tuple(sim.ladder_lrs(0.125)))):
        null = sim.Ladder(str(sizes), tuple(sizes), seeds, 0.15, SCATTER, grid=grid)
        null = replace(null, identical=True)
        said = [
            float((sim.ladder_verdicts(null, ladders, edge, PREDICTION, 61)[0] != 0).mean())
            for edge in (0.0, PREDICTION)
        ]
        row[f"identical arms{name}: any verdict (edge flat / falling)"] = (
            f"{said[0]:.1%} / {said[1]:.1%}"
        )
    return row


def seen_rungs(path: Path = SEEN) -> dict[int, list[float]]:
    """cpu-depth-matched's per-seed log10 thresholds at depths 2-8 (seeds 0-3): the rungs the
    authors have seen."""
    import json
    import math

    points = json.loads(path.read_text())["h3"]["points"]
    out: dict[int, list[float]] = {}
    for p in points:
        if p["rung"] != 1:
            out.setdefault(p["rung"], []).append(math.log10(p["lr"]))
    return out


def reused_rates(new, slope: float, rung_sd: float, draws: int, seed: int) -> tuple[float, float]:
    """(supported, ruled out) of H3 over the seen rungs (their values fixed) and `new` rungs
    drawn on a line of `slope` through the seen rungs' centre, rung sd `rung_sd`, 4 seeds at
    SCATTER: how far the seen runs decide a ladder that reuses them."""
    seen = seen_rungs()
    xs = np.log2([*seen, *new]).astype(float)
    x_seen = np.log2(list(seen)).astype(float)
    level = float(np.mean([np.mean(v) for v in seen.values()]))
    rng = np.random.default_rng(seed)
    sd = np.sqrt(rung_sd**2 + SCATTER**2 / 4)
    y_new = (
        level
        + slope * (np.log2(new) - x_seen.mean())[None, :]
        + rng.normal(0, sd, (draws, len(new)))
    )
    y_seen = np.broadcast_to([np.mean(v) for v in seen.values()], (draws, len(seen)))
    mean_var = [np.var(v, ddof=1) / len(v) for v in seen.values()] + [SCATTER**2 / 4] * len(new)
    floor = float(np.sqrt(np.mean(mean_var)))
    b, lower, upper = sim._ols(np.broadcast_to(xs, (draws, len(xs))), np.c_[y_seen, y_new], floor)
    supported = upper < 0
    return float(supported.mean()), float(((lower > PREDICTION) & ~supported).mean())


def h3_reuse_rows(draws: int) -> list[dict]:
    rows = []
    for new in REUSED_NEW_RUNGS:
        row = {"seen rungs 2, 4, 6, 8 reused, new": ", ".join(map(str, new))}
        for true in (0.0, *H3_FALLS):
            sup, ruled = reused_rates(new, true, MATCHED_SDS[0], draws, 7)
            row[f"truth {true:+g}: supported, ruled out"] = f"{sup:.0%}, {ruled:.0%}"
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ladders", type=int, default=4000, help="simulated ladders per cell")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument(
        "--matched",
        action="store_true",
        help="the ladder at matched tokens per parameter (section 18)",
    )
    parser.add_argument(
        "--two-to-twelve",
        action="store_true",
        help="H3 from depth 2 to 12 with fresh seeds (section 22)",
    )
    parser.add_argument(
        "--real-scale",
        action="store_true",
        help="the real-scale depth study (core width) instead of the CPU ladder",
    )
    args = parser.parse_args(argv)
    began = time.time()
    if args.matched:
        print(
            f"matched: every rung {MATCHED_TOKENS:.2f} tokens per parameter; LRs "
            f"{', '.join(f'{x:g}' for x in MATCHED_GRID)}, both arms, {args.seeds} seeds, no "
            f"refinement; a run takes {STARTUP:g} + steps x ({STEP_A} + {STEP_B} x depth) + "
            f"{FINAL_C} + {FINAL_E} x depth s, {WORKERS} at once\n"
        )
        print_table([matched_row(d, args.seeds, args.ladders) for d in MATCHED_DESIGNS])
        print(f"\n{time.time() - began:.0f} s")
        return 0
    if args.two_to_twelve:
        print(
            f"every rung {MATCHED_TOKENS:.2f} tokens per parameter, the quarter-decade grid, both "
            f"arms, {args.seeds} fresh seeds, depth 1 trained beside (set apart); a seed's "
            f"threshold scatters {SCATTER} decades about its rung; a run takes {H3_STARTUP:g} + "
            f"steps x ({H3_STEP_A} + {H3_STEP_B} x depth) + {H3_FINAL_C} + {H3_FINAL_E} x depth "
            f"s, {WORKERS} at once ({H3_MACHINE})\n"
        )
        print_table([h3_row(d, args.seeds, args.ladders, h3_run_seconds) for d in H3_DESIGNS])
        print(
            "\nreusing cpu-depth-matched's seen rungs (seeds 0-3 at 2, 4, 6, 8), new rungs drawn "
            f"on a line through their centre, rung sd {MATCHED_SDS[0]}:\n"
        )
        print_table(h3_reuse_rows(args.ladders * 5))
        print(f"\n{time.time() - began:.0f} s")
        return 0
    if args.real_scale:
        print(
            f"real scale: preset {REAL_PRESET}, every rung {REAL_LRS} LRs x off/on + off-warm at "
            f"{REAL_WARM_LRS}, refined to 0.125 decades; tokens per run fixed so the deepest rung "
            f"trains {MIN_TOKENS:g} tokens per parameter\n"
        )
        print_table([real_row(d, s, st, args.ladders) for d, s, st in REAL_DESIGNS])
        print(f"\n{time.time() - began:.0f} s")
        return 0
    costs = committed_costs()
    a, b, held, extra = costs
    print(
        f"cost model (docs/cpu-depth, --workers {WORKERS}): a run takes {a:.0f} + {b:.1f} x depth "
        f"s; rungs held: {sorted(held)}; a new rung trains {NEW_RUNG_LRS} + {extra:.2f} LRs x 2 "
        f"arms x {args.seeds} seeds\n"
    )
    print_table([design_row(d, args.seeds, args.ladders, costs) for d in DESIGNS])
    print(f"\n{time.time() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
