"""GPU probe: measure MoE decode costs, warm the JIT cache, calibrate the simulator.

(The measurement itself, ``_gpu.py``, runs standalone on the GPU machine with torch.)"""

from tuner.probe._fit import fit
from tuner.probe._shapes import probe_shapes


__all__ = ["fit", "probe_shapes"]
