"""A tiered grid, as SGLang's auto_benchmark tunes server arguments: the kernels first (MoE
backend, its activation, LM head; speculation off), then every speculative setting on the
winner of the first tier. Registered as sampler ``tiered`` by the search benchmark
(benchmarks/search_efficiency.py).
"""

from __future__ import annotations

from typing import Any

import optuna

from tuner.engines import make_engine
from tuner.space import SearchSpace
from tuner.study import feasible_best
from tuner.study.samplers import SAMPLERS


TIERS = (("moe_backend", "humming_activation", "lm_head"),
         ("speculative", "spec_steps", "spec_topk", "spec_draft_tokens"))


class TieredGrid(optuna.samplers.BaseSampler):
    def __init__(self, space: SearchSpace, seed: int | None) -> None:
        self.space = space
        self.engine = make_engine("sim")
        self.fallback = optuna.samplers.RandomSampler(seed=seed)
        self.assigned: dict[int, dict[str, Any]] = {}
        self.proposed: set[str] = set()
        self.tier = 0
        self.anchor = space.complete({})

    def _hash(self, values: dict[str, Any]) -> str:
        repaired, _ = self.engine.repair(self.space, values)
        return self.engine.canonicalize(self.space, repaired).hash()

    def _tier_configs(self, tier: int) -> list[dict[str, Any]]:
        free = set(TIERS[tier])
        out = []
        for c in self.space.iter_configs():
            if all(c.get(k) == self.anchor.get(k) for k in set(c) | set(self.anchor)
                   if k not in free):
                out.append(c)
        return out

    def _next(self, study: optuna.Study) -> dict[str, Any] | None:
        while self.tier < len(TIERS):
            for c in self._tier_configs(self.tier):
                h = self._hash(c)
                if h not in self.proposed:
                    self.proposed.add(h)
                    return c
            self.tier += 1
            best = feasible_best(study)
            if best is not None:
                self.anchor = self.space.complete({}, base=best.user_attrs["config"])
        return None

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
        return {}

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
        return {}

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        if trial.number not in self.assigned:
            nxt = self._next(study)
            self.assigned[trial.number] = nxt if nxt is not None else {}
        plan = self.assigned[trial.number]
        if name in plan:
            return plan[name]
        return self.fallback.sample_independent(study, trial, name, dist)


SAMPLERS.setdefault("tiered", lambda space, seed: TieredGrid(space, seed))
