"""The prepared check for a lent GPU (issue 23, deliverable 7): one command, under 8 minutes.

    python benchmarks/gpu_check.py [--out DIR] [--budget-s 420] [--dry-run]
                                   [--phases device,tests,parity,sanitizer,bench]
                                   [--workloads tiny,medium,chain,transformer]

Phases, each in child processes with its own timeout cut to what is left of ``--budget-s``
(a phase that would not fit is skipped, with the reason, so a partial run still reports):

- ``device``: nvidia-smi's view of the GPU, ``torch.cuda.get_device_name``,
  ``tg.cuda.get_device_name``, and the versions of nvcc and compute-sanitizer;
- ``tests``: ``tests/test_cuda*.py`` and ``tests/test_export_cuda.py`` with
  TRACEGRAD_CUDA_EMULATE unset: where a GPU is present the fixtures of test_cuda.py,
  test_cuda_ops.py and test_cuda_tensors.py (tests/cuda_mode.py) run their programs and cuda
  tensors on it (only the test of the emulation itself, and test_export_cuda.py's builds,
  still emulate);
- ``parity``: programs of tests/test_cuda.py (elementwise chain, reductions, products) and the
  tiny training step compiled for cuda tensors on the device, against the interpreter on the CPU
  (a quick subset of the above, kept so that a cut-off ``tests`` phase still leaves results);
- ``sanitizer``: ``compute-sanitizer --tool memcheck`` on a compiled tiny training step on cuda
  tensors, and ``--tool racecheck`` on a compiled row reduction (the shared-memory and
  warp-shuffle kernel); the programs are built once beforehand so the tool sees only launches;
- ``bench``: median step times of tracegrad (cuda tensors, compiled) against PyTorch eager and
  ``torch.compile`` on the same device, as ratios, each workload in its own child.

Results: ``DIR/gpu_check.json`` (everything) and ``DIR/gpu_check.md`` (a table for
docs/performance.md), plus each child's log. ``DIR`` defaults to ``$OUT`` (the device tool's
folder), else ``gpu_check_out``. ``--dry-run`` runs what a machine without a GPU allows: the
emulation (TRACEGRAD_CUDA_EMULATE=1), one test, fewer and smaller steps, PyTorch on the CPU, no
torch.compile; tests/test_gpu_check.py runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EMULATE_ENV = "TRACEGRAD_CUDA_EMULATE"
PHASES = ("device", "tests", "parity", "sanitizer", "bench")
TEST_FILES = ("tests/test_cuda.py", "tests/test_cuda_ops.py", "tests/test_cuda_tensors.py",
              "tests/test_export_cuda.py")
# a phase's own ceiling (seconds) on a GPU; each is also cut to what the budget has left
# (the default budget of 420 s leaves the benchmarks at least 420 - 300 - the reserve)
PHASE_LIMIT = {"device": 45, "tests": 120, "parity": 45, "sanitizer": 90, "bench": 300}
RESERVE_S = 5  # kept back for writing the results


# ----------------------------------------------------------------------------- children
def _tg_cuda():
    """tracegrad with cuda as the default device, the benchmarks' workloads importable."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import tracegrad as tg

    tg.set_default_device("cuda")
    return tg


def _on_cuda(tg, args):
    return tuple(a if a.device.type == "cuda" else a.to("cuda") for a in args)


def _tiny_on_cuda(tg, batch=32):
    import workloads

    step, args = workloads.make_tiny("c", batch=batch)
    return step, _on_cuda(tg, args)


def child_sanitize_step(steps):
    """A compiled tiny training step on cuda tensors, ``steps`` times (memcheck's subject)."""
    tg = _tg_cuda()
    step, args = _tiny_on_cuda(tg)
    losses = [float(step(*args).item()) for _ in range(steps)]
    tg.cuda.synchronize()
    return {"losses": losses}


def child_sanitize_reduce(rows, cols):
    """A compiled row sum on the device against NumPy (racecheck's subject: the block per row,
    shared-memory tree and warp shuffles of the CUDA renderer's reductions)."""
    import numpy as np

    tg = _tg_cuda()
    x = np.random.default_rng(0).standard_normal((rows, cols))
    got = tg.compile(lambda t: t.sum(1), backend="cuda", fullgraph=True)(tg.from_numpy(x).to("cuda"))
    err = float(np.abs(got.cpu().numpy() - x.sum(1)).max())
    if err > 1e-9:
        raise AssertionError(f"row sums on the device differ from NumPy's by {err}")
    return {"max_abs_error": err}


