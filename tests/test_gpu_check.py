"""benchmarks/gpu_check.py, the prepared check for a lent GPU (issue 23), in its dry run: the
emulation stands in for the device, so every phase's machinery runs here and its results land in
the JSON and the markdown table a real run writes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"

# the dry run's programs are built by the emulation: a host C++ compiler
pytestmark = [pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this install"),
              pytest.mark.skipif(not (shutil.which("g++") or shutil.which("clang++")),
                                 reason="the emulation needs a host C++ compiler")]


def _run(tmp_path, *extra, timeout=300, env=None):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), *extra],
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return out, json.loads((out / "gpu_check.json").read_text()), (out / "gpu_check.md").read_text()


def test_the_dry_run_writes_every_phase_to_json_and_markdown(tmp_path):
    out, report, md = _run(tmp_path, "--workloads", "tiny", "--budget-s", "200")
    phases = report["phases"]
    assert report["dry_run"] is True and list(phases) == ["device", "tests", "parity", "sanitizer", "bench"]
    assert phases["device"]["tracegrad_device"] == "tracegrad CUDA emulation (CPU)"
    assert phases["tests"]["rc"] == 0 and phases["tests"]["summary"].startswith("1 passed")
    assert phases["parity"]["result"]["ok"] is True
    # without the tool the sanitizer's runs are skipped with the reason, and the programs it
    # would check still ran
    if shutil.which("compute-sanitizer") is None:
        assert phases["sanitizer"]["skipped"] == "compute-sanitizer is not installed"
    assert len(phases["sanitizer"]["build"]["step"]["result"]["losses"]) == 2
    times = phases["bench"]["tiny"]["result"]["times_s"]
    assert times["tracegrad"] > 0
    if "torch eager" in times:
        assert phases["bench"]["tiny"]["ratios"]["torch eager"] > 0
    assert "| tiny |" in md and "| parity | ok True" in md
    assert (out / "tests.xml").exists() and (out / "bench_tiny.log").exists()


STAND_IN = """#!/bin/sh
# compute-sanitizer's stand-in: drops its options (all pairs), runs the program, prints a summary
while [ "${1#--}" != "$1" ]; do shift 2; done
"$@"; rc=$?
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
"""


def test_the_sanitizer_phase_runs_both_tools_on_their_programs(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "compute-sanitizer"
    tool.write_text(STAND_IN)
    tool.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    _, report, md = _run(tmp_path, "--phases", "sanitizer", "--budget-s", "120", env=env)
    san = report["phases"]["sanitizer"]
    assert san["memcheck"]["errors"] == 0 and len(san["memcheck"]["result"]["losses"]) == 2
    assert san["racecheck"]["errors"] == 0 and san["racecheck"]["result"]["max_abs_error"] < 1e-9
    assert "memcheck: 0 errors (rc 0); racecheck: 0 errors (rc 0)" in md


def test_a_spent_budget_skips_phases_with_the_reason_and_still_reports(tmp_path):
    _, report, md = _run(tmp_path, "--phases", "device,bench", "--budget-s", "6", timeout=120)
    assert "device" in report["phases"]
    assert "budget spent" in report["phases"]["bench"]["skipped"]
    assert "skipped: budget spent" in md


def test_an_unknown_phase_is_refused_naming_the_phases():
    p = subprocess.run([sys.executable, str(SCRIPT), "--phases", "device,warp"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "device,tests,parity,sanitizer,bench" in p.stderr and "warp" in p.stderr


def test_an_unknown_workload_is_refused_naming_the_workloads():
    p = subprocess.run([sys.executable, str(SCRIPT), "--workloads", "tiny,huge"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "tiny,medium,chain" in p.stderr and "huge" in p.stderr
