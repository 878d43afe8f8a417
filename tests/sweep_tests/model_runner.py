"""A stand-in trial runner that answers instantly from the simulator's own models.

Not a product part: tests of the driver's bookkeeping and the sampler benchmark use it to
run hundreds of trials in seconds. It resolves each LaunchPlan exactly as the simulator
server does (its argparse and resolution rules, its settings, its memory model) and returns
the model's expected TPOT with lognormal noise, the configured accuracy drawn per question,
and the model's accept length. The real path (Ray tasks, server processes) is tested in
test_sweep.py.
"""

from __future__ import annotations

import random
from datetime import UTC
from datetime import datetime
from typing import Any

from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.trial import TrialResult
from tuner.trial._gate import evaluate
from tuner.trial._run import TrialPruned
from tuner.trial._run import _check_early
from tuner.trial._stats import Aggregates
from tuner.trial._stats import Interval
from tuner.trial._stats import wilson
from tuner_sim import args as sim_args
from tuner_sim.args import LaunchError
from tuner_sim.memory import plan_memory
from tuner_sim.perf import PerfModel
from tuner_sim.perf import Workload
from tuner_sim.perf import settings_from
from tuner_sim.profiles import load_machine
from tuner_sim.profiles import load_model_for_path


class InstantRunner(TrialRunner):
    """A runner whose trial is answered on submit by ``_run``: it is done at the next poll."""

    def __init__(self, slots: int = 1) -> None:
        self.slots = slots
        self.done: list[Outcome] = []
        self._inflight: list[int] = []

    def _run(self, job: TrialJob) -> TrialResult:
        raise NotImplementedError

    @property
    def inflight(self) -> list[int]:
        return list(self._inflight)

    def submit(self, job: TrialJob) -> None:
        self._inflight.append(job.key)
        self.done.append(Outcome(job.key, "result", result=self._run(job)))

    def poll(self, timeout: float) -> list[Outcome]:
        out, self.done = self.done, []
        for o in out:
            self._inflight.remove(o.key)
        return out

    def cancel(self, key: int) -> None:
        self._inflight.remove(key)
        self.done = [o for o in self.done if o.key != key]

    def close(self) -> None:
        self._inflight.clear()


class ModelRunner(InstantRunner):
    def __init__(self, *, slots: int = 1, seed: int = 0, noise: float = 0.01,
                 lm_head_module_shared: bool = True, questions: int = 60) -> None:
        super().__init__(slots)
        self.rng = random.Random(seed)
        self.noise = noise
        self.shared = lm_head_module_shared
        self.questions = questions
        self.launched: list[dict] = []

    def _run(self, job: TrialJob) -> TrialResult:
        plan = job.engine.plan(job.space, job.config)
        self.launched.append(job.config.as_dict())
        ns = sim_args.build_parser().parse_args(plan.argv[plan.argv.index("--model-path"):])
        machine = load_machine(job.space.spec.machine.id)
        model = load_model_for_path(job.space.spec.model.path)
        res = TrialResult(
            tuner_version="test", status="ok", space=job.space.name, machine=machine.id,
            config=job.config.as_dict(), config_hash=job.config.hash(), plan=plan,
            engine=job.engine.name, simulated=True, workload=job.options.workload.model_dump(),
            started_at=datetime.now(UTC).isoformat(), host="model")
        try:
            a = sim_args.resolve(ns, architecture=model.architecture,
                                 capability=machine.compute_capability,
                                 model_context=model.context_length, env=plan.env,
                                 memory_gb=machine.memory_gib).args
            mem = plan_memory(machine, model, a)
            settings = settings_from(a, plan.env.get, self.shared)
        except LaunchError as exc:
            res.status, res.reason, res.message = "failed", "oom", exc.message  # type: ignore[assignment]
            return res
        if mem.hangs:
            res.status, res.reason, res.message = "failed", "startup_timeout", "hang"  # type: ignore[assignment]
            return res
        pm = PerfModel(machine, model, settings)
        tpot = pm.expected_tpot_ms(Workload("sampled", 1600)) * self.rng.lognormvariate(
            0, self.noise)
        acc = model.gsm8k.accuracy
        if settings.humming_w4a8:
            acc -= 0.0045
        # the final accuracy sample asks more questions than the screening (the launch's)
        n = max(self.questions, job.options.workload.questions or 0)
        per_q = {f"q{i}": self.rng.random() < acc for i in range(n)}
        k = sum(per_q.values())
        agg = Aggregates(requests=n, tpot_ms=tpot,
                         tpot_ci95=Interval(low=tpot * 0.98, high=tpot * 1.02),
                         decode_tok_s=1000 / tpot, accuracy=k / n, correct=k,
                         scored=n, per_question=per_q, accuracy_ci95=wilson(k, n),
                         accept_length=pm.expected_accept_length("sampled")
                         if settings.speculative else None)
        res.aggregates = agg
        res.kv_tokens = mem.max_total_num_tokens
        res.gate = evaluate(agg, speculative=settings.speculative, cfg=job.space.spec.gate,
                            baseline_per_question=job.options.baseline_per_question)
        if job.options.early_stop is not None:   # the product's judgement, on these figures
            try:
                _check_early(res, job.options.early_stop)
            except TrialPruned as stop:
                res.status, res.reason, res.message = "pruned", stop.reason, stop.message  # type: ignore[assignment]
        return res


def model_sweep(tmp: Any, runner: ModelRunner, *, trials: int | None, seed: int = 0,
                space: Any = None, on_progress: Any = None, **settings: Any) -> Any:
    """A sweep of ``space`` (the Spark space by default) through the product's driver with
    ``runner``; the study lives in ``tmp/s.db``. ``settings``: more SweepSettings fields;
    ``on_progress``: the driver's progress callback. Returns the Optuna study itself (the
    product reads it through :class:`tuner.study.storages.StudyView`)."""
    from pathlib import Path

    from tuner.engines import make_engine
    from tuner.space import load_space
    from tuner.study._storage import locate
    from tuner.sweep._driver import Driver
    from tuner.sweep._driver import SweepSettings
    from tuner.trial import TrialOptions

    if space is None:
        space = load_space(Path(__file__).resolve().parents[2] / "search_spaces"
                           / "ling-3.0-flash-dgx-spark.yaml")
    Path(tmp).mkdir(parents=True, exist_ok=True)   # the study's folder (never made for it)
    s = SweepSettings(study_name="s", location=locate(str(Path(tmp) / "s.db"), "s"),
                      trials=trials, seed=seed, **settings)
    opts = TrialOptions(workdir=Path(tmp), workload=space.spec.workload)
    driver = Driver(space, make_engine("sim"), opts, s, lambda: runner,
                    on_progress=on_progress)
    driver.run()
    return driver.sweep.study           # the raw Optuna study: tests read its internals
