"""The wheel ships every subpackage and the scene files (a non-editable install must work)."""
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "physmocap").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject [tool.setuptools] packages: {found - listed}"
    assert cfg["package-dir"]["physmocap.scenes"] == "scenes"
    assert (ROOT / "scenes" / "bodies" / "humanoid.toml").is_file()
