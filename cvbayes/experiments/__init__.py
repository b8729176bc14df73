"""Re-runs of the thesis experiments."""
