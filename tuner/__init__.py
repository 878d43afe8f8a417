"""tuner: find the fastest SGLang launch configuration for a MoE model without losing accuracy."""

__version__ = "0.1.0"
