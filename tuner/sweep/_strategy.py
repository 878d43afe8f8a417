"""The default search plan: screens, a combination, then local search beside the sampler.

A space's top-level knobs (no ``when`` condition; speed role) carry most of the effect: the
MoE kernel, the LM-head precision, speculation on or off. The plan spends the first trials
on them, then searches the neighbourhood of the best configuration, where the finer knobs
(draft steps, verify window, activation precision) decide the last few percent:

1. **Screens**: after the baseline, each other value of each top-level categorical knob,
   one at a time, the rest as in the baseline (knobs that become active take their
   defaults).
2. **Combination**: the value of each top-level knob whose screen beat the baseline,
   together (knobs often help independently; when they do not, step 3 finds out). Then,
   for each knob whose runner-up screen tied its winner (TPOT intervals overlapping), the
   same combination with the runner-up instead: one launch per screen reads with a few
   percent of noise. In the search benchmark's seed 41 (docs/performance.md) a kernel
   truly 5% faster lost its screen to a slower one, and the whole search then stayed on
   the slower kernel. Likewise a knob whose screen only tied the baseline (no clear gain
   alone) is also tried in the combination: in seed 0 speculation's screen, behind the
   baseline's FP32 LM head, read no faster than the baseline, and the search never tried
   it with the fastest kernel.
2b. **Probes**: once the combinations are measured, for each ordered conditional knob with
   a wide domain (five values or more: DSPARK's gamma, 2-12; NEXTN's draft steps, 1-5), the
   best configuration so far with that knob's condition switched on (speculation set to
   its algorithm) and the knob at its domain's quartiles. One step at a time from the
   default, a noisy reading can send the walk the wrong way (search benchmark seed 100:
   gamma 8 -> 9 -> 10 while the truth is best at 4), and an algorithm whose default
   setting screened slower than the baseline is never tried again: on prose, NEXTN's
   screen at 3 draft steps behind the baseline's kernel read 19% slower than the
   baseline, while NEXTN at one step with the best kernel and head is truly 10% faster
   than anything without speculation. Probing from the best configuration, not from the
   first combination or the screen, carries its kernel and head along (seed 122: marlin's
   screen beat humming's by noise; seed 111: NEXTN read faster than DSPARK at gamma 8,
   15% off DSPARK's best).
3. **Local search**: unmeasured neighbours of the best feasible configuration
   (:mod:`tuner.sweep._neighbours`: one knob at a time, and coupled numeric siblings, such as
   draft steps and verify window, moved together); moves of conditional knobs first (the
   screens already measured each top-level value). When the best's neighbourhood is
   measured, the neighbourhoods of its ties (intervals overlapping) follow: the best may
   owe its place to one lucky reading. Every ``explore_every``-th proposal is left to the
   sampler (TPE by default) so the search never stays in one basin.

   Three rules keep noise from steering it (search benchmark on the twin of issue 32,
   where eight configurations lie within 5% of the best and one launch reads with ~3%
   noise; docs/performance.md):

   - **Moves are priced by measured pairs** (:func:`move_effects`): two measured
     configurations that differ by exactly one move (speculation off, the other kernel,
     the FP32 head) price it; neighbours are tried cheapest first, and one priced more than
     :attr:`StagedPlan.HOPELESS` slower is not proposed. A move never measured counts as
     even (a draft-length step is tried).
   - **The fastest so far is launched again** (:class:`Again`, the finals'
     ``contender`` rule) before the search moves around it: one lucky reading otherwise
     takes the center.
   - **Nothing left: the finals start** (:data:`EXHAUSTED`): once every neighbour of the
     centers is measured or priced slow, a sweep with a trial budget races its finalists
     over what is left of it rather than spending it on the sampler's long shots.

Measured against exhaustive truth in ``benchmarks/search_efficiency.py``
(docs/performance.md). The plan only decides which configuration to enqueue; the study
records every trial the same way, so Optuna's samplers learn from all of them.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from typing import Protocol

from tuner.space import SearchSpace
from tuner.space import condition_matches
from tuner.sweep._neighbours import neighbours


#: (config values) -> canonical hash; raises when the engine refuses the configuration
HashOf = Callable[[dict[str, Any]], str]


def screens(space: SearchSpace, first: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The baseline with one top-level categorical knob changed, for each other value;
    the knobs ``first`` names (capacity, when a load regime searches it) before the others,
    their largest values first: how many requests run together decides a regime's answer,
    and its first launches then say whether anything can meet its SLA."""
    base = space.complete({})
    held = set(space.capacity_knobs)
    out = []
    for name in sorted(space.order, key=lambda n: n not in first):
        k = space.knob(name)
        if k.when or name in held or k.type not in ("categorical", "bool"):
            continue
        values = space.domain(name) or []
        for v in (values[::-1] if name in first else values):
            if v != base.get(name):
                out.append(space.complete({name: v}, base={n: x for n, x in base.items()
                                                            if n == name or not
                                                            space.knob(n).when}))
    return out


