"""A sweep's analysis computed once, typed: `analyze(results, curves) -> Analysis`
(sweeps/analysis/model.py), every number the report prints under the rules of docs/STUDY.md,
with no prose in it (figures/words/view.py words it and writes analysis.json).

The study's rules live in sweeps/study (rules.py: the (arm, LR, seed) table, effective loss,
paired differences, the necessity rule, critical LRs; stats.py: the bounds): this module lays
out what they compute and re-derives none of it. Every decided quantity carries `lower` (the
one-sided 95% bound that decided) and `ci90` (the two-sided 90% interval).

The ladder: settings.ladder names the field the sweep's rungs differ in, n_layer (depth) or
n_embd (width). `depths` keeps analysis.json's name, but its keys (and those of
decisions.rules and early_warning) are the rung values of that field. The trend over the rungs
is `h3` on a depth ladder; `w1` and `w2` on a width ladder. A token-matched check sweep's
analysis holds its check against its ladder (`token_check`, sweeps/analysis/token_check.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from sweeps.analysis import (
    budget_check,
    caveats,
    early_warning,
    logit_growth,
    run_table,
    token_check,
    trends,
)
from sweeps.analysis import model as m
from sweeps.analysis.adapter import SCHEMA, from_json, to_json
from sweeps.analysis.results import SweepResults
from sweeps.analysis.run_table import optional_float
from sweeps.analysis.trends import study_of
from sweeps.core import interventions
from sweeps.core.ladder import AXES
from sweeps.run.outcomes import OUTCOMES
from sweeps.study import alternatives, effect_curve, hypotheses, judge, rules
from sweeps.study.rung import Rung, judge_rung
from sweeps.study.stats import (
    STUDY_SHA256,
    STUDY_VERSION,
    GridValue,
    Paired,
    eta_max,
)

DELTAS = [round(0.05 * k, 2) for k in range(1, 21)]  # the eta_max(delta) ratio chart


def analyze(
    results: SweepResults,
    curves: pd.DataFrame,
    sweep_dir: Path | None = None,
    previous: Path | None = None,
) -> m.Analysis:
    """The Analysis of a sweep (runs table and training curves of sweeps.analysis.results),
    complete. For a sweep whose spec has [token_check], its check against the ladder
    (sweeps/analysis/token_check.py), read from the ladder's run directories beside sweep_dir
    (the sweep's folder), or, for a report re-rendered from its own data (previous: that
    report's folder), from the ladder's report beside it or what previous recorded."""
    settings = study_settings(results)
    runs = run_table.build(results.runs)
    # each run's RunConfig (results reads it once), not a config rebuilt from columns
    runs["config"] = runs.run_id.map(results.config)
    runs["baseline_loss"] = [run_table.baseline_loss(r) for r in runs.itertuples()]
    rung = settings["ladder"]["field"]
    settings["tokens_per_param"] = {}
    steps = steps_to_target(curves, settings["target_loss"])
    # the second pre-registered target: the data's bigram baseline (docs/STUDY.md section 4)
    bigram = settings["baselines"].get("bigram")
    reached = steps_to_target(curves, bigram).rename(columns={"steps": "steps_baseline"})
    steps = steps.merge(reached, on="run_id", how="outer")
    finished = runs[runs.outcome.notna()].to_dict("records")
    cells = rules.study_cells(finished, study_of(settings), rung=rung)
    # section 23: the runs a plateau reading counts stuck though under their recorded cut
    plateau_stuck = rules.read_as_stuck(rules.build_cells(finished, rung=rung), cells)
    # each rung with both arms of the primary comparison decided once (sweeps.study.rung)
    study = study_of(settings)
    rung_lrs = settings.get("rung_lr", {})
    verdicts = {
        size: judge_rung(c, study, True, settings["base_lrs"], rung_lrs.get(str(size)))
        for size, c in cells.items()
        if c.has(study.reference) and c.has(study.primary)
    }
    depths: dict[str, m.Rung] = {}  # per rung (keyed by the ladder's field)
    for value in sorted(runs[rung].dropna().unique()):
        at_rung = runs[(runs[rung] == value) & runs.outcome.notna()]
        if not at_rung.empty:
            name = str(int(value))
            verdict = verdicts.get(int(value))
            depths[name] = depth_analysis(at_rung, cells[int(value)], settings, steps, verdict)
            settings["tokens_per_param"][name] = next(
                iter(depths[name].tokens_per_param.by_budget.values()), None
            )
    typed_settings = _settings(settings)
    found = trends.trends(cells, settings, {k: v for k, v in verdicts.items() if str(k) in depths})
    ew = early_warning.table(runs, curves, rung)
    out = m.Analysis(
        schema=SCHEMA,
        study_sha256=STUDY_SHA256,
        study_version=STUDY_VERSION,
        plateau_stuck=plateau_stuck or None,
        sweep=results.name,
        settings=typed_settings,
        runs=[m.Run(**r) for r in run_table.records(runs)],
        depths=depths,
        problems=[m.Problem(**p) for p in run_table.problems(results, runs)],
        compute=m.Compute(**run_table.compute(runs)),
        # the runs against counting: no arm beating the bigram baseline makes the sweep a toy
        baseline_check=rules.baseline_check(cells.values(), bigram),
        decisions=decisions(cells, settings, depths, runs, verdicts),
        early_warning={
            k: {arm: {p: m.Auc(**e) for p, e in per.items()} for arm, per in v.items()}
            for k, v in ew.items()
        },
        **found,
        caveats=m.Caveats(
            budget=caveats.budget(settings, depths, runs),
            unrefined=caveats.unrefined(cells, settings, results.spec, results.missing, rung),
        ),
    )
    check = (results.spec or {}).get("token_check")
    if check:  # a depth ladder's token-matched check (docs/STUDY.md section 11)
        written = from_json(to_json(out))  # its values as analysis.json holds them
        found_check = token_check.entry(written, check, sweep_dir, previous, analyze)
        out = dataclasses.replace(out, token_check=found_check)
    out = dataclasses.replace(out, gap_shrink=trends.gap_shrink(out))  # a width ladder's
    out = dataclasses.replace(out, cost_trend=trends.cost_trend(out))
    if rung == "n_layer":  # a depth ladder's mechanism beside its threshold (section 18)
        found_growth = logit_growth.logit_growth(curves, settings["reference"], rung)
        out = dataclasses.replace(out, logit_growth=found_growth)
    return _with_decided(out)


def _with_decided(analysis: m.Analysis) -> m.Analysis:
    """The analysis with each hypothesis its ladder registers decided (sweeps.study.hypotheses
    reads the typed records as analysis.json holds them)."""
    return decided(analysis, to_json(analysis))


def decided(analysis: m.Analysis, as_json: dict) -> m.Analysis:
    """analysis with `decided` filled from its form as analysis.json holds it (as_json:
    to_json(analysis), read back: NaN and Inf as None)."""
    written = from_json(as_json)
    out = {}
    for h in hypotheses.for_ladder(analysis.settings.ladder.field):
        d = hypotheses.decide(written, h)
        out[h.id] = m.Decision(
            h.id,
            h.section,
            d.verdict,
            d.why,
            d.numbers,
            d.per_rung,
            d.preregistered,
            h.interval(written),
        )
    return dataclasses.replace(analysis, decided=out)


def _settings(settings: dict) -> m.Settings:
    return m.Settings(
        **{
            **settings,
            "baselines": m.Baselines(**settings["baselines"]),
            "ladder": m.LadderAxis(**settings["ladder"]),
        }
    )


# -- the pre-registration as the analysis uses it --------------------------------------------
def study_settings(results: SweepResults) -> dict:
    """[study] of the plan's spec (docs/STUDY.md section 6) as sweeps.study.rules.Study reads
    it, defaults where the plan has none, marked `preregistered: False` (the verdicts then say
    so); the data's baselines and the grid."""
    spec = results.spec or {}
    grid_lrs = spec.get("grid", {}).get("lr") or sorted(results.runs.lr.dropna().unique())
    study = rules.Study.from_dict(spec.get("study"), [float(x) for x in grid_lrs])
    settings = {**study.to_dict(), "preregistered": bool(spec.get("study"))}
    settings["failure_definitions"] = list(rules.FAILURE_DEFINITIONS)
    settings["primary_failure"] = rules.PRIMARY_FAILURE
    settings["base_lrs"] = [float(x) for x in grid_lrs]
    arms = spec.get("arms") or {}
    settings["arms"] = list(arms) or sorted(
        results.runs.arm.dropna().unique(), key=lambda a: (a != "off", a)
    )
    settings["subset_arms"] = sorted(a for a, body in arms.items() if body.get("lr"))
    if spec.get("rung_lr"):  # rungs on an LR subset of the grid; only when given
        settings["rung_lr"] = {str(k): [float(x) for x in v] for k, v in spec["rung_lr"].items()}
    settings["all_comparisons"] = [list(c) for c in study.all_comparisons()]
    settings["baselines"] = run_table.baselines(results.runs)
    settings["baseline_rule"] = run_table.baseline_rule(results.runs)
    # the planned runs too: a width sweep with one width finished is still a width ladder
    shapes = [f for f in ("n_layer", "n_embd") if f in results.runs and f in results.missing]
    planned = pd.concat([results.runs[shapes], results.missing[shapes]]) if shapes else results.runs
    field = run_table.ladder_field(planned)
    settings["ladder"] = {"field": field, "name": AXES[field]}
    return settings


# -- one rung --------------------------------------------------------------------------------
def depth_analysis(
    runs: pd.DataFrame,
    cells: rules.Cells,
    settings: dict,
    steps: pd.DataFrame,
    verdict: Rung | None,
) -> m.Rung:
    """One rung: its arms, their comparisons, L* and, with both compared arms (verdict: the
    rung as sweeps.study.rung decided it), H1-H2b."""
    arms = [a for a in settings["arms"] if a in set(runs.arm)]
    best = best_losses(runs, cells)
    per_arm = {a: arm_analysis(runs[runs.arm == a], cells, settings, best, steps) for a in arms}
    compared = {}
    for pair in settings["all_comparisons"]:
        c = rules.Comparison(*pair)
        if c.baseline in arms and c.treatment in arms:
            primary = verdict is not None and c == verdict.comparison
            judged = verdict.judgement if primary else None
            compared[c.key] = comparison(cells, c, settings, per_arm, judged)
    return m.Rung(
        arms=per_arm,
        comparisons=compared,
        l_star=best,
        tokens_per_param=m.TokensPerParam(**run_table.tokens_per_param(runs)),
        **(paired_hypotheses(verdict, settings) if verdict else {}),
    )


def decisions(
    cells: dict,
    settings: dict,
    depths: dict[str, m.Rung],
    runs: pd.DataFrame,
    verdicts: dict[int, Rung],
) -> m.Decisions:
    """The decisions sweeps/study makes beyond H1-H3, per depth, as dicts of a Decision or a
    Rule: C1 (sweeps.study.alternatives.c1), I1-I4 per intervention arm and the practitioner's
    rule (sweeps.study.rules.practitioner_rule), on each rung's decided primary comparison
    (verdicts). figures/ words them."""
    study = study_of(settings)
    ref, primary = study.reference, study.primary
    qk_norm = dict(zip(runs.arm, runs.qk_norm)) if "qk_norm" in runs else {}
    out: dict = {"C1": {}, "interventions": {}, "rules": {}, "budget": {}}
    for name, depth in depths.items():  # every rung: a budget pair needs neither ref nor primary
        found = budget_check.pairs(depth)
        if found:
            out["budget"][name] = found
    for name, depth in depths.items():
        c, verdict = cells[int(name)], verdicts.get(int(name))
        if verdict is None:
            continue
        values = {a: v.interventions for a, v in depth.arms.items()}
        arms = alternatives.intervention_arms(
            [a for a in settings["arms"] if c.has(a)],
            {tuple(x) for x in settings["all_comparisons"]},
            values,
            qk_norm,
            ref,
            primary,
        )

        def judged(b: str, t: str):
            return judge.compare(c, rules.Comparison(b, t), study, influence=False)

        def median(arm: str):
            found = rules.median_grid(list(rules.critical_lrs(c, arm, delta=study.delta).values()))
            return found[0] if found else None

        main = verdict.judgement
        calls = rules.lr_calls(main, study)
        rule = rules.practitioner_rule(
            calls, main.necessity, rules.best_lr(c, ref), rules.lowest_lr(c, ref)
        )
        out["rules"][name] = rule
        control = study.start_control
        if control and c.has(control):
            control_calls = rules.lr_calls(judged(control, primary), study)
            out["C1"][name] = alternatives.c1(calls, control_calls)
        per_arm = {}
        for arm in arms:
            vs_on = rules.lr_calls(judged(arm, primary), study)
            if alternatives.builds_on_primary(arm, qk_norm, primary):
                per_arm[arm] = {"I4": alternatives.i4(vs_on, study.min_effect)}
                continue
            lowest = min(settings["base_lrs"]) if settings["base_lrs"] else None
            per_arm[arm] = {
                "I1": alternatives.i1(
                    judged(ref, arm).necessity.threshold, median(arm), median(ref)
                ),
                "I2": alternatives.i2(vs_on, median(ref)),
                "I3": alternatives.i3(calls, vs_on, lowest, study.min_effect),
            }
        if per_arm:
            out["interventions"][name] = per_arm
    return m.Decisions(**out)


def paired_hypotheses(judged: Rung, settings: dict) -> dict:
    """The rung's decisions (sweeps.study.rung: docs/STUDY.md sections 5 and 13) as the
    analysis records them: H1, H2a's log10 ratios of critical LRs under each failure
    definition (the primary one decides) and H2b's sensitivity differences per seed, with the
    bounds and the verdicts; H2b at a rung on a [rung_lr] subset without every LR of the
    sensitivity range is not judged ("why", only then); the cost at each arm's best LR, the
    failure edges, the low-LR effect and the borderline runs."""
    by_definition = {
        definition: m.H2a(
            **paired_entry(h.stats),
            log10_ratios=h.log10_ratios,
            verdict=h.paired_verdict,
            censored=h.censored,
        )
        for definition, h in judged.h2a_by_definition.items()
    }
    h2b = judged.h2b
    # H1 and the borderline runs as the rulebook decided them (sweeps.study.rung: section 13,
    # the borderline runs' fates both ways)
    h1 = judged.h1
    primary_h2a = by_definition[rules.PRIMARY_FAILURE]
    if "H2a" in judged.both_ways:  # the borderline runs' fates decide it (section 13)
        primary_h2a = dataclasses.replace(
            primary_h2a, verdict=rules.INCONCLUSIVE, censored=rules.BORDERLINE_DECIDES
        )
    return {
        "h1": m.H1(
            verdict=h1.verdict,
            why=h1.why,
            lr=judged.best_lr,
            stats=m.Paired(**paired_entry(h1.stats)) if h1.stats else None,
            off_fails=judged.off_fails,
        ),
        "h2a": dataclasses.replace(primary_h2a, definition=rules.PRIMARY_FAILURE),
        "h2a_by_definition": by_definition,
        "h2b": m.H2b(
            **paired_entry(h2b.stats),
            min_effect=settings["min_sensitivity"],
            verdict=h2b.verdict,
            why=h2b.why or None,
            trained_lrs=list(h2b.trained_lrs),
            trained=m.Paired(**paired_entry(h2b.trained)) if h2b.trained else None,
        ),
        "best_cost": best_cost(judged.best_cost),
        "edges": {
            arm: {d: _edge(e) for d, e in by_definition.items()}
            for arm, by_definition in judged.edges.items()
        },
        "low_lr": m.LowLr(
            verdict=judged.low.verdict,
            lrs=list(judged.low.lrs),
            means=[st.mean for st in judged.low.stats],
            lower=list(judged.low.lower),
            upper=list(judged.low.upper),
        ),
        **(
            {
                "borderline": list(judged.borderline),
                "both_ways": {k: list(v) for k, v in judged.both_ways.items()},
            }
            if judged.borderline
            else {}
        ),
    }


def _edge(e) -> m.Edge:
    """A failure edge (sweeps.study.stability.Edge) as analysis.json holds it."""

    def value(x: float) -> float | None:
        return None if math.isnan(x) else x

    return m.Edge(value(e.value), value(e.lower), value(e.upper), e.censored, len(e.per_seed))


def best_cost(cost: effect_curve.BestCost) -> m.BestCost:
    """The primary comparison at each arm's own best LR (sweeps.study.effect_curve.best_cost)
    as analysis.json holds it."""
    stats = m.Paired(**paired_entry(cost.stats)) if cost.stats else None
    return m.BestCost(off_lr=cost.off_lr, on_lr=cost.on_lr, stats=stats)


def best_losses(runs: pd.DataFrame, cells: rules.Cells) -> dict:
    """L* per token budget (sweeps.study.rules.best_mean_loss over the arms of that budget)."""
    out = {}
    for budget, part in runs.groupby("budget"):
        value = rules.best_mean_loss(cells, sorted(set(part.arm)))
        if value is not None:
            out[str(int(budget))] = value
    return out


def arm_analysis(
    part: pd.DataFrame, cells: rules.Cells, settings: dict, best: dict, steps: pd.DataFrame
) -> m.Arm:
    seeds = sorted(part.seed.unique())
    arm = str(part.arm.iloc[0])
    by_definition = {
        definition: {
            int(s): v
            for s, v in rules.critical_lrs(cells, arm, definition, settings["delta"]).items()
            if s in set(seeds)
        }
        for definition in rules.FAILURE_DEFINITIONS
    }
    crit = by_definition[rules.PRIMARY_FAILURE]
    lrs, worst = rules.worst_losses(cells, arm)
    budget = str(int(part.budget.iloc[0]))
    l_star = best.get(budget, math.nan)
    in_range = rules.sensitivity_lrs(settings["base_lrs"], settings["sensitivity_range"])
    sens = {
        int(s): v for s, v in rules.sensitivities(cells, arm, in_range).items() if s in set(seeds)
    }
    return m.Arm(
        lrs=lrs,
        seeds=[int(s) for s in seeds],
        budget=float(budget),
        recipe=recipe(part),
        interventions=intervention_values(part),
        best_lr=rules.best_lr(cells, arm),
        eta_crit=m.CriticalLRs(
            seeds={s: _grid(v) for s, v in crit.items()},
            **_median(list(crit.values())),
            definition=rules.PRIMARY_FAILURE,
        ),
        eta_crit_by_definition={
            definition: m.CriticalLRs(
                seeds={s: _grid(v) for s, v in values.items()}, **_median(list(values.values()))
            )
            for definition, values in by_definition.items()
        },
        eta_max=m.EtaMax(
            delta=settings["delta"],
            l_star=l_star,
            **_grid_fields(eta_max(lrs, worst, l_star + settings["delta"])),
        ),
        eta_max_curve=[
            m.EtaMaxPoint(delta=d, **_grid_fields(eta_max(lrs, worst, l_star + d))) for d in DELTAS
        ],
        sensitivity=m.Sensitivity(
            seeds=sens,
            lrs=in_range,
            complete=all(not math.isnan(v) for v in sens.values()),
            mean=_nanmean(sens.values()),
            sd=_nansd(sens.values()),
        ),
        cells=[cell_summary(part[part.lr == lr], steps) for lr in lrs],
        init_logit_std=_init_logit_std(part),
    )


def recipe(part: pd.DataFrame) -> str | None:
    """What an arm trains, apart from the LR, the seed and the step count: a short hash of its
    config without them (and without its name), the same for every run of the arm. Two arms with
    one recipe at two budgets are the same comparison with more tokens
    (figures/report/budget.py)."""
    keys = set()
    for config in part.get("config", pd.Series(dtype=object)).dropna():
        d = config.to_dict()
        for field in ("arm", "seed"):
            d.pop(field, None)
        d["train"] = {k: v for k, v in d["train"].items() if k not in ("lr", "max_steps")}
        keys.add(hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10])
    return keys.pop() if len(keys) == 1 else None


