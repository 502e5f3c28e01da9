"""What `pip install` puts on sys.path: one namespace, tracetriage.*, and every package of it.

pyproject.toml maps the repository's folders onto tracetriage.* (package-dir) and lists the packages by
hand, so a new folder with an __init__.py that nobody lists would be missing from a wheel while the
editable install, which maps whole folders, still finds it. These tests read the same table setuptools
reads.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from tracetriage.drills.tomlread import tomllib

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    out = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            out.add(".".join([name, *rel.parts]))
    return out


def test_every_folder_with_an_init_is_a_listed_package_and_every_listed_one_exists():
    assert set(SETUPTOOLS["packages"]) == _packages_on_disk()


def test_everything_installed_is_under_the_tracetriage_name():
    assert all(p == "tracetriage" or p.startswith("tracetriage.") for p in SETUPTOOLS["packages"])
    assert all(name.startswith("tracetriage") for name in SETUPTOOLS["package-dir"])
    assert "tools" not in {p.split(".")[0] for p in SETUPTOOLS["packages"]}     # the developers' scripts stay home


def test_the_data_files_the_package_reads_are_declared():
    data = SETUPTOOLS["package-data"]
    assert "bank/*.toml" in data["tracetriage.drills"] and "vocab.toml" in data["tracetriage.drills"]
    assert "aten_ops.txt" in data["tracetriage.analyzers.model"]
    assert list((ROOT / "drills" / "bank").glob("*.toml")) and (ROOT / "analyzers" / "model" / "aten_ops.txt").exists()


SETUP_PY = (ROOT / "setup.py").read_text(encoding="utf-8")
# setup.py's C extensions: (module name, its source), e.g. ("tracetriage.analyzers.loading.eventscan",
# "analyzers/loading/eventscan.c")
EXTENSIONS = re.findall(r'Extension\("([\w.]+)", \["([\w/.]+\.c)"\]', SETUP_PY)


def _extension_file(f: Path) -> bool:
    """An extension's C source (setup.py compiles it; sdists and wheels carry it as they carry every file
    under a package that the sdist lists) or the module compiled from it (the editable install builds it in
    place)."""
    rel = f.relative_to(ROOT).as_posix()
    return any(rel == source for _, source in EXTENSIONS) or any(
        f.name.startswith(name.rsplit(".", 1)[1] + ".") and f.name.endswith(tuple(EXTENSION_SUFFIXES))
        for name, _ in EXTENSIONS)


def test_the_native_scan_is_an_optional_extension_built_inside_the_package_it_is_named_under():
    """optional=True: with no C compiler the install still succeeds (msgspec decodes). The module's name maps,
    through package-dir, onto the folder its source is in, so the editable install builds it there."""
    assert EXTENSIONS == [("tracetriage.analyzers.loading.eventscan", "analyzers/loading/eventscan.c")]
    assert "optional=True" in SETUP_PY
    name, source = EXTENSIONS[0]
    package = name.rsplit(".", 1)[0]
    top = max((k for k in SETUPTOOLS["package-dir"] if package == k or package.startswith(k + ".")), key=len)
    folder = Path(SETUPTOOLS["package-dir"][top], *package[len(top) + 1:].split("."))
    assert package in SETUPTOOLS["packages"] and (ROOT / source).parent == ROOT / folder and (ROOT / source).exists()


def test_every_file_beside_the_code_is_declared_data_so_a_wheel_carries_it():
    """A wheel carries .py files and the package-data globs only: a file in a package folder that no glob names
    (an icon, a table the code reads) works in the editable install and is missing from a wheel."""
    data = SETUPTOOLS["package-data"]
    undeclared = []
    for package in sorted(_packages_on_disk()):
        top, *rest = package.split(".", 2)[:2] if package.count(".") else (package,)
        name = ".".join([top, *rest])
        if name in SETUPTOOLS["package-dir"]:
            folder = ROOT / SETUPTOOLS["package-dir"][name] / Path(*package.split(".")[2:])
        else:       # a package inside tracetriage/ itself (tracetriage.trial): under tracetriage's own folder
            folder = ROOT / SETUPTOOLS["package-dir"][top] / Path(*package.split(".")[1:])
        for f in folder.iterdir():
            if f.is_file() and f.suffix not in (".py", ".pyc") and not _extension_file(f):
                if not any(f.relative_to(folder).match(glob) for glob in data.get(package, [])):
                    undeclared.append(str(f.relative_to(ROOT)))
    assert not undeclared, undeclared


def test_from_outside_the_checkout_only_tracetriage_is_ours(tmp_path):
    """The bare names belong to other projects on the package index (a GPU kernel hub is called `kernels`)."""
    probe = ("import importlib.util, json, sys\n"
             "names = ['analyzers', 'capture', 'kernels', 'dashboard', 'drills', 'tools', 'tracetriage']\n"
             "specs = {n: importlib.util.find_spec(n) for n in names}\n"
             "found = {n: (s.origin if s else None) for n, s in specs.items()}\n"
             "print(json.dumps(found))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    ours = {n for n, origin in found.items() if origin and str(ROOT) in origin}
    assert ours == {"tracetriage"}, found


@pytest.mark.slow
def test_without_a_c_compiler_the_package_still_builds_and_only_the_scan_is_missing(tmp_path):
    """setup.py's extension is optional: a wheel built where the compiler fails (CC=false) has every module
    but the native scan, and the decoder then reads traces with msgspec (tests/test_native_scan.py)."""
    src = tmp_path / "src"
    src.mkdir()
    for f in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / f, src / f)
    for folder in set(SETUPTOOLS["package-dir"].values()):    # (the built module left out: a clean checkout's)
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    env = {**os.environ, "CC": "false"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "wheel"), str(src)], check=True, env=env, capture_output=True)
    import zipfile

    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tracetriage/analyzers/loading/native.py" in names and "tracetriage/cli.py" in names
    assert not [n for n in names if "eventscan" in n and n.endswith(tuple(EXTENSION_SUFFIXES))]
