"""`rehearse STACK --command ...` with a user's own trainer: resumed and saved-on-the-stop are judged from what the
trainer did (its reported steps, the files it wrote after the stop signal), never from the agent's side alone.

The drills run a tiny trainer (tests/tools/trainers/user_trainer.py) that keeps or breaks one promise of
docs/training-contract.md; the judgements themselves (tools/trainerevidence.py) are checked on their evidence.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.tools.test_rehearse import rehearse
from tools.trainerevidence import judge_resume, judge_stop, logged_steps, stats_steps, written_since

TRAINER = Path(__file__).resolve().parent / "trainers" / "user_trainer.py"


def drill(mode: str, stack: str = "entry-a10") -> tuple[int, dict, dict, str]:
    code, document, stderr = rehearse(stack, "--command", f"{sys.executable} {TRAINER} --mode {mode} --steps 100",
                                      "--timeout", "120")
    return code, document, {c["name"]: c for c in document.get("checks", [])}, stderr


def test_a_trainer_that_ignores_resume_from_fails_resumed_naming_the_step_it_started_at():
    """The newcomer's false green: the agent set RESUME_FROM, the trainer started over at step 1."""
    code, document, checks, stderr = drill("noresume")
    resumed = checks["resumed, not from zero"]
    assert code == 1 and resumed["ok"] is False, (resumed, stderr[-3000:])
    assert "reported step 1 first after RESUME_FROM offered ckpt-" in resumed["detail"], resumed
    assert "it started over" in resumed["detail"] and "docs/training-contract.md §3" in resumed["detail"]
    assert checks["saved on the stop signal"]["ok"], checks  # the one broken promise is the one named
    assert document["stepsLost"] and document["stepsLost"] > 0  # everything before the stop was trained again


def test_a_trainer_without_a_stop_handler_fails_saved_on_the_stop_signal():
    code, document, checks, stderr = drill("nohandler")
    saved = checks["saved on the stop signal"]
    assert code == 1 and saved["ok"] is False, (saved, stderr[-3000:])
    assert "died of SIGTERM (exit code 143)" in saved["detail"] and "exit 75" in saved["detail"], saved
    assert checks["resumed, not from zero"]["ok"], checks


def test_a_trainer_that_keeps_the_contract_passes_and_counts_the_steps_lost():
    code, document, checks, stderr = drill("good")
    assert code == 0, (checks, stderr[-3000:])
    assert "the replacement's trainer went on from step" in checks["resumed, not from zero"]["detail"]
    assert "written" in checks["saved on the stop signal"]["detail"], checks["saved on the stop signal"]
    assert document["stepsLost"] == 0  # it saved at the stop and resumed there


# ---------------------------------------------------------------- the judgements, on their evidence
def test_step_numbers_are_read_in_the_forms_trainers_print_them():
    text = ("[train_cnn] step 47/300 loss 1\nStep: 48\nglobal_step=49\n{\"step\": 50}\n"
            "--steps 300 max_step=7 steps 9 mystep 8 step51\n")
    assert logged_steps(text) == [47, 48, 49, 50]


def test_the_stats_files_steps_are_split_at_the_replacements_start(tmp_path):
    loader = tmp_path / "loader.csv"
    loader.write_text("time,step,imagesPerSecond,dataWaitPercent,workers\n10.0,5,1,0,0\n20.0,9,1,0,0\n"
                      "30.5,,1,0,0\n31.0,12,1,0,0\n")
    assert stats_steps(loader, until=30.0) == [5, 9] and stats_steps(loader, since=30.0) == [12]
    assert stats_steps(tmp_path / "none.csv") == []


def test_resumed_from_the_saved_step_started_over_or_unknown():
    # Resumed: the first step after the replacement started is past the saved one; lost = stopped - saved.
    ok = judge_resume("/ckpt", [1, 2, 47], 41, 200, 40, "ckpt-40.pt")
    assert ok.ok is True and ok.lost == 7
    # Printing the resumed step itself is no start-over.
    assert judge_resume("/ckpt", [10, 20], 20, 100, 20, "ckpt-20.pt").ok is True
    over = judge_resume("/ckpt", [1, 2, 47], 1, 200, 47, "ckpt-47.pt")
    assert over.ok is False and over.lost == 47
    assert "reported step 1 first after RESUME_FROM offered ckpt-47.pt (saved at step 47)" in over.detail
    # A number in the name that no trainer reached (a date) is no step: the first run's opening steps are the proof.
    dated = judge_resume("/ckpt", [10, 20, 30], 10, 200, 20261207, "ckpt-20261207.pt")
    assert dated.ok is False and "the first run had reached step 30" in dated.detail
    assert judge_resume("/ckpt", [10, 20, 30], 40, 200, 20261207, "ckpt-20261207.pt").ok is True
    # No step reported after the replacement started: unverified, not passed.
    unknown = judge_resume("/ckpt", [1, 2], None, 2, 0, "model.pt")
    assert unknown.ok is None and "whether it resumed is unknown" in unknown.detail and unknown.lost is None
    assert judge_resume("", [1, 2], 3, 3, 2, "ckpt-2.pt").ok is False  # the agent offered nothing


def test_the_stop_signal_judged_from_the_exit_and_the_files_written_after_it(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "ckpt-10.pt").write_text("10")
    (folder / ".ckpt-11.pt.tmp").write_text("half")
    os.utime(folder / "ckpt-10.pt", (100.0, 100.0))
    os.utime(folder / ".ckpt-11.pt.tmp", (105.0, 105.0))
    assert written_since([folder], 101.0, 200.0) == []  # a temporary name is no checkpoint
    (folder / "ckpt-11.pt").write_text("11")
    os.utime(folder / "ckpt-11.pt", (101.5, 101.5))
    written = written_since([folder], 101.0, 200.0)
    assert written == [(101.5, "ckpt-11.pt")]
    stop = {"stopSignal": {"graceSeconds": 44.0}}
    assert judge_stop({**stop, "exitCode": 75}, "SIGTERM", 101.0, written, "direct") == (
        True, "ckpt-11.pt written 0.50 s after SIGTERM; the trainer exited 75")
    ok, detail = judge_stop({**stop, "exitCode": 143}, "SIGTERM", 101.0, [], "direct")
    assert not ok and "died of SIGTERM (exit code 143)" in detail
    ok, detail = judge_stop({**stop, "exitCode": 137, "reason": "spot notice; killed after the grace period"},
                            "SIGTERM", 101.0, [], "direct")
    assert not ok and "still running 44.0 s after SIGTERM and was killed (SIGKILL)" in detail
    ok, detail = judge_stop({**stop, "exitCode": 1}, "SIGTERM", 101.0, [], "torchrun")
    assert not ok and "without writing a checkpoint into CKPT_DIR" in detail
    assert judge_stop({**stop, "exitCode": 1}, "SIGTERM", 101.0, written, "torchrun")[0]  # torchrun's own code


@pytest.mark.slow  # a fourth drill of this file; the judgement is checked above on its evidence
def test_a_trainer_that_reports_no_step_is_unverified_and_the_rehearsal_does_not_pass():
    code, document, checks, stderr = drill("silent")
    resumed = checks["resumed, not from zero"]
    assert resumed["ok"] is None and "whether it resumed is unknown" in resumed["detail"], resumed
    assert code == 1 and document["unverified"] == ["resumed, not from zero"] and not document["passed"]
    assert all(c["ok"] for c in checks.values() if c["name"] != "resumed, not from zero"), checks
    assert "resumed, not from zero: not verified, so the rehearsal does not pass (exit 1)" in stderr
