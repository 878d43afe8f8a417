"""Workloads trials are measured on: GSM8K few-shot (accuracy + speed) and synthetic, and
the vocabulary bound of synthetic prompts."""

from tuner.workloads import gsm8k
from tuner.workloads.vocab import synthetic_id_range
from tuner.workloads.vocab import vocab_size


__all__ = ["gsm8k", "synthetic_id_range", "vocab_size"]
