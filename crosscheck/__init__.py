"""crosscheck: prove that qkmlx and qktorch compute the same thing before a result is trusted.

For one model config, in float32 on the CPU, both trainers get identical numpy weights and
identical batches; crosscheck compares logits, one step's loss and gradients, N training
steps (losses, gradient norms, final diagnostics) and a checkpoint moved between backends.
"""
