"""Workloads trials are measured on: GSM8K few-shot (accuracy + speed) and synthetic."""
