"""The wheel ships every package and the code-generation templates."""
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_package_directory_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tracegrad").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject's packages: {sorted(found - listed)}"
    assert "tracegrad.codegen_templates" in listed


def test_templates_are_importable_as_package_data():
    import importlib.resources as resources

    names = {p.name for p in resources.files("tracegrad.codegen_templates").iterdir()}
    assert any(n.endswith(".j2") for n in names)
