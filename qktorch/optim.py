"""AdamW (bias correction on, decoupled weight decay on 2-D weights only) and global
gradient-norm clipping, spelled out (PyTorch). Mirrors qkmlx/optim.py line for line.

Written by hand rather than taken from the framework so both backends run the same
arithmetic and share one checkpoint format (MLX's AdamW has no bias correction by default).

Multi-tensor: the parameters, their gradient and the Adam moments each live in one flat
buffer (the decayed 2-D weights first), so a step is a dozen whole-buffer ops instead of a
dozen per tensor; the model's parameters are views into the buffer, and the step writes them
through those views (two foreach ops), never through the buffer itself, so a compiled step has
no aliased inputs and CUDA graphs can capture it. Every element goes through
exactly the operations of the per-tensor formula, in the same order and precision, so the
result is bit-identical to updating tensor by tensor (tests/test_throughput.py). MLX fuses its
per-tensor graph under mx.compile instead (qkmlx/optim.py).
"""

import torch

from sweeps.core.config import TrainConfig
from sweeps.core.params import decays
from sweeps.core.schedule import decay_per_lr
from sweeps.platform.devices import async_copy
from sweeps.run.checkpoint import pack_optimizer, unpack_optimizer


def flatten(tensors, out=None) -> torch.Tensor:
    """The tensors (gradients, in the optimizer's order) as one flat buffer (into out)."""
    return torch.cat([t.reshape(-1) for t in tensors], out=out)


def to_device(host: torch.Tensor, device) -> torch.Tensor:
    """A host tensor on the device: without waiting only from pinned memory on CUDA (a
    plain .to(cuda) from pageable memory synchronizes the stream; sweeps.platform.devices.
    async_copy says where it is safe); elsewhere a plain copy."""
    if async_copy(torch.device(device).type):
        return host.pin_memory().to(device, non_blocking=True)
    return host.to(device)


def clip_gradients(grads: torch.Tensor, max_norm: float, out=None):
    """Scale gradients by min(1, max_norm / (norm + 1e-6)); return them and the pre-clip norm.
    grads: flat float32, scaled in place; out: a buffer like it for the squares. The squares
    are summed in one reduction over the buffer, not tensor by tensor: the norm may differ
    from a per-tensor sum in its last bits."""
    norm = torch.sqrt(torch.pow(grads, 2, out=out).sum())
    if max_norm <= 0:
        return grads, norm
    scale = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    return grads.mul_(scale), norm


@torch.no_grad()
def clip_qk(params: dict, maxima, tau: float, head_dim: int):
    """QK-clip (sweeps.core.interventions): after the step, the W_q and W_k rows of each head
    whose max attention logit on the step's batch (maxima [n_layer, H]) exceeded tau are
    scaled by sqrt(tau / max), so that logit comes out at tau. Scales params in place; returns
    the number of heads clipped and the largest max logit. The scale is exactly 1 elsewhere."""
    scales = torch.sqrt(tau / torch.clamp(maxima, min=tau))
    rows = torch.repeat_interleave(scales, head_dim, dim=1)  # [n_layer, n_embd]: a head's rows
    for layer in range(maxima.shape[0]):
        for proj in ("q_proj", "k_proj"):
            name = f"blocks.{layer}.attn.{proj}.weight"  # [out, in]: rows are output features
            params[name].mul_(rows[layer][:, None])
    return (maxima > tau).sum().float(), maxima.max()


class AdamW:
    def __init__(self, params: dict, train: TrainConfig):
        self.beta1 = train.beta1
        self.beta2 = train.beta2
        self.eps = train.adam_eps
        self.decay_per_lr = decay_per_lr(train)  # coupled or independent decay
        # The buffer's order: decayed (2-D) weights first, so decay is one slice.
        order = sorted(params, key=lambda name: not decays(name, params[name].shape))
        self.params = {name: params[name] for name in order}
        self.n_decayed = sum(decays(n, p.shape) for n, p in self.params.items())  # tensors
        self.flat = flatten(p.detach() for p in self.params.values())
        for p, view in zip(self.params.values(), self.views(self.flat)):
            p.data = view  # the model now trains in the buffer
        self.state = {
            "step": torch.zeros((), dtype=torch.float32, device=self.flat.device),
            "m": torch.zeros_like(self.flat),
            "v": torch.zeros_like(self.flat),
        }
        # The flat gradient and two scratch buffers: no allocation per step (on the CPU a
        # fresh buffer of this size costs page faults each time, several times the math).
        self.grad, self.a, self.b = (torch.empty_like(self.flat) for _ in range(3))

    def views(self, flat: torch.Tensor) -> list:
        """flat split into tensors shaped like the parameters, in buffer order."""
        sizes = [p.numel() for p in self.params.values()]
        return [t.view(p.shape) for t, p in zip(flat.split(sizes), self.params.values())]

    def lr_tensor(self, lr: float) -> torch.Tensor:
        """The step's scalars on the device, [lr, 1 - lr * decay_per_lr], rounded from the
        host's double precision to float32 as a Python scalar would be: a new LR is new data,
        not a new graph. On CUDA copied from pinned memory without waiting (to_device)."""
        host = torch.tensor([lr, 1 - lr * self.decay_per_lr], dtype=torch.float32)
        return to_device(host, self.flat.device)

    @torch.no_grad()
    def update(self, params: dict, grads: torch.Tensor, lr: torch.Tensor):
        """One step on params (name -> view of self.flat) in place; grads flat, lr from
        lr_tensor. Per element, in this order and in float32:
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            p = p * (1 - lr * decay_per_lr)            (2-D weights only)
            p = p - lr * (m / bias1) / (sqrt(v / bias2) + eps)
        """
        step = self.state["step"].add_(1)
        bias1 = 1 - self.beta1**step
        bias2 = 1 - self.beta2**step
        g, m, v, a, b = grads, self.state["m"], self.state["v"], self.a, self.b
        m.mul_(self.beta1).add_(torch.mul(g, 1 - self.beta1, out=a))
        v.mul_(self.beta2).add_(torch.mul(g, 1 - self.beta2, out=a).mul_(g))
        # The parameters are written through their own views, never through self.flat: a
        # compiled step that saw both would get aliased mutated inputs, which AOTAutograd
        # merges into one non-static input and CUDA graphs then skip (issue 22).
        views = list(params.values())
        torch._foreach_mul_(views[: self.n_decayed], lr[1])
        torch.div(m, bias1, out=a).mul_(lr[0])
        torch.div(v, bias2, out=b).sqrt_().add_(self.eps)
        torch._foreach_sub_(views, self.views(a.div_(b)))

    def state_numpy(self) -> dict:
        """The checkpoint format of sweeps.run.checkpoint."""
        m, v = (
            {
                name: t.numpy()
                for name, t in zip(
                    self.params, self.views(self.state[key].detach().to("cpu", copy=True))
                )
            }
            for key in "mv"
        )
        return pack_optimizer(self.state["step"].item(), m, v)

    def load_numpy(self, state: dict) -> None:
        step, m, v = unpack_optimizer(state, self.params)
        self.state["step"].fill_(step)
        for key, moments in (("m", m), ("v", v)):
            self.state[key].copy_(flatten(torch.from_numpy(moments[name]) for name in self.params))
