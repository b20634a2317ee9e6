"""The plan a sweep prints before it runs (`sweep`, `sweep --dry-run`): what it trains, how
its grid grows, the study that judges it, the state of its runs, and the one-line warnings (a
short token budget, a checkout with uncommitted changes)."""

from __future__ import annotations

from collections import Counter

from sweeps.core.fmt import si
from sweeps.run.rundir import RunDir


def describe(sweep, cost: bool = True) -> list[str]:
    """The plan a sweep prints before it runs: what it trains (arms, grid, budgets, parameters),
    how it grows, the study it is judged by, its state, its cost on measured devices (cost:
    False leaves it for the caller to print last, as --dry-run does) and warnings (a short
    budget, a dirty checkout, the execution's note)."""
    from sweeps.core.params import count_params
    from sweeps.sweep.grid import max_extra_runs

    spec, cfgs = sweep.spec, list(sweep.configs.values())
    base = cfgs[0]
    axis = spec.ladder
    by_rung = {getattr(c.model, axis): c for c in cfgs}
    rungs = sorted(by_rung)
    letter = "L" if axis == "n_layer" else "w"
    n_grid = len(spec.configs(sweep.backend, sweep.overrides))
    budgets = sorted({(c.train.max_steps, c.tokens_per_step) for c in cfgs})
    total_tokens = sum(c.train.max_steps * c.tokens_per_step for c in cfgs)
    params = ", ".join(
        f"{letter}{r} {si(n := count_params(by_rung[r].model, base.vocab_size)['total'])} "
        f"({by_rung[r].train.max_steps * by_rung[r].tokens_per_step / n:.3g} tokens/param)"
        for r in rungs
    )
    each = "; ".join(
        f"{steps} steps x {per:,} tokens = {steps * per:,} tokens" for steps, per in budgets
    )
    finished = Counter(sweep.status(rid) for rid in sweep.configs)
    done = sum(n for s, n in finished.items() if s is not None)
    resumable = sum(
        sweep.status(rid) is None and RunDir(sweep.run_dir(rid)).latest_checkpoint() is not None
        for rid in sweep.configs
    )
    lrs = ", ".join(f"{lr:g}" for lr in spec.lr)
    lines = [f"sweep {spec.name}: preset {spec.preset}, backend {sweep.backend} -> {sweep.dir}"]
    if spec.description:
        lines.append(f"  {spec.description}")
    lines += [
        "  arms: " + "; ".join(_arm_text(arm) for arm in spec.arms),
        f"  grid: lr {lrs} x {axis} {', '.join(map(str, rungs))} x seed "
        f"{', '.join(map(str, spec.seed))} = {n_grid} runs"
        + (
            f" (+{len(cfgs) - n_grid} added by extension and refinement)"
            if len(cfgs) > n_grid
            else ""
        ),
        *_rung_lr_lines(spec, letter),
        f"  each run: {each}; params {params}",
        f"  total: {len(cfgs)} runs, {si(total_tokens)} tokens at most (failing runs stop early)",
        f"  growth: {_growth_text(spec)}; at most {max_extra_runs(spec)} more runs",
        f"  study: {_study_text(spec)}",
        f"  state: {done} finished"
        + "".join(
            f", {n} {s}"
            for s, n in sorted(finished.items(), key=lambda kv: str(kv[0]))
            if s is not None
        )
        + (f"; {resumable} resume from a checkpoint" if resumable else "")
        + f"; {len(cfgs) - done - resumable} to run",
    ]
    if sweep.archived:  # --from-report: which of the report's runs this plan reuses
        lines.append(
            f"  grows the report {sweep.grows}: {sweep.from_report()} of its {len(sweep.archived)} "
            "finished runs are planned here and count as finished (they do not train again)"
        )
    if cost:
        lines += cost_block(sweep)
    note = sweep.execution_note()
    return lines + short_budget(cfgs) + dirty_checkout() + ([note] if note else [])


def _rung_lr_lines(spec, letter: str) -> list[str]:
    """The rungs on an LR subset of the grid ([rung_lr]) in one line; none without."""
    if not spec.rung_lr:
        return []
    subsets = "; ".join(
        f"{letter}{rung} lr {', '.join(f'{x:g}' for x in lrs)}"
        for rung, lrs in sorted(spec.rung_lr.items())
    )
    return [f"  [rung_lr]: {subsets} (the other rungs: the whole grid)"]


