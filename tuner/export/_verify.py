"""``tuner verify``: is a running server what a profile says it should be?

Every expected ``/server_info`` value first (the settings that must have taken effect),
optionally the expected log lines (``--log``), then a short verify workload whose accept
length and TPOT must fall in the profile's ranges: the start-up check the published lesson
asks for (an FP8 LM head whose draft cannot use it shows accept length 1.00 and nothing
else). A profile exported for a load regime also sends the verify prompts at the regime's
users and checks each p95 bound of its SLA.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from tuner.engines import RequestFailed
from tuner.engines import ServerProtocol
from tuner.space import Workload
from tuner.trial import DERIVED_TWIN
from tuner.trial import MISSING
from tuner.trial import aggregate
from tuner.trial import lookup
from tuner.trial import run_requests
from tuner.trial import same_value
from tuner.workloads import KINDS
from tuner.workloads import Context
from tuner.workloads import make_workload
from tuner.workloads import vocab_size


@dataclass
class Check:
    name: str
    passed: bool | None          # None: informational
    expected: str
    observed: str
    #: Not checked for want of evidence (e.g. a log-only knob without --log): not a pass,
    #: and verify exits non-zero.
    unverified: bool = False


def _log_checks(expect: dict[str, Any], log_text: str | None) -> list[Check]:
    """One check per knob whose evidence is a log line; UNVERIFIED without the log."""
    entries = expect.get("log_evidence")
    if entries is None:   # a profile from before per-knob log evidence
        entries = [{"knob": "log lines", "log": expect.get("log") or [],
                    "log_absent": expect.get("log_absent") or []}]
    out = []
    for e in entries:
        patterns = [*e.get("log", []), *e.get("log_absent", [])]
        if not patterns:
            continue
        name = f"{e['knob']}={e.get('value')}" if "value" in e else e["knob"]
        if log_text is None:
            out.append(Check(f"{name} (log evidence)", None, f"{len(patterns)} log line(s)",
                             "UNVERIFIED: part of its evidence is the server log; pass "
                             "--log FILE", unverified=True))
            continue
        missing = [p for p in e.get("log", []) if re.search(p, log_text, re.M) is None]
        present = [p for p in e.get("log_absent", []) if re.search(p, log_text, re.M)]
        problems = [f"/{p}/ absent" for p in missing] + [f"/{p}/ present" for p in present]
        out.append(Check(f"{name} (log evidence)", not problems,
                         ", ".join(f"/{p}/" for p in patterns), "; ".join(problems) or "seen"))
    return out


def _read_info(protocol: ServerProtocol, url: str, headers: dict[str, str]
               ) -> dict[str, Any] | Check:
    try:
        with httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=30) as client:
            return protocol.server_info(client)
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        return Check("server reachable", False, "HTTP 200", f"HTTP {code}" + (
            " (wrong or missing --api-key)" if code == 401 else ""))
    except (httpx.HTTPError, RequestFailed, ValueError) as exc:
        return Check("server reachable", False, url, f"{exc.__class__.__name__}: {exc}")


def verify(profile: dict[str, Any], url: str, protocol: ServerProtocol, *,
           api_key: str | None = None, log_text: str | None = None, requests: int = 8,
           gsm8k: str | None = None) -> list[Check]:
    """Every check of a running server at ``url`` against ``profile`` (profile.yaml)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    expect = profile.get("expect") or {}
    info = _read_info(protocol, url, headers)
    if isinstance(info, Check):
        return [info]
    checks = _setting_checks(expect, info)
    version = (profile.get("engine") or {}).get("version")
    if version:
        checks.append(Check("engine version", None, str(version), str(protocol.version(info))))
    checks += _log_checks(expect, log_text)
    for knob, why in (expect.get("unobservable") or {}).items():
        checks.append(Check(f"{knob} (unobservable)", None, "-", why))
    if requests > 0:
        checks += _workload_checks(profile, url, headers, protocol, info, requests, gsm8k)
    return checks


def _setting_checks(expect: dict[str, Any], info: dict[str, Any]) -> list[Check]:
    checks = []
    for field, want in (expect.get("server_info") or {}).items():
        got = lookup(info, field)
        if got is MISSING:
            checks.append(Check(f"server_info {field}", False, repr(want), "no such field"))
        else:
            checks.append(Check(f"server_info {field}", same_value(want, got), repr(want),
                                repr(got)))
    for field, want in (expect.get("server_info_if_present") or {}).items():
        got = lookup(info, field)
        if got is not MISSING:      # fixed flags: checked where the server shows them
            checks.append(Check(f"server_info {field} (fixed)", same_value(want, got),
                                repr(want), repr(got)))
        else:                       # said, not skipped in silence
            checks.append(Check(f"server_info {field} (fixed)", None, repr(want),
                                "not shown by this server: not compared"))
    return checks


