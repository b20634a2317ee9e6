"""Backend-neutral spine of the QK-norm study: configs, data, run directories, sweeps.

Nothing here imports mlx or torch, nor figures, crosscheck or a trainer package
(tests/test_imports.py checks it); docs/DESIGN.md describes the layers.
"""