def child_parity():
    """tests/test_cuda.py's programs and the tiny step compiled on the device (cuda tensors)
    against the interpreter on the CPU: the device's own results, in seconds (the ``tests``
    phase runs the same and more on the device, but may not fit its time)."""
    import numpy as np

    tg = _tg_cuda()
    sys.path.insert(0, str(ROOT / "tests"))
    import test_cuda as programs  # (one definition of the checked programs: the tests')

    tg.set_default_device("cpu")
    tg.manual_seed(0)
    cases = {"elementwise chain": (programs.chain, (tg.randn(5, 7), tg.randn(5, 7))),
             "reductions": (programs.reductions, (tg.randn(4, 300, dtype=tg.float64),
                                                  tg.randint(-50, 50, (4, 300)))),
             "products": (programs.products, (tg.randn(5, 7), tg.randn(7, 20), tg.randn(5, 3)))}
    flat = lambda r: [t.cpu().numpy() for t in (r if isinstance(r, tuple) else (r,))]
    out = {}
    for name, (fn, args) in cases.items():
        want = flat(tg.compile(fn, backend="interpreter")(*args))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (a fallback to the interpreter would hide the device)
            got = flat(tg.compile(fn, backend="cuda", fullgraph=True)(*_on_cuda(tg, args)))
        out[name] = max(float(np.abs(g.astype(np.float64) - w).max()) for g, w in zip(got, want))
    import workloads

    tg.set_default_device("cpu")
    ref, ref_args = workloads.make_tiny("interpreter")
    ref_losses = [float(ref(*ref_args).item()) for _ in range(3)]
    tg.set_default_device("cuda")
    step, args = _tiny_on_cuda(tg)
    losses = [float(step(*args).item()) for _ in range(3)]
    out["tiny step (3 losses)"] = max(abs(a - b) for a, b in zip(losses, ref_losses))
    bad = {k: v for k, v in out.items() if not v <= 1e-4}
    return {"max_abs_error": out, "ok": not bad}


def child_bench(name, steps, rounds, dry_run):
    """{contender: median seconds a step} for workload ``name``: tracegrad compiled on cuda
    tensors, PyTorch eager and torch.compile on the same device (the CPU in a dry run, and no
    torch.compile there: its compile would take most of the test's time). Printed twice: first
    without torch.compile, whose compile may not fit in the time left, then with it."""
    import bench_workloads
    import workloads

    tg = _tg_cuda()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if name == "chain" and dry_run:  # (2**22 elements would take minutes under emulation)
            step, args = workloads.make_chain("c", n=4096)
        else:
            step, args = workloads.WORKLOADS[name]("c")
        args = _on_cuda(tg, args)

        def tg_step():
            step(*args)
            tg.cuda.synchronize()

        t = time.perf_counter()
        tg_step()  # (the build: tracing, nvcc, loading; eager single-op programs on a fallback)
        result = {"first_call_s": time.perf_counter() - t,
                  "programs": [type(p.executable).__name__ for p in getattr(step, "programs", [])]}
        contenders = {"tracegrad": tg_step}
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and not (name == "chain" and dry_run):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
            result["torch_device"] = device

            def timed(fn):
                return lambda: (fn(), sync())
            contenders["torch eager"] = timed(bench_workloads.torch_step(name, device=device))
        result["fallbacks"] = sorted({str(w.message) for w in caught if "interpreter" in str(w.message)})
    # (PyTorch's first few steps are slow, tens of ms on a CPU: lazy initialisation)
    result["times_s"] = bench_workloads.interleaved_medians(contenders, steps, rounds, warmup=5)
    print(json.dumps(result), flush=True)
    if torch is not None and "torch eager" in contenders and not dry_run:
        contenders["torch.compile"] = timed(bench_workloads.torch_step(name, compiled=True, device=device))
        t = time.perf_counter()
        contenders["torch.compile"]()
        result["torch_compile_first_call_s"] = time.perf_counter() - t
        result["times_s"] = bench_workloads.interleaved_medians(contenders, steps, rounds, warmup=5)
    return result


CHILDREN = {"sanitize-step": lambda a: child_sanitize_step(a.steps),
            "sanitize-reduce": lambda a: child_sanitize_reduce(64, 1000),
            "parity": lambda a: child_parity(),
            "bench": lambda a: child_bench(a.workload, a.steps, a.rounds, a.dry_run)}


