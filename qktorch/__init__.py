"""qktorch: the PyTorch mirror of qkmlx (CUDA, MPS and CPU)."""