def intervention_values(part: pd.DataFrame) -> dict | None:
    """The arm's value of each intervention (sweeps/core/interventions.py: z-loss, soft cap,
    QK-clip, warmup), the same for every run of the arm; None when its runs disagree or carry
    no config. An arm whose values differ from its base arm's is an intervention arm
    (figures/words/intervention_verdicts.py); a start-temperature control is not."""
    found = {
        tuple(
            (i.name, interventions.value(config, i)) for i in interventions.INTERVENTIONS.values()
        )
        for config in part.get("config", pd.Series(dtype=object)).dropna()
    }
    return dict(found.pop()) if len(found) == 1 else None


def cell_summary(cell: pd.DataFrame, steps: pd.DataFrame) -> m.Cell:
    """One arm at one LR over its seeds: outcomes, final loss of ok runs, the effective loss
    (capped, every finished run) with its perplexity, and the steps to both targets."""
    ok = cell[cell.outcome == "ok"]
    final = pd.to_numeric(ok.final_val_loss, errors="coerce")
    reached = steps[steps.run_id.isin(cell.run_id)] if len(steps) else steps
    loss = pd.to_numeric(cell.loss, errors="coerce")

    def mean_steps(column: str) -> float | None:
        if column not in reached or len(reached) != len(cell) or reached[column].isna().any():
            return None
        return optional_float(reached[column].mean())

    return m.Cell(
        lr=float(cell.lr.iloc[0]),
        n=int(len(cell)),
        outcomes={o: int((cell.outcome == o).sum()) for o in OUTCOMES},
        final_mean=optional_float(final.mean()),
        final_sd=optional_float(final.std(ddof=1)),
        loss_mean=optional_float(loss.mean()),
        loss_sd=optional_float(loss.std(ddof=1)),
        perplexity=optional_float(math.exp(loss.mean())) if loss.notna().any() else None,
        steps_to_target=mean_steps("steps"),
        steps_to_baseline=mean_steps("steps_baseline"),
    )


