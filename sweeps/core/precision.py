"""Mixed precision, declared once: which tensors a bfloat16 run computes in bfloat16.

`train.dtype = "bfloat16"` is mixed precision as GPU training does it (nanoGPT's train.py:
CUDA autocast to bfloat16). Both trainers (qkmlx and qktorch, single and fused) implement it
with explicit casts at the same sites rather than with torch.autocast, whose op lists differ
between the CPU and CUDA and which MLX does not have: a bfloat16 run then computes the same
thing on every device and in both backends, and crosscheck can compare them.

Every matmul takes bfloat16 inputs (its weight cast from the float32 master copy, its input
cast from whatever it gets) and returns bfloat16, as autocast's matmuls do; every other
operation keeps float32, and a bfloat16 matmul output that meets float32 (the residual add, a
norm, the loss) is promoted back. The table is what the docs print and tests check.
"""

from __future__ import annotations

BFLOAT16_POLICY = (
    # (tensor or op, dtype under train.dtype = "bfloat16", why)
    ("master weights", "float32", "the optimizer updates float32 weights; casts happen per use"),
    ("AdamW moments, gradients", "float32", "a cast's backward returns a float32 gradient"),
    ("q, k, v, o projections; MLP fc and proj", "bfloat16", "matmuls: inputs and weight cast"),
    ("attention QK^T, softmax(.)V (fused kernel)", "bfloat16", "the kernel's inputs q, k, v"),
    ("output head (tied embedding or lm_head)", "bfloat16", "a matmul; logits come out bfloat16"),
    ("MLP activation (GELU)", "bfloat16", "acts on the fc matmul's bfloat16 output"),
    ("token and position embeddings, residual stream", "float32", "a bfloat16 branch promotes"),
    ("every norm (ln_1, ln_2, ln_f, QK-norm)", "float32", "its input is cast up first"),
    ("explicit-path softmax (diagnostics, soft cap)", "float32", "scores cast up, as autocast"),
    ("cross entropy, z-loss, gradient clip", "float32", "logits cast up before the loss"),
)

PRECISIONS = ("float32", "bfloat16")

# The dtype each backend's model must produce at these points of a forward pass in each
# precision (qkmlx.model.precision_sites and qktorch.model.precision_sites read them; crosscheck's
# precision check and tests/test_models.py compare): what BFLOAT16_POLICY says, site by site.
SITES = {
    "embedding": "float32",
    "norm": "float32",
    "projection": "bfloat16",
    "qk_norm": "float32",
    "attention": "bfloat16",
    "residual": "float32",
    "logits": "bfloat16",
}


def expected_sites(dtype: str) -> dict[str, str]:
    """SITES for a run of this compute dtype (float32: every site float32)."""
    return {site: dtype if want != "float32" else want for site, want in SITES.items()}


# bfloat16 keeps 8 significant bits (7 stored): rounding to nearest is off by at most 2^-8 of
# the value. crosscheck.tolerances derives its bfloat16 bounds from this.
UNIT_ROUNDOFF = {"float32": 2.0**-24, "bfloat16": 2.0**-8}


def policy_table() -> str:
    """BFLOAT16_POLICY as a markdown table (docs/DESIGN.md quotes it; a test compares)."""
    rows = ["| tensor or op | dtype | why |", "|---|---|---|"]
    rows += [f"| {what} | {dtype} | {why} |" for what, dtype, why in BFLOAT16_POLICY]
    return "\n".join(rows)
