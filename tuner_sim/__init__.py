"""A calibrated, drop-in SGLang stand-in: a DGX Spark (or H200) serving Ling-3.0-flash.

Launched like SGLang (``python -m tuner_sim.fork serve <sglang flags>``), never imported by
the tuner.
"""