#: a move (knob, from, to) for each knob two configurations set differently
Move = tuple[tuple[str, str, str], ...]


def move_of(space: SearchSpace, a: dict[str, Any], b: dict[str, Any]) -> Move:
    """What changes from ``a`` to ``b``, capacity knobs aside (they change no speed); a
    knob that only comes or goes with its condition (DSPARK's gamma when speculation is
    turned off) is part of its parent's move, not a move of its own."""
    held = set(space.capacity_knobs)
    changed = sorted((n, repr(a.get(n)), repr(b.get(n))) for n in set(a) | set(b)
                     if n not in held and a.get(n) != b.get(n))
    both = [c for c in changed if c[0] in a and c[0] in b]
    return tuple(both or changed)


class _Measured(Protocol):
    """What pricing a move reads of a measured trial (a :class:`tuner.study.TrialSummary`)."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def tpot_ms(self) -> float | None: ...


def move_effects(space: SearchSpace, measured: Iterable[_Measured]) -> dict[Move, float]:
    """Move -> the median TPOT ratio over measured pairs that differ by exactly that move
    (either way round): the screens measured each top-level value beside the baseline, so
    "speculation off" or "the other kernel" has a known price before it is tried again
    from the best configuration."""
    rows = [(s.config, math.log(s.tpot_ms)) for s in measured if s.tpot_ms]
    logs: dict[Move, list[float]] = {}
    for i, (a, log_a) in enumerate(rows):
        for b, log_b in rows[i + 1:]:
            logs.setdefault(move_of(space, a, b), []).append(log_b - log_a)
            logs.setdefault(move_of(space, b, a), []).append(log_a - log_b)
    return {m: math.exp(statistics.median(v)) for m, v in logs.items() if m}


class Exhausted:
    """Every neighbour of the local search's centers is measured, or priced slow by
    measured pairs (:data:`StagedPlan.HOPELESS`): the finals may start now."""

    def __repr__(self) -> str:
        return "EXHAUSTED"


EXHAUSTED = Exhausted()


@dataclass(frozen=True)
class Again:
    """Launch trial ``number``'s configuration again before the local search moves on
    (:meth:`tuner.sweep._finals.Finals.contender`)."""

    number: int


class StagedPlan:
    """Decides, before each proposal, whether to enqueue a planned configuration."""

    #: a neighbour whose move measured pairs price this much slower is not proposed:
    #: speculation off after the screens showed it 1.7x slower, the other kernel 15%
    #: slower (search benchmark seed 113: a lucky reading of the other kernel, truly 5%
    #: behind, then won the finals)
    HOPELESS = 1.10

    def __init__(self, space: SearchSpace, hash_of: HashOf, *, seed: int | None,
                 explore_every: int = 3, first: tuple[str, ...] = ()) -> None:
        self.space, self.hash_of = space, hash_of
        self.rng = random.Random(seed)
        self.explore_every = explore_every
        self.screens = screens(space, first)
        self.capacity = frozenset(first)      # searched for a load regime: judged by goodput
        self.combos: list[dict[str, Any]] | None = None    # planned once the screens are in
        self.probes: list[dict[str, Any]] | None = None    # planned once the combos are in
        self.issued: set[str] = set()
        self.last: str | None = None
        self.local_proposals = 0

    def not_taken(self) -> None:
        """The last planned configuration was not enqueued (a queued retry went first):
        plan it again later."""
        if self.last is not None:
            self.issued.discard(self.last)
            self.last = None

    def _hash(self, values: dict[str, Any]) -> str | None:
        try:
            return self.hash_of(values)
        except Exception:   # a configuration the engine refuses is not planned
            return None

    def next(self, measured: dict[str, Any], best: Any, baseline: Any,
             also: Callable[[], list[tuple[Any, str]]] | None = None,
             again: Callable[[], int | None] | None = None
             ) -> tuple[dict[str, Any], str, str | None] | Again | Exhausted | None:
        """The configuration to enqueue next, why (``screen``, ``combine``, ``neighbour``)
        and the load regime it serves (None: batch 1), :class:`Again` (a contender launched
        again first), or None to let the sampler propose. ``measured``: config hash ->
        summary; ``best``/``baseline``: summaries (or None); ``also``: other centers the
        local search takes turns with (a load regime's best, with the regime's name), every
        other local step: asked for only then (it reads the whole study)."""
        if baseline is None:
            return None
        seen = set(measured) | self.issued
        for cfg in self.screens:
            h = self._hash(cfg)
            if h is not None and h not in seen:
                return self._issue(cfg, h, "screen")
        if self.combos is None:
            pending = [h for c in self.screens if (h := self._hash(c)) and h not in measured]
            if pending:
                return None    # a screen is still running (several slots): sampler meanwhile
            self.combos = self._combinations(measured, baseline)
        for combo in self.combos:
            h = self._hash(combo)
            if h is not None and h not in seen:
                return self._issue(combo, h, "combine")
        if best is None:
            return None
        if self.probes is None:
            if [h for c in self.combos if (h := self._hash(c)) and h not in measured]:
                return None    # a combination is still running: sampler meanwhile
            self.probes = self._probes(best.config)
        for probe in self.probes:
            h = self._hash(probe)
            if h is not None and h not in seen:
                return self._issue(probe, h, "probe")
        if again is not None and (number := again()) is not None:
            return Again(number)
        self.local_proposals += 1
        if self.explore_every and self.local_proposals % self.explore_every == 0:
            return None
        own: list[tuple[Any, str | None]] = [(s, None) for s in self._incumbents(measured, best)]
        centers = list(also()) if also is not None else []
        incumbents = ([*centers, *own] if self.local_proposals % 2 == 1 else [*own, *centers])
        effects = move_effects(self.space, measured.values())
        for inc, serves in incumbents:
            cands = neighbours(self.space, inc.config)
            self.rng.shuffle(cands)
            # the screens already measured every top-level value: the conditional knobs
            # the incumbent turned on (draft steps, verify window, activation) come first;
            # before that, what measured pairs predict (an unmeasured move counts as even)
            cands.sort(key=lambda c: self._moves_top_level(inc.config, c))
            ahead = [(effects.get(move_of(self.space, inc.config, c), 1.0), c) for c in cands]
            ahead.sort(key=lambda pc: pc[0])
            for ratio, cfg in ahead:
                if ratio > self.HOPELESS:
                    break               # the rest measured as slow elsewhere: the sampler's
                h = self._hash(cfg)
                if h is not None and h not in seen:
                    return self._issue(cfg, h, "neighbour", serves)
        return EXHAUSTED

    @staticmethod
    def _incumbents(measured: dict[str, Any], best: Any) -> list[Any]:
        """The best configuration, then every feasible one whose TPOT interval overlaps
        its (a tie it may owe to a lucky reading), fastest first: a neighbourhood the best
        exhausted leaves the search among the ties', not stuck."""
        ties = [s for s in measured.values() if s.feasible and s.tpot_ms is not None
                and s.number != best.number and _ties(s, best)]
        return [best, *sorted(ties, key=lambda s: s.tpot_ms)]

    def _moves_top_level(self, incumbent: dict[str, Any], cand: dict[str, Any]) -> bool:
        changed = {n for n in set(incumbent) | set(cand) if incumbent.get(n) != cand.get(n)}
        return any(not self.space.knob(n).when for n in changed)

    def _issue(self, cfg: dict[str, Any], h: str, why: str, serves: str | None = None
               ) -> tuple[dict[str, Any], str, str | None]:
        self.issued.add(h)
        self.last = h
        return cfg, why, serves

    def _combinations(self, measured: dict[str, Any], baseline: Any) -> list[dict[str, Any]]:
        """Each top-level knob at the value whose screen was fastest and feasible, when that
        beat the baseline; then that combination with one knob at its runner-up value, for
        each knob whose runner-up also beat the baseline and ties the winner (intervals
        overlapping); then, for each knob none of whose screens beat the baseline but one
        tied it, the combination with that value too (a change that helps little alone,
        speculation behind an FP32 LM head, may help much beside the others). Empty when
        fewer than two knobs had a winner (one winner alone was its own screen)."""
        base = self.space.complete({})
        by_knob: dict[str, list[tuple[float, Any, Any]]] = {}
        unclear: dict[str, tuple[float, Any]] = {}
        for cfg in self.screens:
            s = measured.get(self._hash(cfg) or "")
            if s is None or not s.feasible or s.tpot_ms is None or baseline.tpot_ms is None:
                continue
            (name,) = [n for n in cfg if not self.space.knob(n).when and cfg[n] != base.get(n)]
            if name in self.capacity:      # no speed of its own: the regimes' goodput decides
                served, served_base = _served(s), _served(baseline)
                if served is not None and served_base is not None and served > served_base:
                    by_knob.setdefault(name, []).append((-served, cfg[name], s))
                continue
            if s.tpot_ms < baseline.tpot_ms:
                by_knob.setdefault(name, []).append((s.tpot_ms, cfg[name], s))
            elif _ties(s, baseline) and s.tpot_ms < unclear.get(name, (math.inf, None))[0]:
                unclear[name] = (s.tpot_ms, cfg[name])
        if len(by_knob) < 2:
            return []
        ranked = {n: sorted(v, key=lambda x: x[0]) for n, v in by_knob.items()}
        chosen = {n: v[0][1] for n, v in ranked.items()}
        out = [self._complete(chosen, base)]
        for name, screened in ranked.items():
            if len(screened) > 1 and (name in self.capacity
                                      or _ties(screened[0][2], screened[1][2])):
                out.append(self._complete({**chosen, name: screened[1][1]}, base))
        for name, (_, value) in unclear.items():
            if name not in chosen:
                out.append(self._complete({**chosen, name: value}, base))
        return out

    #: ordered conditional knobs with at least this many values get quartile probes
    PROBE_MIN_VALUES = 5

    def _probes(self, best: dict[str, Any]) -> list[dict[str, Any]]:
        """For each wide ordered conditional knob, ``best`` with the knob's condition
        switched on and the knob at its domain's quartiles."""
        out = []
        for name in self.space.order:
            k = self.space.knob(name)
            dom = self.space.domain(name)
            if (not k.when or k.type not in ("int", "float") or dom is None
                    or len(dom) < self.PROBE_MIN_VALUES or name in self.space.capacity_knobs):
                continue
            on = dict(best)
            for parent, expected in k.when.items():
                if not condition_matches(expected, on.get(parent)):
                    on[parent] = expected[0] if isinstance(expected, list) else expected
            try:
                plain = self._hash(self.space.complete(on, base=on))
            except Exception:       # the condition cannot be switched on here
                continue
            for v in dict.fromkeys((dom[len(dom) // 4], dom[(3 * len(dom)) // 4])):
                try:
                    probe = self.space.complete({**on, name: v}, base=on)
                except Exception:   # a probe the space cannot complete is no probe
                    continue
                if self._hash(probe) not in (None, plain):   # not resolved away (a verify
                    out.append(probe)      # window forced to steps + 1 under top-k 1)
        return out

    def _complete(self, chosen: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        return self.space.complete(chosen, base={n: x for n, x in base.items()
                                                 if n in chosen or not self.space.knob(n).when})


def _served(s: Any) -> float | None:
    """A launch's goodput (requests within the SLA a second) summed over the load regimes
    it measured; None: it measured none. Not gated on its p95: a screen runs the slow
    baseline, and the faster combination it joins has the lower tail; the regime's pick
    is gated."""
    figures = list((getattr(s, "regimes", None) or {}).values())
    if not figures:
        return None
    return sum(g.goodput_rps or 0.0 for g in figures)


def _ties(a: Any, b: Any) -> bool:
    """Whether two summaries' TPOT intervals overlap (one without an interval stands for
    its reading alone; none for ``a``: no tie claimed)."""
    if not a.tpot_ci95:
        return False
    lo, hi = (b.tpot_ci95 or [b.tpot_ms, b.tpot_ms])[:2]
    return a.tpot_ci95[0] <= hi and lo <= a.tpot_ci95[1]
