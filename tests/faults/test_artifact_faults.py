"""The artifact folder deleted or replaced mid-run: the sweep goes on, no measurement is
lost, and ``tuner export`` still writes a profile for the pick."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import optuna

from tests.conftest import tuner_argv
from tests.sweep_tests.model_runner import ModelRunner
from tests.sweep_tests.model_runner import model_sweep
from tuner.sweep._base import TrialJob


class _Vandal(ModelRunner):
    """Does ``harm`` to the artifact folder when the ``at``-th launch is submitted."""

    def __init__(self, folder: Path, at: int, harm: str, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.folder, self.at, self.harm = folder, at, harm

    def submit(self, job: TrialJob) -> None:
        if len(self.launched) == self.at:
            shutil.rmtree(self.folder)
            if self.harm == "file":                 # a file where the folder was: unwritable
                self.folder.write_text("not a folder")
        super().submit(job)


def _export(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv("export", "s", "--storage", str(tmp / "s.db"),
                                     "--out", str(tmp / "profile"), *extra),
                          capture_output=True, text=True, timeout=120)


def test_a_deleted_artifact_folder_is_made_again_and_export_still_works_with_model_backed_runner(
        tmp_path: Path) -> None:
    folder = tmp_path / "s.artifacts"
    study = model_sweep(tmp_path, _Vandal(folder, at=4, harm="delete", seed=3), trials=10)
    done = [t for t in study.trials if t.state.is_finished()]
    assert len([t for t in done if t.user_attrs.get("tuner:role") in ("baseline", "trial",
                                                                        "remeasure")]) == 10
    assert not any("artifact_error" in t.user_attrs for t in done)
    late = [t for t in done if t.number >= 4 and "config_hash" in t.user_attrs]
    for t in late:                                   # stored again after the deletion
        metas = optuna.artifacts.get_all_artifact_meta(t, storage=study._storage)
        assert metas and all((folder / m.artifact_id).is_file() for m in metas)
    proc = _export(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "profile" / "launch.sh").is_file()
    lost = [t for t in done if t.number < 4]        # the baseline's artifacts are gone
    assert lost and "launch plan was made again from the stored space" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_an_unwritable_artifact_folder_loses_only_artifacts_with_model_backed_runner(
        tmp_path: Path) -> None:
    folder = tmp_path / "s.artifacts"
    study = model_sweep(tmp_path, _Vandal(folder, at=3, harm="file", seed=4), trials=6,
                        finals_share=0.0)
    after = [t for t in study.trials if t.number >= 3 and t.state.is_finished()]
    assert after and all("artifact_error" in t.user_attrs for t in after)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in after)   # measured, kept
    assert len([t for t in study.trials if t.state.is_finished()]) == 6
