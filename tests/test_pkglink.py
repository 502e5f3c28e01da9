"""tools/pkglink.py: the working tree importable as pyproject maps it, from a folder of links, so that the device's
drivers (capture/record_realworld.sh, tools/try_h200/run_all.py) never put the repository's root on the path."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.pkglink import link_package, package_dir

ROOT = Path(__file__).resolve().parent.parent
WHERE = ("import importlib.util as u, json; print(json.dumps({m: getattr(u.find_spec(m), 'origin', None) "
         "for m in ('kernels', 'capture', 'tracetriage.capture', 'tracetriage.analyzers.whatif')}))")


def resolved(pythonpath: str) -> dict:
    """Where each name resolves in a fresh Python run from the repository's root with this PYTHONPATH (-P: as the
    drivers run theirs, no current directory first)."""
    p = subprocess.run([sys.executable, "-P", "-c", WHERE], cwd=ROOT, env={"PYTHONPATH": pythonpath, "PATH": ""},
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def test_the_links_import_the_working_tree_and_shadow_no_package_named_like_its_folders(tmp_path):
    pkg = link_package(tmp_path / "pkg")
    mapped = {name.split(".")[1]: folder for name, folder in package_dir().items() if name.count(".") == 1}
    assert {"analyzers", "capture", "kernels", "dashboard", "drills"} <= set(mapped)
    assert all((pkg / "tracetriage" / sub).resolve() == ROOT / folder for sub, folder in mapped.items())
    got = resolved(str(pkg))
    assert got["tracetriage.capture"] == str(pkg / "tracetriage" / "capture" / "__init__.py")
    assert Path(got["tracetriage.analyzers.whatif"]).resolve() == ROOT / "analyzers" / "whatif" / "__init__.py"
    for name in ("kernels", "capture"):          # a library's own package of that name, or none: never our folder
        assert got[name] is None or not Path(got[name]).resolve().is_relative_to(ROOT), got
    # what the repository's root on the path did: transformers found our kernels/ as the hub's `kernels`
    assert resolved(str(ROOT))["kernels"] == str(ROOT / "kernels" / "__init__.py")


def test_a_folder_that_is_not_its_own_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a folder of links made by tools/pkglink.py"):
        link_package(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    pkg = link_package(tmp_path / "pkg")
    assert link_package(pkg) == pkg                      # its own folder is made afresh
