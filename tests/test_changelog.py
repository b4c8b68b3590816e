"""CHANGELOG.md tells one version story, the one ``selrank.__version__`` tells (issue 31)."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

import selrank

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"
# "## [0.2.0] — unreleased" or "## [0.1.0]" / "## [0.1.0] — 2026-01-31"
HEADING = re.compile(r"^\[(?P<version>[^\]]+)\](?: — (?P<when>unreleased|\d{4}-\d{2}-\d{2}))?$")


def _sections() -> list[tuple[Version, str | None]]:
    out = []
    for line in CHANGELOG.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            m = HEADING.match(line[3:].strip())
            assert m, f"CHANGELOG.md: {line!r} is not '## [X.Y.Z]' or '## [X.Y.Z] — unreleased'"
            out.append((Version(m["version"]), m["when"]))
    return out


def test_top_section_is_the_package_version() -> None:
    sections = _sections()
    assert sections, "CHANGELOG.md has no '## [version]' section"
    top, when = sections[0]
    version = Version(selrank.__version__)
    if version.is_prerelease or version.is_devrelease:
        # a development version is the top section's release, still unreleased
        assert when == "unreleased", f"{selrank.__version__} is unreleased; the top says {when}"
        assert top == Version(version.base_version), (top, selrank.__version__)
    else:
        assert when != "unreleased", f"{selrank.__version__} is a release; the top is unreleased"
        assert top == version, (top, selrank.__version__)


def test_one_unreleased_section_and_versions_descend() -> None:
    sections = _sections()
    unreleased = [i for i, (_, when) in enumerate(sections) if when == "unreleased"]
    assert unreleased in ([], [0]), "only the top section may be unreleased"
    versions = [v for v, _ in sections]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
