"""Every relative link in the README, the changelog and docs/ leads somewhere.

`mkdocs build --strict` (in `make test`) checks the links between the site's pages; this test
also covers the links the site does not render as pages (the README's to files of the
repository, images) and reads anchors the way the site makes them, so a dead link fails
without MkDocs installed too.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks (a link in code is an example, not a link)."""
    lines, in_fence = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc extension makes it (MkDocs' default)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_]", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page; a repeated heading gets `_1`, `_2`, … as in the toc."""
    found: set[str] = set()
    for line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}_{n}"
        found.add(name)
    return found


def relative_links(page: Path) -> list[str]:
    targets = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto:
            targets.append(target)
    return targets


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            dead.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            dead.append(f"{target}: no heading #{anchor} in {dest.name}")
    return dead


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    assert page.exists(), page
    assert dead_links(page) == []


def test_the_check_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## `henge` settings (`ProductSettings`)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#henge-settings-productsettings) [ok](#here) [web](https://example.org)\n"
        "## Here\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) ![img](img/none.png)\n"
        "```\n[in code](not-a-link.md)\n```\n"
    )
    assert dead_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading #nowhere in other.md",
        "img/none.png: no such file",
    ]


def test_every_page_of_docs_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f": {p.name}" not in nav]
    assert missing == []
