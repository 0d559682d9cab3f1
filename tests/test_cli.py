"""The command line (tracegrad/tools/cli.py) and the log topics (tracegrad/_logging.py).

Commands spawned as ``python -m tracegrad`` run in subprocesses with a timeout; the rest call
``cli.main`` in this process (the same code, without a start-up each)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import tomllib
import warnings

import pytest

import tracegrad as tg
from tracegrad import _logging
from tracegrad.tools import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = ("demo", "inspect", "export", "cache")


def run_cli(*args, timeout=120):
    environ = {k: v for k, v in os.environ.items() if k != "TRACEGRAD_LOG"}
    environ["PYTHONPATH"] = ROOT
    return subprocess.run([sys.executable, "-m", "tracegrad", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=environ)


def one_error_line(text):
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracegrad: error: "), text
    return lines[0]


# ----------------------------------------------------------------------------- the command line
def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"tracegrad {cli.version()}"
    assert cli.version() == tg.__version__  # the installed distribution is this tree


def test_bare_call_prints_usage_and_exits_2():
    proc = run_cli()
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: tracegrad [-h] [--version] COMMAND ...")
    assert proc.stderr.strip().splitlines()[-1].startswith("tracegrad: error: a command is required")


def test_unknown_command_is_one_line_exit_2():
    """``getattr(cli, cmd)`` once ran any attribute of the module: ``__doc__`` crashed."""
    proc = run_cli("__doc__")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = one_error_line(proc.stderr)
    assert "invalid choice: '__doc__'" in line and "'demo', 'inspect', 'profile', 'export', 'cache'" in line


@pytest.mark.parametrize("name", ["main", "build_parser", "nope"])
def test_module_attributes_are_not_commands(name, capsys):
    assert cli.main([name]) == 2
    assert f"invalid choice: '{name}'" in one_error_line(capsys.readouterr().err)


def test_help_lists_every_command_and_the_environment(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tracegrad [-h] [--version] COMMAND ...")
    assert all(f"    {c} " in out for c in COMMANDS)
    assert "TRACEGRAD_LOG" in out and "ir, code, cache, guards, breaks" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_per_command(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tracegrad {command} [-h]")
    assert "options:" in out


@pytest.mark.parametrize("argv,message", [
    (["inspect"], "inspect: the following arguments are required: target"),
    (["export", "f.py:f"], "export: the following arguments are required: -o/--output"),
    (["cache"], "cache: the following arguments are required: action"),
    (["cache", "wipe"], "cache: argument action: invalid choice: 'wipe'"),
    (["demo", "--epochs", "many"], "demo: argument --epochs: invalid int value: 'many'"),
    (["inspect", "model.py"], "inspect: 'model.py': expected path/to/file.py:function"),
    (["inspect", "/no/such/file.py:f"], "inspect: /no/such/file.py: no such file"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_usage_errors_are_one_line_exit_2(argv, message, capsys):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in one_error_line(captured.err)


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "fns.py"
    path.write_text(textwrap.dedent('''
        def double(x):
            return x * 2

        def unsupported(x):
            raise NotImplementedError("frobnication of tensors")
    '''))
    return str(path)


@pytest.mark.parametrize("command", ["inspect", "export"])
def test_inspect_and_export_report_user_errors_the_same_way(command, user_file, tmp_path, capsys):
    out = ["-o", str(tmp_path / "lib")] if command == "export" else []
    cases = [
        ([f"{user_file}:nope", "--arg", "x=f32[2]"], "has no attribute 'nope'"),
        ([f"{user_file}:double"], "missing --arg for parameter(s) x"),
        ([f"{user_file}:double", "--arg", "x"], "--arg 'x': expected NAME=VALUE"),
        ([f"{user_file}:double", "--arg", "x=i64[2]:grad"], "only floating point tensors can require grad"),
        ([f"{user_file}:unsupported", "--arg", "x=f32[2]"], "not supported: frobnication of tensors"),
    ]
    for argv, message in cases:
        assert cli.main([command, *argv, *out]) == 2, argv
        captured = capsys.readouterr()
        assert message in one_error_line(captured.err), argv


def test_syntax_error_in_the_target_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x:\n    return x\n")
    proc = run_cli("inspect", f"{bad}:f", "--arg", "x=f32[2]")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert one_error_line(proc.stderr).startswith(f"tracegrad: error: inspect: {bad}:1: ")


def test_export_error_in_a_subprocess_is_one_line(user_file, tmp_path):
    proc = run_cli("export", f"{user_file}:unsupported", "--arg", "x=f32[2]", "-o", str(tmp_path / "o"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert one_error_line(proc.stderr) == ("tracegrad: error: export: not supported: "
                                           "frobnication of tensors")


def test_entry_points_lead_to_the_same_main():
    import tracegrad.__main__ as dunder_main

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        script = tomllib.load(f)["project"]["scripts"]["tracegrad"]
    module, _, attr = script.partition(":")
    assert (module, attr) == ("tracegrad.tools.cli", "main")
    assert dunder_main.main is cli.main


# ----------------------------------------------------------------------------- log topics
@pytest.fixture
def no_overrides():
    yield
    _logging.set_logs()


def test_topics_log_through_the_tracegrad_logger_only(monkeypatch, caplog):
    monkeypatch.setenv("TRACEGRAD_LOG", "cache")
    root_handlers = list(logging.getLogger().handlers)
    cf = tg.compile(lambda x: x + 1, backend="interpreter")
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        cf(tg.ones(2))
        cf(tg.ones(2))
    assert logging.getLogger().handlers == root_handlers  # nothing configured on the root
    records = [r for r in caplog.records if "cache] " in r.getMessage()]
    assert records and all(r.name == "tracegrad" and r.levelno == logging.INFO for r in records)
    assert any("hit, program 1 of 1" in r.getMessage() for r in records)
    assert all(r.pathname.endswith(os.path.join("compiler", "api.py")) for r in records)  # the line that logged


def test_unknown_topic_warns_once(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_LOG", "cache, no-such-topic-1")
    with pytest.warns(UserWarning, match=r"TRACEGRAD_LOG: unknown topic 'no-such-topic-1' ignored; "
                                         r"the topics are ir, code, cache, guards, breaks"):
        assert _logging.enabled("cache")
    monkeypatch.setenv("TRACEGRAD_LOG", "no-such-topic-1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not _logging.enabled("cache")
    assert caught == []


def test_set_logs_overrides_the_variable(monkeypatch, caplog, no_overrides):
    monkeypatch.setenv("TRACEGRAD_LOG", "ir")
    _logging.set_logs(guards=True, ir=False)
    assert _logging.enabled("guards") and not _logging.enabled("ir")
    cf = tg.compile(lambda x: x * 3, backend="interpreter")
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        cf(tg.ones(2))
        cf(tg.ones(3))
    assert "guards] retracing <lambda>" in caplog.text and "ir] " not in caplog.text
    _logging.set_logs()
    assert _logging.enabled("ir") and not _logging.enabled("guards")
    with pytest.raises(ValueError, match="unknown topic 'graph'"):
        _logging.set_logs(graph=True)
    with pytest.raises(TypeError, match="takes True or False"):
        _logging.set_logs(ir="yes")


def test_the_fast_path_sees_the_variable_change(monkeypatch):
    """The compiled call reads one attribute while no topic is on; setting the variable (an
    audited os.putenv) makes the next call take the general path, which logs."""
    monkeypatch.delenv("TRACEGRAD_LOG", raising=False)
    cf = tg.compile(lambda x: x - 1, backend="interpreter")
    cf(tg.ones(2))
    cf(tg.ones(2))
    assert _logging.switch.on is False
    monkeypatch.setenv("TRACEGRAD_LOG", "cache")
    assert _logging.switch.on is True and _logging.enabled("cache")
    monkeypatch.delenv("TRACEGRAD_LOG")
    assert not _logging.enabled("cache") and _logging.switch.on is False


LOG_SCRIPT = textwrap.dedent('''
    import logging, sys
    import tracegrad as tg

    cf = tg.compile(lambda x: x + 1, backend="interpreter")
    cf(tg.ones(2))
    print("root handlers:", len(logging.getLogger().handlers), file=sys.stderr)
    print("tracegrad handlers:", len(logging.getLogger("tracegrad").handlers), file=sys.stderr)
    logging.basicConfig(format="ROOT %(message)s")   # the application configures logging later
    cf(tg.ones(3))
    print("tracegrad handlers:", len(logging.getLogger("tracegrad").handlers), file=sys.stderr)
''')


def test_unconfigured_process_gets_one_handler_on_the_tracegrad_logger(tmp_path):
    proc = subprocess.run([sys.executable, "-c", LOG_SCRIPT], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_LOG="cache"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[:4] == ["[tracegrad cache] <lambda>: miss, tracing the first program",
                         "[tracegrad cache] <lambda>: compiled program 1",
                         "root handlers: 0", "tracegrad handlers: 1"]
    # once the root has a handler, ours goes: each later line is printed once, by the root's
    assert lines[4:] == ["ROOT cache] <lambda>: compiled program 2", "tracegrad handlers: 0"]