def comparison(
    cells: rules.Cells,
    c: rules.Comparison,
    settings: dict,
    arms: dict[str, m.Arm],
    judged: rules.Judgement | None = None,
) -> m.Comparison:
    """The paired analysis of baseline minus treatment at one depth (docs/STUDY.md 4), as
    sweeps.study.judge judges it, with the leave-one-run-out check (judged: the rung's primary
    comparison as already decided)."""
    study = study_of(settings)
    judged = judged or judge.compare(cells, c, study)
    p, result = judged.pairs, judged.necessity
    at = {lr: i for i, lr in enumerate(result.lrs)}
    marked = {effect_curve.HARMED: "harmed", effect_curve.HELPED: "helped"}
    seeds = list(p.seeds)
    per_lr = []
    for i, lr in enumerate(p.lrs):
        k = at.get(lr)
        stat = result.stats[k] if k is not None else None
        has = np.isfinite(p.d[i])
        per_lr.append(
            m.LrEffect(
                **paired_entry(stat or _unjudged(p.d[i])),
                lr=lr,
                judged=stat is not None,
                ceiling=bool(p.ceiling[i]),
                partial_ceiling=bool(not p.ceiling[i] and judged.partial_ceiling[i]),
                set_aside=[seeds[j] for j in result.set_aside[k]] if k is not None else [],
                fails={
                    "baseline": int((p.fail_b[i] & has).sum()),
                    "treatment": int((p.fail_t[i] & has).sum()),
                },
                necessary=bool(stat is not None and result.necessary[k]),
                equivalent=bool(stat is not None and rules.negligible(stat, study.negligible)),
                seeds=[None if math.isnan(x) else float(x) for x in p.d[i]],
                speedup=_speedup(arms[c.baseline], arms[c.treatment], lr),
                mark=marked.get(judged.marks[k], "") if k is not None else "",
            )
        )
    ratio = [
        m.Ratio(a.delta, _ratio(a, b))
        for a, b in zip(arms[c.baseline].eta_max_curve, arms[c.treatment].eta_max_curve)
    ]
    t = result.threshold
    return m.Comparison(
        baseline=c.baseline,
        treatment=c.treatment,
        per_lr=per_lr,
        threshold=_grid(t),
        threshold_bracket=list(t.bracket) if t.bracket else None,
        seed_thresholds={int(s): _grid(v) for s, v in zip(p.seeds, result.seed_thresholds)},
        ceiling=result.ceiling,
        partial_ceiling=[e.lr for e in per_lr if e.partial_ceiling],
        precision_floor=result.floor,
        eta_max_ratio=ratio,
        influence=[
            m.Influence(run_id=rid, lr=_lr_of(cells, rid), threshold_without=_grid(t))
            for rid, t in judged.influence
        ],
        best_lr=judged.best_lr,
        harm=[list(r) for r in judged.harm],
        help=[list(r) for r in judged.help],
    )


