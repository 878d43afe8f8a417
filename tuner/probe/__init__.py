"""GPU probe: measure MoE decode costs, warm the JIT cache, calibrate the simulator."""
