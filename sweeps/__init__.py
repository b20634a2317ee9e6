"""Backend-neutral spine of the QK-norm study: configs, data, run directories, sweeps.

Nothing here imports mlx or torch (tests/test_imports.py checks it).
"""
