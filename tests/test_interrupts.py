"""Ctrl-C (docs/conventions.md §6.8): one line, status 130 within seconds, no worker left, no partial or temporary file.

``gemhsa-sym`` runs as a separate process group with a process pool; SIGINT goes to the whole
group, as a terminal sends it, at points the program reports (its progress lines,
``GEMHSA_SYM_PROGRESS=lines``, docs/conventions.md §6.9): after a given number of finished draws or
tasks, while the elimination's child process runs, and after the run has ended (which must then have
exited 0 with its complete output). No interrupt is timed as a fraction of a measured run, so the test does not depend on the
machine's load.
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
from gemhsa_sym.sampling.result import SampleResult

#: Seconds allowed from the signal to the exit of the whole process group.
EXIT_WITHIN = 5.0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _interrupt(argv: list[str], at: str, cwd: Path) -> tuple[int, str, float]:
    """Run ``gemhsa-sym argv`` and send SIGINT to its group as soon as it reports the progress line ``at`` ("end": after it
    exited); (status, stderr, seconds from the signal to the exit)."""
    process = subprocess.Popen([sys.executable, "-m", "gemhsa_sym.cli", *argv], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, "GEMHSA_SYM_PROGRESS": "lines"})
    seen: list[str] = []
    if at == "end":
        _, err = process.communicate(timeout=120)
        return process.returncode, err, 0.0
    for line in process.stderr:
        seen.append(line)
        if line.startswith(at):
            break
    else:
        pytest.fail(f"the run ended without reporting {at!r}: {''.join(seen)}")
    sent = time.perf_counter()
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"no exit within 30 s of SIGINT at {at!r}")
    deadline = time.perf_counter() + 2
    while _group_alive(process.pid) and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert not _group_alive(process.pid), f"a worker outlived the interrupt at {at!r}"
    return process.returncode, err, time.perf_counter() - sent


def _check(status: int, err: str, seconds: float, folder: Path, output: str) -> None:
    files = sorted(p.name for p in folder.iterdir() if p.is_file())
    if status == 130:
        assert err.strip().splitlines()[-1:] == ["gemhsa-sym: interrupted"], err
        assert not [line for line in err.splitlines() if not line.startswith("gemhsa-sym: ")], err
        assert seconds <= EXIT_WITHIN
        assert files == [], files
    else:
        assert status == 0, err
        assert files == ([output] if output else []), files


#: Where each run is interrupted: after some of its draws or tasks, and after it ended.
SAMPLE_POINTS = ("gemhsa-sym: draws: 1 of 6 done", "gemhsa-sym: draws: 3 of 6 done", "end")
VERIFY_POINTS = ("gemhsa-sym: verify: 2 of", "gemhsa-sym: verify: 6 of", "end")


def test_sample_with_a_pool_stops_cleanly(tmp_path: Path) -> None:
    def argv(folder: Path) -> list[str]:
        return ["sample", "mha", "--n", "800", "--draws", "6", "--jobs", "2", "--out", str(folder / "s.npz")]

    for k, at in enumerate(SAMPLE_POINTS):
        folder = tmp_path / str(k)
        folder.mkdir()
        status, err, seconds = _interrupt(argv(folder), at, folder)
        assert status == (0 if at == "end" else 130), (at, err)
        _check(status, err, seconds, folder, "s.npz")
        if status == 0:
            assert SampleResult.load_npz(folder / "s.npz").eigenvalues.shape == (6, 800)


def test_verify_with_a_pool_stops_cleanly(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store_stand_in(cache, PRESETS["single-head"], mp_theory())
    argv = ["verify", "single-head", "--n", "600", "--draws", "3", "--jobs", "2", "--cache", str(cache), "--json"]
    for k, at in enumerate(VERIFY_POINTS):
        folder = tmp_path / str(k)
        folder.mkdir()
        status, err, seconds = _interrupt(argv, at, folder)
        assert status == (0 if at == "end" else 130), (at, err)
        _check(status, err, seconds, folder, "")
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []


def test_interrupted_results_do_not_differ_from_an_uninterrupted_run(tmp_path: Path) -> None:
    """After an interrupt, a new run gives the figures of a run that was never interrupted."""
    argv = ["sample", "single-head", "--n", "300", "--draws", "4", "--jobs", "2", "--quiet"]
    status, _, _ = _interrupt([*argv[:-1], "--out", str(tmp_path / "a.npz")], "gemhsa-sym: draws: 2 of 4 done", tmp_path)
    assert status == 130 and not (tmp_path / "a.npz").exists()
    done = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv, "--out", str(tmp_path / "b.npz")], capture_output=True)
    assert done.returncode == 0
    again = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv[:-3], "--quiet", "--out", str(tmp_path / "c.npz")],
                           capture_output=True)
    assert again.returncode == 0
    np.testing.assert_array_equal(SampleResult.load_npz(tmp_path / "b.npz").eigenvalues,
                                  SampleResult.load_npz(tmp_path / "c.npz").eigenvalues)


def test_derive_stops_its_elimination_process(tmp_path: Path) -> None:
    """tied-kv's resultants (tried first with --symbolic) run in a child process for their whole time limit; an
    interrupt stops both."""
    status, err, seconds = _interrupt(["derive", "tied-kv", "--symbolic", "--json", "--latex", str(tmp_path / "t.tex")],
                                      "gemhsa-sym: eliminating P(m, w)", tmp_path)
    assert status == 130 and err.strip().splitlines()[-1] == "gemhsa-sym: interrupted"
    assert seconds <= EXIT_WITHIN
    assert list(tmp_path.iterdir()) == []
