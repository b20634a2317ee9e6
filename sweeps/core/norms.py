"""The QK-norm kinds, each declared once: its config value, parameters, display name, colour.

Adding a kind is one entry here plus one branch in each backend's `make_norm`
(qkmlx/model.py, qktorch/model.py). Everything else (config validation, parameter shapes,
crosscheck, tables and chart colours) reads this registry, and an unknown kind is refused
everywhere with the list of known ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.core.errors import ConfigError


@dataclass(frozen=True)
class QKNorm:
    name: str  # the value of model.qk_norm
    display: str  # how tables and legends name it
    color: str  # its colour in every chart (Okabe-Ito, colour-blind safe)
    has_params: bool  # True: q_norm and k_norm, each a gain of shape (head_dim,) per layer


QK_NORMS: dict[str, QKNorm] = {
    k.name: k
    for k in (
        QKNorm("none", "off", "#D55E00", has_params=False),  # vermillion
        QKNorm("rms", "on (rms)", "#0072B2", has_params=True),  # blue
        QKNorm("layernorm", "on (layernorm)", "#56B4E9", has_params=True),  # sky blue
    )
}


def qk_norm(name: str) -> QKNorm:
    """The registered kind called `name`; a ConfigError naming the known ones otherwise."""
    if name not in QK_NORMS:
        raise ConfigError(f"unknown QK-norm kind '{name}'; choose one of: {', '.join(QK_NORMS)}")
    return QK_NORMS[name]


def qk_norm_params(name: str, head_dim: int) -> dict[str, tuple[int, ...]]:
    """The parameters a kind adds to each attention layer, by name within the layer."""
    if not qk_norm(name).has_params:
        return {}
    return {"attn.q_norm.weight": (head_dim,), "attn.k_norm.weight": (head_dim,)}


def qk_order(name: str) -> tuple:
    """Sort key: registry order (off first), unknown names last, alphabetically."""
    names = list(QK_NORMS)
    return (names.index(name) if name in names else len(names), name)


def unbuilt(kind: str, backend: str) -> ConfigError:
    """What a backend's make_norm raises for a kind it cannot build: an unknown kind gets the
    list of known ones, a registered kind the file that lacks its branch."""
    if kind not in QK_NORMS:
        return ConfigError(f"unknown norm kind '{kind}'; choose one of: {', '.join(QK_NORMS)}")
    return ConfigError(
        f"norm kind '{kind}' is registered in sweeps/core/norms.py but "
        f"qk{backend}/model.py's make_norm has no branch for it; add one"
    )
