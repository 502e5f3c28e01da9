"""mypy reads the installed names through .mypy_layout/: it must map exactly what pyproject's package-dir maps.

mypy cannot follow the editable install's import hook, so .mypy_layout/tracetriage/X is a symbolic link to
the folder that setuptools installs as tracetriage.X; a folder added to package-dir without its link would
leave mypy blind to it (and a stale link would point it at the wrong code).
"""
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / ".mypy_layout" / "tracetriage"


def _package_dir() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]


def test_every_installed_folder_has_its_link_and_no_link_is_stale():
    mapped = {name.removeprefix("tracetriage."): folder
              for name, folder in _package_dir().items() if name != "tracetriage"}
    links = {p.name: p for p in LAYOUT.iterdir()}
    assert sorted(links) == sorted(mapped)
    for name, folder in mapped.items():
        assert links[name].is_symlink(), f"{links[name]} is not a link"
        assert links[name].resolve() == (ROOT / folder).resolve(), f"{name} links to {links[name].resolve()}"


def test_mypy_is_pointed_at_the_layout():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert (ROOT / mypy["mypy_path"]).resolve() == LAYOUT.parent.resolve()
    assert mypy["files"] == ["tracetriage/"]
