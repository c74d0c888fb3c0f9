"""Ctrl-C (docs/conventions.md §6.8): one line, status 130 within seconds, no worker left, no partial or temporary file.

``gemhsa-sym`` runs as a separate process group with a process pool; SIGINT goes to the whole
group, as a terminal sends it, at times from the imports through the workers' start to the
writing of the output. A run that had already finished when the signal came must have exited 0
with its complete output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from verification_helpers import mp_theory, store_stand_in

from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.sampler import SampleResult

#: Seconds allowed from the signal to the exit of the whole process group.
EXIT_WITHIN = 5.0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _interrupt(argv: list[str], delay: float, cwd: Path) -> tuple[int, str, float]:
    """Run ``gemhsa-sym argv``, send SIGINT to its group after ``delay`` s; (status, stderr, seconds to exit)."""
    process = subprocess.Popen([sys.executable, "-m", "gemhsa_sym.cli", *argv], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)
    sent = time.perf_counter()
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"no exit within 30 s of SIGINT at {delay} s")
    deadline = time.perf_counter() + 2
    while _group_alive(process.pid) and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert not _group_alive(process.pid), f"a worker outlived the interrupt at {delay} s"
    return process.returncode, err, time.perf_counter() - sent


def _check(status: int, err: str, seconds: float, folder: Path, output: str) -> None:
    files = sorted(p.name for p in folder.iterdir() if p.is_file())
    if status == 130:
        assert err.strip() == "gemhsa-sym: interrupted"
        assert seconds <= EXIT_WITHIN
        assert files == [], files
    else:
        assert status == 0, err
        assert files == ([output] if output else []), files


def _uninterrupted(argv: list[str], cwd: Path) -> float:
    """Seconds that ``gemhsa-sym argv`` takes when nobody interrupts it (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - start


#: Interrupt times as fractions of an uninterrupted run: from the imports to the writing of the
#: output, and once after it (so that the test does not depend on how fast this machine is).
FRACTIONS = (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.3)


def test_sample_with_a_pool_stops_cleanly(tmp_path: Path) -> None:
    def argv(folder: Path) -> list[str]:
        return ["sample", "mha", "--n", "800", "--draws", "6", "--jobs", "2", "--quiet", "--out", str(folder / "s.npz")]

    whole = _uninterrupted(argv(tmp_path), tmp_path)
    assert SampleResult.load_npz(tmp_path / "s.npz").eigenvalues.shape == (6, 800)
    interrupted = 0
    for k, fraction in enumerate(FRACTIONS):
        folder = tmp_path / str(k)
        folder.mkdir()
        status, err, seconds = _interrupt(argv(folder), fraction * whole, folder)
        _check(status, err, seconds, folder, "s.npz")
        if status == 0:
            assert SampleResult.load_npz(folder / "s.npz").eigenvalues.shape == (6, 800)
        interrupted += status == 130
    assert interrupted >= 3


def test_verify_with_a_pool_stops_cleanly(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store_stand_in(cache, PRESETS["single-head"], mp_theory())
    argv = ["verify", "single-head", "--n", "600", "--draws", "3", "--jobs", "2", "--quiet", "--cache", str(cache), "--json"]
    whole = _uninterrupted(argv, tmp_path)
    interrupted = 0
    for k, fraction in enumerate(FRACTIONS[1::2]):
        folder = tmp_path / str(k)
        folder.mkdir()
        status, err, seconds = _interrupt(argv, fraction * whole, folder)
        _check(status, err, seconds, folder, "")
        interrupted += status == 130
    assert interrupted >= 2
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []


def test_interrupted_results_do_not_differ_from_an_uninterrupted_run(tmp_path: Path) -> None:
    """After an interrupt, a new run gives the figures of a run that was never interrupted."""
    argv = ["sample", "single-head", "--n", "300", "--draws", "4", "--jobs", "2", "--quiet"]
    status, _, _ = _interrupt([*argv, "--out", str(tmp_path / "a.npz")], 1.8, tmp_path)
    assert status in (0, 130)
    done = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv, "--out", str(tmp_path / "b.npz")], capture_output=True)
    assert done.returncode == 0
    again = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv[:-3], "--quiet", "--out", str(tmp_path / "c.npz")],
                           capture_output=True)
    assert again.returncode == 0
    np.testing.assert_array_equal(SampleResult.load_npz(tmp_path / "b.npz").eigenvalues,
                                  SampleResult.load_npz(tmp_path / "c.npz").eigenvalues)


def test_derive_stops_its_elimination_process(tmp_path: Path) -> None:
    """tied-kv's elimination runs in a child process for its whole time limit; an interrupt stops both."""
    status, err, seconds = _interrupt(["derive", "tied-kv", "--json", "--latex", str(tmp_path / "t.tex")], 6.0, tmp_path)
    assert status == 130 and err.strip() == "gemhsa-sym: interrupted"
    assert seconds <= EXIT_WITHIN
    assert list(tmp_path.iterdir()) == []
