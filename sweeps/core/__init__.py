"""Foundations every other layer uses: errors, files, configs, presets, parameters, norms,
the LR schedule, diagnostics and formatting. Imports nothing else of sweeps/."""
