"""Reports: the front, the leaderboard, failures, per-knob effects, plots."""
