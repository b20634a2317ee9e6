"""One run: the Trainer protocol and backend registry, the training loop both backends share,
the run directory's whole life, how a run ends, the starting attention temperature."""