# ----------------------------------------------------------------------------- the parent
class Budget:
    """Seconds left of the run; a phase gets min(its own limit, what is left - a reserve)."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic() - RESERVE_S

    def limit(self, own: float, until: float | None = None) -> float:
        """Seconds for a step: ``own`` cut to the budget and to a phase's deadline ``until``."""
        cap = self.left() if until is None else min(self.left(), until - time.monotonic())
        return max(0.0, min(own, cap))

    def deadline(self, phase: str) -> float:
        """When ``phase`` must end (monotonic clock): its PHASE_LIMIT from now."""
        return time.monotonic() + PHASE_LIMIT[phase]


def run(cmd, timeout, env=None, log=None):
    """{rc, seconds, tail[, timed_out]} of a command (stdout and stderr together, the whole
    text written to ``log``); a missing program or an exhausted limit is a result, not an
    exception."""
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 1), env=env, cwd=ROOT)
        text, res = p.stdout + p.stderr, {"rc": p.returncode}
    except subprocess.TimeoutExpired as e:
        out = lambda s: s.decode(errors="replace") if isinstance(s, bytes) else (s or "")
        text, res = out(e.stdout) + out(e.stderr), {"rc": None, "timed_out": True}
    except OSError as e:
        text, res = str(e), {"rc": None}
    if log is not None:
        Path(log).write_text(text)
    res.update(seconds=round(time.monotonic() - t, 2), tail=text[-1500:])
    return res


def child_cmd(kind, *extra):
    return [sys.executable, str(Path(__file__).resolve()), "--child", kind, *extra]


def child_result(res):
    """The JSON a child printed last, merged into its run result."""
    for line in reversed(res["tail"].splitlines()):
        if line.startswith("{"):
            try:
                res["result"] = json.loads(line)
            except ValueError:
                pass
            break
    return res


def phase_device(ctx):
    out, end = {}, ctx.deadline("device")
    if shutil.which("nvidia-smi"):
        out["nvidia-smi"] = run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version,compute_cap",
                                 "--format=csv,noheader"], ctx.limit(20, end))["tail"].strip()
    else:
        out["nvidia-smi"] = "missing"
    probe = ("import json, sys; sys.path.insert(0, '.'); r = {}\n"
             "try:\n import torch; r['torch'] = torch.__version__; r['torch_cuda'] = torch.version.cuda\n"
             " r['torch_device'] = torch.cuda.get_device_name() if torch.cuda.is_available() else None\n"
             "except ImportError: r['torch'] = None\n"
             "import tracegrad as tg; r['tracegrad_device'] = tg.cuda.get_device_name() "
             "if tg.cuda.is_available() else None\nprint(json.dumps(r))")
    res = child_result(run([sys.executable, "-c", probe], ctx.limit(30, end), env=ctx.env))
    out.update(res.get("result") or {"probe failed": res["tail"][-400:]})  # (no torch, cffi, ...)
    for tool in ("nvcc", "compute-sanitizer"):
        path = shutil.which(tool)
        lines = run([path, "--version"], ctx.limit(10, end))["tail"].strip().splitlines() if path else ["missing"]
        out[tool] = lines[-1] if lines else "no version printed"
    return out


def phase_tests(ctx):
    if ctx.dry_run:  # one short test of the set, under the emulation: the phase's machinery
        files = [f"{TEST_FILES[0]}::test_elementwise_chains"]
    else:
        files = list(TEST_FILES)
    xml = ctx.out / "tests.xml"
    res = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *files],
              ctx.limit(PHASE_LIMIT["tests"]), env=ctx.env, log=ctx.out / "tests.log")
    res.update(junit_counts(xml))
    return res