def _workload_checks(profile: dict[str, Any], url: str, headers: dict[str, str],
                     protocol: ServerProtocol, info: dict[str, Any], requests: int,
                     gsm8k: str | None) -> list[Check]:
    """A short run of the measured workload's kind and shape: accept length and TPOT."""
    expect = profile.get("expect") or {}
    wl = Workload.model_validate(profile.get("workload") or {})
    needs_gsm8k = wl.kind == "gsm8k" or "math" in wl.shares()
    kind = wl.kind if wl.kind in ("gsm8k", "code", "chat", "mix") and (
        gsm8k or not needs_gsm8k) else "synthetic"
    # The verify workload has the measured workload's kind and shape (a mix, its shares);
    # a profile measured on GSM8K checked without GSM8K data, or on a prompts file, gets a
    # synthetic one, whose TPOT is not comparable with the bound.
    comparable = kind == wl.kind
    shape = {} if comparable else {"input_len": 512, "output_len": 256}
    check = wl.model_copy(update={"kind": kind, "questions": requests,
                                  "mix": wl.mix if kind == "mix" else None,
                                  "warmup_requests": 1, "max_tokens": min(wl.max_tokens, 1024),
                                  **shape})
    vocab = None
    if KINDS[kind].needs_vocab:
        vocab = profile.get("vocab_size") or vocab_size(str(profile.get("model", "")), None)
    workload = make_workload(check, Context(gsm8k=gsm8k, vocab_size=vocab))
    prepared = workload.prepare()
    scale = protocol.time_scale(info)
    try:
        run_requests(url, headers, protocol, prepared.warmup, scale=scale)
        records = run_requests(url, headers, protocol, prepared.measured, workload=workload,
                               scale=scale)
    except RequestFailed as exc:
        return [Check("verify workload", False, f"{requests} requests", str(exc))]
    agg = aggregate(records, check.shares() or None)
    checks = []
    al = expect.get("accept_length")
    if al is not None:
        got = agg.accept_length or 1.0
        checks.append(Check("accept length (verify workload)", got >= al["min"],
                            f">= {al['min']:.2f} (measured {al['measured']:.2f})",
                            f"{got:.2f}"))
    tp = expect.get("tpot_ms")
    if tp is not None and agg.tpot_ms is not None:
        twin = protocol.twin(info)         # a simulator's twin DERIVED from config.json
        name = f"TPOT (verify workload, {kind}" + (f", {twin} twin)" if twin == DERIVED_TWIN
                                                    else ")")
        if comparable:
            checks.append(Check(name, agg.tpot_ms <= tp["max"],
                                f"<= {tp['max']:.2f} ms (measured {tp['measured']:.2f})",
                                f"{agg.tpot_ms:.2f} ms"))
        else:
            checks.append(Check(name, None, f"not compared: measured on {wl.kind} "
                                f"({tp['measured']:.2f} ms); pass --gsm8k to compare",
                                f"{agg.tpot_ms:.2f} ms"))
    if profile.get("regime"):
        checks += _regime_checks(profile["regime"], url, headers, protocol,
                                 prepared.measured, scale, comparable)
    return checks


def _regime_checks(stored: dict[str, Any], url: str, headers: dict[str, str],
                   protocol: ServerProtocol, prompts: list[Any], scale: float,
                   comparable: bool) -> list[Check]:
    """A profile exported for a load regime (``stored``: its ``regime``, the pick's pooled
    record there): the verify workload's prompts sent at the regime's users (twice over),
    each p95 bound of its SLA checked on the running server."""
    from tuner.space import Regime
    from tuner.space import Sla
    from tuner.study.regimes import RegimeRecord
    from tuner.trial import measure_regime

    g = RegimeRecord.model_validate(stored)
    regime = Regime(name=g.name, concurrency=g.concurrency, requests=2 * g.concurrency,
                    sla=Sla.model_validate(g.sla) if g.sla else None)
    r = measure_regime(url, headers, protocol, prompts, regime, scale=scale,
                       timeout_s=3600.0)
    name = f"regime {regime.name} ({g.concurrency} users)"
    if r.status != "ok":
        return [Check(name, False, "every request served", r.message or "failed")]
    out = []
    for key, got, measured, unit in (("p95_tpot_ms", r.tpot_p95_ms, g.tpot_p95_ms, "ms"),
                                     ("p95_ttft_s", r.ttft_p95_s, g.ttft_p95_s, "s")):
        bound = (g.sla or {}).get(key)
        if bound is None or got is None:
            continue
        label = f"{name}: {key.split('_')[1].upper()} p95"
        was = f" (measured {measured:.3g})" if measured is not None else ""
        out.append(Check(label, got <= bound if comparable else None,
                         f"<= {bound:g} {unit}{was}" + ("" if comparable else
                                                        ": not compared, another workload"),
                         f"{got:.3g} {unit}"))
    return out
