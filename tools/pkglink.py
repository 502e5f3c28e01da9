"""The working tree importable as pyproject installs it, without installing it: a folder of links for PYTHONPATH.

    PKG=$(python3 tools/pkglink.py /tmp/work-pkg)       # shell: links, then prints the folder for PYTHONPATH
    from tools.pkglink import link_package              # Python: link_package(Path("/tmp/work-pkg"))

pyproject's package-dir maps tracetriage.analyzers to analyzers/, tracetriage.capture to capture/, ... . On a
device machine the repository is not pip-installed; DIR/tracetriage gives the same namespace: a link to each entry
of tracetriage/ and to each mapped folder. Only DIR goes on PYTHONPATH, never the repository's root, and Python
runs with PYTHONSAFEPATH=1 (or -P) so that neither the current directory nor a script's own folder goes first:
the root's top-level folders (kernels/, capture/, tracetriage/ without its mapped folders) would shadow packages
of those names (transformers imports the hub's optional `kernels` package where it finds one, and found ours).
The standard library only (tomllib: Python 3.11 or later), so it runs before anything of ours imports.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_dir(root: Path = ROOT) -> dict[str, str]:
    """pyproject's [tool.setuptools] package-dir: {"tracetriage": "tracetriage", "tracetriage.capture": ...}."""
    import tomllib  # (3.11 or later, as the device's Python is; the package itself supports 3.10)

    return tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def link_package(pkg: Path, root: Path = ROOT) -> Path:
    """pkg/tracetriage as pyproject installs it, made afresh: tracetriage/'s entries and each mapped folder, as links.
    Returns pkg, the folder to put on PYTHONPATH."""
    top = pkg / "tracetriage"
    if pkg.exists():
        _refuse_unless_ours(pkg)
        shutil.rmtree(pkg)                      # (removes the links, never what they point at)
    top.mkdir(parents=True)
    mapping = package_dir(root)
    for entry in (root / mapping["tracetriage"]).iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for name, folder in mapping.items():
        parts = name.split(".")
        if len(parts) == 2:                     # tracetriage.analyzers -> analyzers/ (deeper ones live inside)
            (top / parts[1]).symlink_to(root / folder)
    return pkg


def _refuse_unless_ours(pkg: Path) -> None:
    """A folder this made holds tracetriage/ and links only: anything else is someone's, and stays."""
    top = pkg / "tracetriage"
    entries = list(pkg.iterdir())
    if entries and (entries != [top] or top.is_symlink() or not all(e.is_symlink() for e in top.iterdir())):
        raise FileExistsError(f"{pkg} is not a folder of links made by tools/pkglink.py: not replaced")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 tools/pkglink.py DIR   (links the package into DIR, prints DIR)", file=sys.stderr)
        return 2
    try:
        print(link_package(Path(args[0]).resolve()))
    except (OSError, KeyError, ValueError) as e:      # (tomllib.TOMLDecodeError is a ValueError)
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