def _growth_text(spec) -> str:
    ext = spec.extend
    if ext.max_extra_lrs == 0:
        text = "no extension"
    else:
        which = "no run" if ext.until == "any" else "not every run"
        text = (
            f"while {which} at a rung's (depth's or width's) top lr failed, add lr "
            f"x{spec.extend_factor:.3g} (at most {ext.max_extra_lrs} more)"
        )
    if ext.refine:
        text += f"; then bisect failure and threshold brackets to {ext.resolution:g} decades"
    return text


def dirty_checkout(source: tuple | None = None) -> list[str]:
    """One warning line when the code comes from a git checkout with uncommitted changes to
    tracked files (source: its (commit, dirty), default this process's): every run then
    records git_dirty true, and no commit names the code it ran."""
    from sweeps.platform.provenance import checkout

    commit, dirty = checkout() if source is None else source
    if not dirty:
        return []
    return [
        f"  warning: uncommitted changes to tracked files (on {str(commit)[:7]}): every run "
        "records git_dirty true and no commit names the code it ran; commit them first, or "
        "sweep from a clean clone (git clone, then --runs-dir pointing back here)"
    ]


def short_budget(cfgs) -> list[str]:
    """One warning line when a run trains fewer tokens per parameter than
    sweeps.study.rules.MIN_TOKENS_PER_PARAM (tokens: max_steps x batch_size x block_size;
    parameters: all of them) and its outcome counts a final loss above a baseline of the data
    as a failure (train.baseline): that failure may be a run that has not yet learned."""
    from sweeps.core.params import count_params
    from sweeps.study.rules import MIN_TOKENS_PER_PARAM

    params: dict = {}  # (model, vocab) -> total parameters, counted once
    ratios = {}  # baseline -> the fewest tokens per parameter of a run judged against it
    for c in cfgs:
        if c.train.baseline == "none":  # no baseline: not learning yet is no failure
            continue
        key = (c.model, c.vocab_size)
        if key not in params:
            params[key] = count_params(c.model, c.vocab_size)["total"]
        ratio = c.train.max_steps * c.tokens_per_step / params[key]
        ratios[c.train.baseline] = min(ratio, ratios.get(c.train.baseline, ratio))
    if not ratios or min(ratios.values()) >= MIN_TOKENS_PER_PARAM:
        return []
    baseline = min(ratios, key=ratios.get)
    fewest = next(  # three digits, more where they would round up to the limit
        text
        for digits in (3, 4, 5, 6, 17)
        if float(text := f"{ratios[baseline]:.{digits}g}") < MIN_TOKENS_PER_PARAM or digits == 17
    )
    return [
        f"  warning: short budget: runs train as few as {fewest} tokens per "
        f"parameter, under {MIN_TOKENS_PER_PARAM:g} (sweeps.study.rules.MIN_TOKENS_PER_PARAM); "
        f'below that a "failure" may be a run that has not yet learned (not yet below the '
        f"{baseline} baseline); more train.max_steps raise it"
    ]


def _arm_text(arm) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in arm.set.items()) or "the base config"
    return f"{arm.name} ({settings}" + (
        f"; lr {', '.join(f'{x:g}' for x in arm.lr)})" if arm.lr else ")"
    )


def _study_text(spec) -> str:
    s = spec.study
    low, high = s.sensitivity_range
    return (
        s.primary_comparison.key
        + (f", start control {s.start_control}" if s.start_control else "")
        + f"; delta {s.delta:g}, sensitivity over [{low:g}, {high:g}], min effect "
        f"{s.min_effect:g}, H2b min effect {s.min_sensitivity:g}, target loss "
        + (f"{s.target_loss:g}" if s.target_loss is not None else "none (no spec of this corpus)")
        + (f"; set apart: {', '.join(map(str, s.set_apart))}" if s.set_apart else "")
        + (f"; plateau margin {s.plateau_margin:g} (section 23)" if s.plateau_margin else "")
        + " (docs/STUDY.md)"
    )


def cost_block(sweep) -> list[str]:
    """The sweep's cost on measured devices (sweeps.sweep.measured), the one source of every
    price and hour the docs quote for a spec (tests/test_real_study_doc.py)."""
    from sweeps.sweep.grid import max_extra_runs
    from sweeps.sweep.measured import cost_lines

    return cost_lines(list(sweep.configs.values()), sweep.backend, max_extra_runs(sweep.spec))


def run_counts(states: list[str]) -> str:
    """'84 pending' or '30 ok, 1 diverged, 53 pending': the planned runs by state, in the
    order a run moves through them."""
    order = ["ok", "unstable", "diverged", "failed", "corrupt", "running", "interrupted"]
    counts = Counter(states)
    ranked = sorted(counts, key=lambda s: order.index(s) if s in order else len(order))
    return ", ".join(f"{counts[s]} {s}" for s in ranked)
