"""Trials: launch a configuration, prove it took effect, measure it, gate it."""
