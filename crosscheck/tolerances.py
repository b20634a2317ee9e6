"""Tolerances: a bound on each check's relative error, with the reason for its size.

Two correct float32 implementations differ only by operation order (BLAS blocking, fused vs
separate kernels, reduction trees): about 1e-7 per operation, a few 1e-7 to 1e-6 after a
forward pass. Each tolerance sits 16-30x above the largest error measured on smoke, tiny and
core (in the reasons) and below what a realistic mismatch produces on smoke (also given), so
it passes correct trainers and fails real bugs. Measured with crosscheck on 2 CPU cores,
mlx 0.32.4, torch 2.13.0 (core: random tokens, 50 steps at batch 4).

The errors they bound: for arrays, max_abs_err = max |mlx - torch| and max_rel_err =
max_abs_err / max |torch| (relative to the array's scale, so near-zero elements do not
dominate; for named arrays, gradients and checkpoints, the worst array counts); for scalars
(losses, grad norms, diagnostics), |mlx - torch| / |torch| per element (step, layer), the worst
one counts. Each Tolerance keeps its reason here; crosscheck.json records only the bounds.
"""

from dataclasses import dataclass

from sweeps.core.precision import UNIT_ROUNDOFF


@dataclass(frozen=True)
class Tolerance:
    rel: float  # bound on max_rel_err
    reason: str


TOLERANCES = {
    "weights": Tolerance(0.0, "numpy arrays copied into a trainer and read back are bit-exact"),
    "precision": Tolerance(
        0.0,
        "the number of sites of sweeps.core.precision.SITES whose dtype differs from the "
        "declared policy on either backend: a count, none allowed",
    ),
    "forward": Tolerance(
        2e-5,
        (
            "logits: float32 op order only; measured <= 9e-7 (smoke 4e-7, tiny 8e-7, core 9e-7). "
            "Fails: tanh GELU 3e-4 (stress weights), torch's default RMSNorm eps 2e-2 (init "
            "weights), QK-norm without gain 0.4, QK-norm before the score scale"
        ),
    ),
    "loss": Tolerance(
        5e-5,
        (
            "mean cross entropy of one batch: op order in log-softmax over the vocabulary and "
            "the mean over B*T tokens (8192 on core); measured <= 1.9e-6 (core)"
        ),
    ),
    "grad": Tolerance(
        2e-4,
        (
            "every parameter's gradient relative to its largest element: backward passes sum "
            "over B*T tokens (and heads, for QK-norm gains) and go through softmax and norm "
            "backward (cancellation), so errors exceed forward's; measured <= 9.5e-6 (QK-norm "
            "gains of core; 2.6e-6 on tiny). A missing gain or another eps gives 1e-2..1"
        ),
    ),
    "train_loss": Tolerance(
        1e-4,
        (
            "per-step train loss over the default 50 steps: op-order differences feed back "
            "through the updates, and Adam's m / sqrt(v) turns relative gradient noise into the "
            "same relative update noise however small the gradient is, so the error grows with "
            "steps: ~1e-6 at step 1, <= 5.2e-6 by step 50 on tiny (1.3e-6 on core). Meant for up "
            "to ~100 steps. Fails: weight decay on norm gains 2.8e-3 by step 50 (smoke), no bias "
            "correction 8e-3 and the LR schedule one step off 1e-2 by step 16"
        ),
    ),
    "train_grad_norm": Tolerance(
        2e-2,
        (
            "pre-clip global gradient norm per step: each backend on its own (slightly drifted) "
            "weights, and once the loss nears its floor the mean gradient is a sum of per-token "
            "terms that mostly cancel, so its relative rounding error is large: measured <= "
            "2.2e-4 on tiny, 1.2e-3 on core with random tokens. No bias correction gives 0.1"
        ),
    ),
    "diagnostics": Tolerance(
        5e-3,
        (
            "attention entropy, max attention logit, residual kurtosis and max/median after the "
            "training run, each backend on its own weights, so they carry the training drift "
            "through maxima and 4th powers; measured <= 6e-5 on tiny, 2.5e-4 on core (max "
            "logit). Unscaled scores in one probe path give ~2 (sqrt(d_head) - 1)"
        ),
    ),
    "qk_clip_heads": Tolerance(
        0.0,
        (
            "heads QK-clip rescaled at each step: a count, equal on both backends unless a head's "
            "max logit lies within rounding of tau; measured equal at every step. Scaling by "
            "tau / max instead of its square root changes the counts within a few steps"
        ),
    ),
    "qk_clip_max_logit": Tolerance(
        1e-3,
        (
            "the largest per-head max attention logit QK-clip measured at each step, before its "
            "rescale: a forward maximum on each backend's own (slightly drifted) weights; "
            "measured <= 1.5e-6 on smoke (50 steps, tau 0.02), 5.6e-6 on tiny (20 steps). "
            "Measuring over masked positions or |logit| changes which heads fire"
        ),
    ),
    "checkpoint": Tolerance(
        2e-5,
        (
            "val loss of the source backend vs the other backend loaded from its checkpoint: the "
            "same weights, so forward op order only; measured <= 7e-7"
        ),
    ),
    "resume": Tolerance(
        2e-3,
        (
            "params, Adam m and v and the step count after one more step from the same "
            "checkpoint on both backends: identical weights, but after training the gradient "
            "is a cancelling sum (see train_grad_norm), so m of the attention projections "
            "differs by <= 4e-6 on tiny and 8.8e-5 on core with random tokens. A lost step "
            "count or moment changes the update by O(1)"
        ),
    ),
}