def junit_counts(path):
    """{summary, failed} from pytest's JUnit XML (the console's summary line depends on the
    project's -q settings); an absent or cut-off file (a timeout) says so."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        return {"summary": f"no JUnit report ({type(e).__name__})", "failed": []}
    n = {k: sum(int(s.get(k, 0)) for s in root.iter("testsuite")) for k in ("tests", "failures", "errors", "skipped")}
    failed = [f"{c.get('classname')}::{c.get('name')}" for c in root.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
    return {"summary": f"{passed} passed, {n['failures']} failed, {n['errors']} errors, {n['skipped']} skipped",
            "failed": failed}


def phase_parity(ctx):
    return child_result(run(child_cmd("parity"), ctx.limit(PHASE_LIMIT["parity"]), env=ctx.env,
                            log=ctx.out / "parity.log"))


def sanitizer_errors(text):
    """The error count of a compute-sanitizer summary (memcheck: "ERROR SUMMARY: n errors";
    racecheck: "RACECHECK SUMMARY: h hazards displayed (n errors, w warnings)"); None when the
    tool printed none (it did not finish)."""
    m = re.search(r"ERROR SUMMARY: (\d+) error", text) or re.search(r"RACECHECK SUMMARY: .*?\((\d+) error", text)
    return int(m.group(1)) if m else None


def phase_sanitizer(ctx):
    end = ctx.deadline("sanitizer")
    step = child_cmd("sanitize-step", "--steps", "2")
    reduce = child_cmd("sanitize-reduce")
    # built (and checked) first without the tool, into the run's shared cache, so that under
    # the tool the children only load programs: nvcc is not run under the sanitizer
    out = {"build": {"step": child_result(run(step, ctx.limit(40, end), env=ctx.env, log=ctx.out / "sanitize_build_step.log")),
                     "reduce": child_result(run(reduce, ctx.limit(20, end), env=ctx.env, log=ctx.out / "sanitize_build_reduce.log"))}}
    # (in a dry run the tool, where installed, watches emulated code: nothing of the GPU's, but
    # the phase's wiring runs; tests/test_gpu_check.py puts a stand-in on PATH)
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        out["skipped"] = "compute-sanitizer is not installed"
        return out
    for name, check, cmd in (("memcheck", ["--tool", "memcheck", "--print-limit", "20"], step),
                             ("racecheck", ["--tool", "racecheck", "--racecheck-report", "all",
                                            "--print-limit", "20"], reduce)):
        if ctx.limit(60, end) < 10:
            out[name] = {"skipped": "the phase's time is spent", "errors": None, "rc": None}
            continue
        res = run([tool, *check, *cmd], ctx.limit(60, end), env=ctx.env,
                  log=ctx.out / f"sanitizer_{name}.log")
        res["errors"] = sanitizer_errors((ctx.out / f"sanitizer_{name}.log").read_text())
        out[name] = child_result(res)  # (the child's own result: the step or reduction ran)
    return out


def phase_bench(ctx):
    out, end = {}, ctx.deadline("bench")
    steps, rounds = (3, 1) if ctx.dry_run else (20, 3)
    names = ctx.workloads
    for i, name in enumerate(names):
        # an equal share of what is left: time a quick workload leaves goes to the later ones
        share = ctx.limit(min(ctx.left(), end - time.monotonic()) / (len(names) - i), end)
        if share < 5:
            out[name] = {"skipped": f"budget spent ({share:.0f} s left)"}
            continue
        extra = ["--workload", name, "--steps", str(steps), "--rounds", str(rounds)] + (["--dry-run"] * ctx.dry_run)
        res = child_result(run(child_cmd("bench", *extra), share, env=ctx.env, log=ctx.out / f"bench_{name}.log"))
        times = res.get("result", {}).get("times_s")
        if times:
            res["ratios"] = {k: times["tracegrad"] / v for k, v in times.items() if k != "tracegrad"}
        out[name] = res
    return out


RUNNERS = {"device": phase_device, "tests": phase_tests, "parity": phase_parity,
           "sanitizer": phase_sanitizer, "bench": phase_bench}


def has_gpu() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def markdown(report) -> str:
    dev = report["phases"].get("device", {})
    name = dev.get("torch_device") or dev.get("tracegrad_device") or dev.get("nvidia-smi") or "?"
    lines = [f"# gpu_check ({'dry run, ' if report['dry_run'] else ''}{name})", "",
             f"started {report['started']}, {report['seconds']:.0f} s of a {report['budget_s']:.0f} s budget", "",
             "| phase | outcome |", "|---|---|"]
    for phase in PHASES:
        r = report["phases"].get(phase)
        if r is None:
            continue
        if "skipped" in r and len(r) == 1:
            outcome = f"skipped: {r['skipped']}"
        elif phase == "tests":
            outcome = f"{r.get('summary')} (rc {r.get('rc')}); failed: {', '.join(r['failed']) or 'none'}"
        elif phase == "parity":
            res = r.get("result", {})
            outcome = f"ok {res.get('ok')}: {res.get('max_abs_error')}" if res else f"rc {r.get('rc')}: {r['tail'][-300:]}"
        elif phase == "sanitizer":
            outcome = "; ".join(f"{k}: {v['errors']} errors (rc {v['rc']})" for k, v in r.items()
                                if k in ("memcheck", "racecheck")) or f"skipped: {r.get('skipped')}"
        elif phase == "device":
            outcome = "; ".join(f"{k}: {v}" for k, v in r.items())
        else:
            outcome = "below"
        lines.append(f"| {phase} | {str(outcome).replace('|', '/')} |")
    bench = report["phases"].get("bench", {})
    if bench and not bench.get("skipped"):
        lines += ["", "| workload | tracegrad (cuda) | torch eager | tg / eager | torch.compile | tg / compile | "
                  "tracegrad's programs; fallbacks |", "|---|---|---|---|---|---|---|"]
        ms = lambda t: "-" if t is None else f"{t * 1e3:.3f} ms"
        for name, r in bench.items():
            res, ratios = r.get("result", {}), r.get("ratios", {})
            t = res.get("times_s", {})
            rat = lambda k: "-" if k not in ratios else f"{ratios[k]:.2f}"
            firsts = [f"{label} first call {res[k]:.1f} s" for label, k in
                      (("tracegrad", "first_call_s"), ("torch.compile", "torch_compile_first_call_s")) if k in res]
            note = r.get("skipped") or ("; ".join((["TIMED OUT (partial)"] if r.get("timed_out") else [])
                                                  + res.get("programs", []) + firsts + res.get("fallbacks", []))
                                        if res else f"rc {r.get('rc')}, timed out {r.get('timed_out', False)}")
            lines.append(f"| {name} | {ms(t.get('tracegrad'))} | {ms(t.get('torch eager'))} | {rat('torch eager')} | "
                         f"{ms(t.get('torch.compile'))} | {rat('torch.compile')} | {note[:300].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu_check_out")
    ap.add_argument("--budget-s", type=float, default=420.0)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--workloads", default="tiny,medium,chain,transformer")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(CHILDREN[a.child](a)), flush=True)
        return 0
    unknown = set(a.phases.split(",")) - set(PHASES)
    if unknown:
        ap.error(f"--phases takes {','.join(PHASES)}; got {','.join(sorted(unknown))}")
    if "bench" in a.phases.split(","):
        sys.path[:0] = [str(HERE), str(ROOT)]  # (tracegrad from this tree, installed or not)
        from workloads import WORKLOADS

        unknown = set(a.workloads.split(",")) - set(WORKLOADS)
        if unknown:
            ap.error(f"--workloads takes names of {','.join(WORKLOADS)}; got {','.join(sorted(unknown))}")
    ctx = Budget(a.budget_s)
    ctx.dry_run, ctx.workloads = a.dry_run, a.workloads.split(",")
    ctx.out = Path(a.out).resolve()
    ctx.out.mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="tg-gpu-check-cache-")  # (one cache for every child: builds once)
    ctx.env = {k: v for k, v in os.environ.items() if k != EMULATE_ENV}
    ctx.env.update(TRACEGRAD_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if a.dry_run:
        ctx.env[EMULATE_ENV] = "1"
    gpu = has_gpu()
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "dry_run": a.dry_run,
              "budget_s": a.budget_s, "gpu": gpu, "phases": {}}
    t0 = time.monotonic()
    for phase in a.phases.split(","):
        if phase != "device" and not gpu and not a.dry_run:
            report["phases"][phase] = {"skipped": "no GPU (nvidia-smi -L failed); --dry-run runs the emulation"}
        elif ctx.left() < 5:
            report["phases"][phase] = {"skipped": f"budget spent ({ctx.left():.0f} s left)"}
        else:
            t = time.monotonic()
            report["phases"][phase] = RUNNERS[phase](ctx)
            print(f"[gpu_check] {phase}: {time.monotonic() - t:.1f} s", flush=True)
        report["seconds"] = time.monotonic() - t0
        # (written after every phase: a run killed from outside still leaves what it had)
        (ctx.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
        (ctx.out / "gpu_check.md").write_text(markdown(report))
    shutil.rmtree(cache, ignore_errors=True)
    print((ctx.out / "gpu_check.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
