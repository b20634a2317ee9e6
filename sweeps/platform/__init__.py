"""Machine specifics: devices and their peak FLOP/s, GPU discovery, OpenBLAS for MLX on Linux,
provenance. Imports only sweeps.core."""
