"""A journal whose last record a crash tore (no newline): the next sweep cuts it (keeping
its bytes beside the journal) instead of appending onto it; a journal damaged inside is a
one-line error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import optuna
import pytest

from tests.conftest import GSM8K_DIR
from tests.conftest import SPARK
from tests.conftest import tuner_argv
from tuner.study._storage import repair_torn_journal


STUDY = "ling-3.0-flash-dgx-spark"


def _sweep(tmp: Path, trials: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tuner_argv(
        "sweep", str(SPARK), "--engine", "sim", "--gsm8k", str(GSM8K_DIR), "--storage",
        str(tmp / "s.journal"), "--trials", str(trials), "--questions", "6", "--time-scale",
        "300", "--seed", "3", "--workdir", str(tmp / "runs"), "--ray-address", "none"),
        capture_output=True, text=True, timeout=600)


def _load(tmp: Path) -> optuna.Study:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return optuna.load_study(study_name=STUDY, storage=JournalStorage(
        JournalFileBackend(str(tmp / "s.journal"))))


@pytest.mark.slow
def test_a_torn_last_record_is_cut_and_the_sweep_goes_on(tmp_path: Path) -> None:
    assert _sweep(tmp_path, 2).returncode == 0
    journal = tmp_path / "s.journal"
    whole = journal.read_bytes()
    before = {t.number: t.values for t in _load(tmp_path).trials}
    os.truncate(journal, len(whole) - 30)           # a crash in the middle of a write
    torn = journal.read_bytes()[journal.read_bytes().rfind(b"\n") + 1:]
    proc = _sweep(tmp_path, 3)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "last record was torn" in proc.stdout
    saved = list(tmp_path.glob("s.journal.torn-*"))
    assert len(saved) == 1 and saved[0].read_bytes() == torn
    after = _load(tmp_path).trials                  # readable, the earlier trials kept
    assert all(after[n].values == v for n, v in before.items())
    assert len([t for t in after if t.state.is_finished()]) >= 3
    report = subprocess.run(tuner_argv("report", STUDY, "--storage", str(journal)),
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr


def test_a_whole_journal_is_left_alone_and_a_damaged_one_is_one_line(tmp_path: Path) -> None:
    journal = tmp_path / "s.journal"
    journal.write_bytes(b'{"op_code": 0}\n')
    assert repair_torn_journal(journal) is None and journal.read_bytes() == b'{"op_code": 0}\n'
    journal.write_bytes(b'{"op_code":0,"worker_id":"w","study_name":"x","directions":[1]}'
                        b'{"op_code":0,"worker_id"\n{"op_code": 4}\n')      # appended onto
    proc = subprocess.run(tuner_argv("report", STUDY, "--storage", str(journal)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "the journal is damaged inside" in proc.stderr
    assert "Traceback" not in proc.stderr
