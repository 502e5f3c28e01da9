"""The README and docs/ stand alone in a clone: every relative link resolves inside the repository."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"`(\.\./[^`\s]+)`")       # a path written out, above the repository's root


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_in_the_repository(page):
    for target in relative_links(page):
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert path.exists(), f"{page.name} links a missing file: {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_names_a_file_above_the_repository(page):
    assert OUTSIDE.findall(page.read_text(encoding="utf-8")) == []


def test_the_readme_links_the_user_docs():
    links = relative_links(ROOT / "README.md")
    assert {"docs/design.md", "docs/cli.md", "docs/json.md"} <= set(links)


def test_the_docs_cover_every_subcommand():
    from tracetriage.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in sub.choices if f"tracetriage {name}" not in text]
    assert missing == []


def test_the_readmes_real_library_table_is_what_the_traces_and_the_model_say_now():
    """A change of prediction, of the report's Next or of the measurements shows here: rerun the tool, paste."""
    from tools.realworld_table import rows

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    header = ("| lever | workload | predicted, profiled | measured, profiled | predicted, unprofiled "
              "| measured, unprofiled | report's Next |")
    table = readme.split(header)[1].split("\n\n")[0].strip().splitlines()[1:]   # past the --- row
    assert table == rows()
