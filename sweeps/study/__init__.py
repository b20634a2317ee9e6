"""The study's mathematics and rules (docs/STUDY.md): paired bounds, critical LR, eta_max,
sensitivity, the necessity rule."""