# bfloat16 mixed precision (sweeps.core.precision): every matmul rounds its output to 8
# significant bits, so two correct implementations whose float32 accumulators differ only by
# summation order can land a whole bfloat16 ulp apart: up to 2u of the value (u = 2^-8, the unit
# roundoff). Each bound below is a multiple of u fixed by counting where that rounding reaches a
# check, written before the first bfloat16 crosscheck ran; the measurements in the reasons are
# tiny's (50 steps, QK-norm off and on, mlx 0.32.4, torch 2.13.0, 2 CPU cores). What bfloat16
# cannot resolve (tanh GELU, an eps) is the float32 crosscheck's to catch: it stays as it was.
U = UNIT_ROUNDOFF["bfloat16"]

BFLOAT16_TOLERANCES = {
    "weights": TOLERANCES["weights"],  # copies: float32 master weights either way
    "precision": TOLERANCES["precision"],
    "forward": Tolerance(
        4 * U,
        "logits come out of a bfloat16 matmul: one ulp at the largest logits is 2u of the "
        "array's scale, two ulps 4u; measured 2.2u (tiny)",
    ),
    "loss": Tolerance(
        U / 8,
        "float32 cross entropy of bfloat16 logits, averaged over B*T tokens (2048 on tiny): "
        "per-token errors of an ulp mostly cancel in the mean; measured 0.007u",
    ),
    "grad": Tolerance(
        40 * U,
        "float32's rule, 10x forward's bound: a gradient is a sum over B*T tokens (and heads, "
        "for QK-norm gains) of terms each an ulp off, which cancel to far less than their "
        "magnitudes; measured 1.8u at init, 5.3u at a QK-norm gain from the stress weights "
        "(smoke). A missing gain or another eps moves it by 1e-2..1 of its scale, as in float32",
    ),
    "train_loss": Tolerance(
        U / 2,
        "per-step loss over 50 steps: the loss's u/8 grown through Adam's updates (as float32's "
        "grows 5x from step 1 to 50); measured 0.11u",
    ),
    "train_grad_norm": Tolerance(
        8 * U,
        "float32's cancelling sum (2e-2 there) on bfloat16 gradients: twice the grad bound; "
        "measured 2.8u",
    ),
    "diagnostics": Tolerance(
        8 * U,
        "maxima, spreads and 4th powers of the attention scores (a bfloat16 matmul's output) "
        "after training, both backends probed on the same (torch's) weights: two ulps of a "
        "score each side; measured 4.2u (max attention logit, each on its own weights)",
    ),
    "qk_clip_heads": TOLERANCES["qk_clip_heads"],
    "qk_clip_max_logit": Tolerance(4 * U, "a maximum of bfloat16 scores: two ulps"),
    "checkpoint": Tolerance(U / 8, "a val loss on the same weights: as loss; measured 0.008u"),
    "resume": Tolerance(
        32 * U,
        "params and Adam moments one step after a shared checkpoint: the moment m of a trained "
        "model is a cancelling sum of gradients, so its error relative to its largest element "
        "exceeds the gradient's (float32 measures the ratio at up to 10 on core): 8x grad's "
        "bound; measured 6.3u (smoke). A lost step count or moment is still O(1)",
    ),
}

BY_DTYPE = {"float32": TOLERANCES, "bfloat16": BFLOAT16_TOLERANCES}
