"""Corpus extraction: the public traces the readings name, copied out of local git mirrors.

    python -m tools.corpus_fetch /work/corpus/set --mirrors /work/.mirror

Each reading's `path` is `owner/name@commit:path` or `owner/name@commit:archive.tar.gz:member`. The mirror
of `owner/name` is a bare git directory at MIRRORS/owner+name/repo (what the session's fetch tool writes).
The file is read at the reading's commit when the mirror holds it, else at HEAD (said on stdout), and written
under the reading's `file` name. Traces belong to other projects and are never committed; derived files
(a `derived_from` list) are skipped and said so.
"""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
from pathlib import Path

from tools.corpus import READINGS, load_readings


def _git_show(git_dir: Path, commit: str, path: str) -> bytes | None:
    for rev in (commit, "HEAD"):
        p = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{rev}:{path}"], capture_output=True)
        if p.returncode == 0:
            if rev == "HEAD" and commit:
                print(f"  (commit {commit[:10]} not in the mirror: read at HEAD)")
            return p.stdout
    return None


def extract(reading: dict, mirrors: Path) -> bytes | None:
    """The bytes of one reading's trace, or None when the mirror or the file is missing."""
    repo, _, rest = reading["path"].partition("@")
    commit, _, inner = rest.partition(":")
    archive, sep, member = inner.partition(".tar.gz:")
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return None
    if not sep:
        return _git_show(git_dir, commit, inner)
    blob = _git_show(git_dir, commit, archive + ".tar.gz")
    if blob is None:
        return None
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for info in tar.getmembers():
            if info.isfile() and info.name.lstrip("./").endswith(member):
                f = tar.extractfile(info)
                return f.read() if f else None
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--readings", type=Path, default=READINGS)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    readings = load_readings(a.readings)
    got = 0
    for name, reading in readings.items():
        if reading.get("derived_from"):
            print(f"skip {name}: derived ({reading.get('source', '')})")
            continue
        data = extract(reading, a.mirrors)
        if data is None:
            print(f"missing {name}: {reading['path']}")
            continue
        (a.out / name).write_bytes(data)
        got += 1
    print(f"{got} of {len(readings)} traces in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