def _lr_of(cells: rules.Cells, run_id: str) -> float | None:
    """The LR of a run in the table (the leave-one-run-out list names it with its LR)."""
    where = np.argwhere(cells.run_ids == run_id)
    return float(cells.lrs[where[0][1]]) if len(where) else None


def paired_entry(p: Paired) -> dict:
    """A paired statistic as analysis.json writes it: the bound that decides (`lower`, one-sided
    95%) and the two-sided 90% interval (`ci90`) made of the two one-sided 95% bounds."""
    return {
        "n": p.n,
        "mean": p.mean,
        "sd": p.sd,
        "sd_used": p.sd_used,
        "lower": p.lower,
        "upper": p.upper,
        "ci90": [p.lower, p.upper],
        "lower75": p.lower75,
    }


def _unjudged(d) -> Paired:
    """An LR the rule did not judge (a ceiling, a partial ceiling, too few pairs): its mean."""
    x = np.asarray(d, float)
    x = x[np.isfinite(x)]
    mean = float(x.mean()) if len(x) else math.nan
    return Paired(len(x), mean, *[math.nan] * 5)


# -- steps to target ---------------------------------------------------------------------------
def steps_to_target(curves: pd.DataFrame, target: float | None) -> pd.DataFrame:
    """Per run: sweeps.study.rules.steps_to on its quick val losses (docs/STUDY.md 4)."""
    columns = ["run_id", "steps"]
    if target is None or curves.empty or "quick_val_loss" not in curves:
        return pd.DataFrame(columns=columns)
    rows = [
        {"run_id": run_id, "steps": rules.steps_to(c.step, c.quick_val_loss, target)}
        for run_id, c in curves.dropna(subset=["quick_val_loss"])
        .sort_values("step")
        .groupby("run_id")
    ]
    return pd.DataFrame(rows, columns=columns)


