"""A sweep: specs, grid growth, the sweep directory, executors, the runner, status, estimates."""
