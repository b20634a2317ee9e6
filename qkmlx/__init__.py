"""qkmlx: the primary trainer, in MLX (Apple Silicon, Linux CPU and CUDA)."""