def _speedup(base: m.Arm, treat: m.Arm, lr: float) -> float | None:
    a = next((c.steps_to_target for c in base.cells if c.lr == lr), None)
    b = next((c.steps_to_target for c in treat.cells if c.lr == lr), None)
    return a / b if a and b else None


# -- helpers -------------------------------------------------------------------------------------
def _grid_fields(v: GridValue) -> dict:
    """A GridValue's fields as analysis.json names them (interpolated only inside the grid)."""
    return {
        "value": v.value,
        "kind": v.kind,
        "bracket": list(v.bracket) if v.bracket else None,
        "interpolated": bool(v.interpolated and v.kind == ""),
    }


def _grid(v: GridValue) -> m.GridPoint:
    return m.GridPoint(**_grid_fields(v))


def _median(values: list[GridValue]) -> dict:
    """Median and range over seeds (sweeps.study.rules.median_grid)."""
    found = rules.median_grid(values)
    if found is None:
        return {"median": None, "min": None, "max": None, "censored": []}
    mid, low, high = found
    return {
        "median": _grid(mid),
        "min": _grid(low),
        "max": _grid(high),
        "censored": sorted({v.kind for v in values if not v.inside}),
    }


def _ratio(a: m.EtaMaxPoint, b: m.EtaMaxPoint) -> float | None:
    if a.kind == "none" or b.kind == "none":
        return None
    return b.value / a.value


def _init_logit_std(part: pd.DataFrame) -> float | None:
    values = (
        pd.to_numeric(part.get("init_logit_std"), errors="coerce")
        if "init_logit_std" in part
        else pd.Series(dtype=float)
    )
    return optional_float(values.mean()) if values.notna().any() else None


def _nanmean(values) -> float | None:
    v = [x for x in values if not math.isnan(x)]
    return float(np.mean(v)) if v else None


def _nansd(values) -> float | None:
    v = [x for x in values if not math.isnan(x)]
    return float(np.std(v, ddof=1)) if len(v) > 1 else None
