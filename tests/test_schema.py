"""The --json contract: `tracetriage schema report|diff|whatif` prints a JSON Schema that every golden
--json file satisfies; every object carries schema_version; a key removed or retyped fails, a key added
passes; CHANGELOG.md names the current version.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from golden import run_cli
from tracetriage.analyzers.output.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def run(*argv: str) -> str:
    return run_cli(list(argv))


def _draft():
    """jsonschema's validator class, imported by the tests that validate, not at collection: every xdist worker collects
    every file, and the import costs ~2 CPU-s where rfc3987-syntax is installed (jsonschema's format checks import
    it, which compiles its grammars with lark at import), paid again by the worker that runs none of these tests."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator


def validator(kind: str):
    return _draft()(json.loads(run("schema", kind)))


@pytest.mark.parametrize("kind", ["report", "diff", "whatif"])
def test_the_printed_schema_is_a_valid_json_schema_of_this_version(kind):
    s = json.loads(run("schema", kind))
    _draft().check_schema(s)
    assert s["$id"] == f"urn:tracetriage:{kind}:{SCHEMA_VERSION}"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_golden_json_validates_against_its_schema(path):
    doc = json.loads(path.read_text())
    errors = sorted(validator(path.parent.name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:3]]
    assert doc["schema_version"] == SCHEMA_VERSION


def test_whatif_json_validates_and_carries_the_version():
    doc = json.loads(run("whatif", "--json", "traces/smell-sync-item.json.gz"))
    validator("whatif").validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION


def test_a_removed_or_retyped_key_fails_and_an_added_key_passes():
    v = validator("report")
    doc = json.loads((GOLDEN / "report" / "smell-sync-item.json").read_text())
    v.validate(doc)
    for edit in (lambda d: d.pop("idle_share"), lambda d: d["idle"].pop("dominant"),
                 lambda d: d["hotspots"][0].update(calls="240"), lambda d: d.update(lines=d["lines"][:4]),
                 lambda d: d["idle"]["evidence"]["synchronization"].pop("sync_calls"),
                 lambda d: d.update(regime="fast")):
        bad = copy.deepcopy(doc)
        edit(bad)
        assert not v.is_valid(bad)
    more = copy.deepcopy(doc)
    more["a_key_added_later"] = {"anything": [1]}
    more["hotspots"][0]["another"] = True
    more["idle"]["evidence"]["host_work"]["new_field"] = 0.5
    assert v.is_valid(more)


def test_the_changelog_lists_the_current_schema_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert f"schema_version {SCHEMA_VERSION}" in text
