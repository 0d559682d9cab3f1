"""The wheel ships every package and the code-generation templates."""
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_templates_are_importable_as_package_data():
    import importlib.resources as resources

    c = {p.name for p in resources.files("tracegrad.compiler.backends.c").joinpath("templates").iterdir()}
    export = {p.name for p in resources.files("tracegrad.compiler.export").joinpath("templates").iterdir()}
    assert "program.c.j2" in c and "runtime.h.j2" in c
    assert "export_wrapper.c.j2" in export


def test_the_wheel_holds_every_package_and_template(tmp_path):
    """Built as pip would build it: every package directory and every template is inside."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr[-300:]}")
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in (ROOT / "tracegrad").rglob("__init__.py"):
        assert str(init.relative_to(ROOT)) in names
    for template in (ROOT / "tracegrad").rglob("templates/**/*"):
        if template.is_file():  # (templates/runtime/: the C runtime's themes)
            assert str(template.relative_to(ROOT)) in names
    assert "tracegrad/py.typed" in names
