"""The finals' ranking: each configuration's TPOT estimated from its own launches and from
its one-move neighbours, each priced by the other pairs that made the same move.

A finalist measured once or twice carries its luck: in the search benchmark (seed 112,
``docs/performance.md``) the BF16-head configuration that is truly fastest read 3.6% slow
over three launches, its FP32-head neighbour (truly 5.2% slower) read 2.8% fast over four,
and the pooled means alone crowned the neighbour. The screens had measured what the FP32
head costs many times over. So the finals rank on a precision-weighted mean, in log TPOT,
of

- the configuration's own launches (variance ``sd**2 / launches``), and
- for each measured configuration one move away (:func:`tuner.sweep._strategy.move_of`, a
  child knob moving with its parent), that neighbour's mean plus the move's price: the
  median log ratio over the other measured pairs that differ by the same move (variance
  ``sd**2 / its launches + sd**2 * pi / (2 * pairs) + TAU**2``: its own noise, the
  median's, and how much a move's price varies from one configuration to another).

``sd`` is the launches' spread in log TPOT, pooled over every configuration launched twice
or more. The weighted mean moves the configuration's own mean by as much as it moves its
own log mean; without such a spread, or without a priced neighbour, a configuration ranks
on its own mean. The estimate only ranks; what a pick reports is still its own launches' mean
(:mod:`tuner.study._pooled`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from tuner.space import SearchSpace
from tuner.study.pooled import Estimate


#: how much one move's price (log TPOT ratio) varies between the configurations it is made
#: from (ASSUMED; the benchmark's FP32 head costs 9% without speculation and 5% with it)
TAU = 0.03


def log_spread(est: dict[int, Estimate]) -> float | None:
    """The launches' standard deviation in log TPOT, pooled over the configurations with two
    or more launches; None without any."""
    parts = [(len(e.readings) - 1, statistics.variance([math.log(x) for x in e.readings]))
             for e in est.values() if len(e.readings) > 1]
    dof = sum(d for d, _ in parts)
    return math.sqrt(sum(d * v for d, v in parts) / dof) if dof else None


def borrowed(space: SearchSpace, configs: dict[int, dict[str, Any]], est: dict[int, Estimate],
             numbers: list[int], tau: float = TAU) -> dict[int, float]:
    """Trial number -> the estimate above, in ms, for each of ``numbers`` (its own mean
    where nothing can be borrowed)."""
    from tuner.sweep._strategy import move_of

    sd = log_spread(est)
    mean = {n: statistics.fmean(math.log(x) for x in e.readings or (e.tpot_ms,))
            for n, e in est.items()}
    if sd is None or not sd:
        return {n: est[n].pooled_ms for n in numbers}
    known = [n for n in est if n in configs]
    moves: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
    for i, a in enumerate(known):
        for b in known[i + 1:]:
            moves.setdefault(move_of(space, configs[a], configs[b]), []).append((a, b))
    out = {}
    for n in numbers:
        own = len(est[n].readings) or 1
        weights, values = [own / sd**2], [mean[n]]
        for m in known if n in configs else []:
            move = move_of(space, configs[m], configs[n]) if m != n else ()
            if len(move) != 1:
                continue
            price = _price(moves, move, mean, skip={m, n})
            if price is None:
                continue
            logs, pairs = price
            var = sd**2 / (len(est[m].readings) or 1) + sd**2 * math.pi / (2 * pairs) + tau**2
            weights.append(1 / var)
            values.append(mean[m] + logs)
        shift = sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)
        out[n] = est[n].pooled_ms * math.exp(shift - mean[n])    # its own mean when alone
    return out


def _price(moves: dict[tuple[Any, ...], list[tuple[int, int]]], move: tuple[Any, ...],
           mean: dict[int, float], skip: set[int]) -> tuple[float, int] | None:
    """(median log ratio, pairs) of ``move`` over the measured pairs that make it, either
    way round, none of them in ``skip``; None without such a pair."""
    reverse = tuple((k, b, a) for k, a, b in move)
    logs = [mean[b] - mean[a] for a, b in moves.get(move, []) if not {a, b} & skip]
    logs += [mean[a] - mean[b] for a, b in moves.get(reverse, []) if not {a, b} & skip]
    return (statistics.median(logs), len(logs)) if logs else None


def borrowing(space: SearchSpace) -> Callable[..., dict[int, float]]:
    """:func:`borrowed` for ``space``."""
    return lambda configs, est, numbers: borrowed(space, configs, est, numbers)
