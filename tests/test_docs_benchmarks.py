"""docs/benchmarks.md stays a results page a user can read, and its lab notes stay reachable.

The page grew into a 1,642-line lab notebook with scratch-folder paths in its commands
(issue 42). These checks keep the split it got then: the page short, no machine paths on
it or in docs/lab/, every lab note linked from somewhere, and every link into the page or
the notes (from the docs, the README, the examples' comments, the code's docstrings)
pointing at a file and a heading that exist, since sections move between the two.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGE = DOCS / "benchmarks.md"
LAB = DOCS / "lab"
MAX_LINES = 450  # the page's budget: "at most about 400 lines", with a little slack
MACHINE_PATHS = re.compile(r"(?<![\w.])/(tmp|root|work|home)/")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a link to the page or a note written in plain text (code comments, Makefile, YAML)
PLAIN_REF = re.compile(r"(docs/(?:lab/[\w.-]+\.md|benchmarks\.md))#([\w-]+)")


def lab_notes() -> list[Path]:
    return sorted(LAB.glob("*.md"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def without_code(text: str) -> str:
    """``text`` without fenced blocks and inline code spans (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "code", text)


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, duplicates numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for line in re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def relative_links(path: Path) -> list[tuple[Path, str]]:
    """``(target file, anchor or "")`` of every relative link in a markdown file."""
    out = []
    for target in LINK.findall(without_code(path.read_text())):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        out.append(((path.parent / file).resolve() if file else path.resolve(), anchor))
    return out


def docs_with_links() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_page_is_short() -> None:
    lines = PAGE.read_text().count("\n")
    assert lines <= MAX_LINES, f"docs/benchmarks.md has {lines} lines: move history to docs/lab/"


@pytest.mark.parametrize("path", [PAGE, *lab_notes()], ids=lambda p: p.name)
def test_no_machine_paths(path: Path) -> None:
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if MACHINE_PATHS.search(line)
    ]
    assert not found, "machine paths (write runs/... or a <placeholder>):\n" + "\n".join(found)


def test_every_lab_note_is_linked_from_another_page() -> None:
    assert lab_notes(), "docs/lab/ has no notes"
    linked = {
        target
        for doc in docs_with_links()
        for target, _ in relative_links(doc)
        if target != doc.resolve()
    }
    orphans = [p.name for p in lab_notes() if p.resolve() not in linked]
    assert not orphans, f"lab notes no page links to: {orphans}"


@pytest.mark.parametrize("doc", docs_with_links(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_into_the_results_and_the_notes_resolve(doc: Path) -> None:
    """Links of the page and the notes, and links from any doc into them, reach a file
    and, where they name one, a heading of it."""
    own = doc == PAGE or doc.parent == LAB
    broken = []
    for target, anchor in relative_links(doc):
        if not own and target != PAGE and target.parent != LAB:
            continue
        if not target.exists():
            broken.append(f"{target.relative_to(ROOT)} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{target.relative_to(ROOT)}#{anchor} (no such heading)")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_plain_text_references_name_existing_headings() -> None:
    """``docs/benchmarks.md#anchor`` in comments and docstrings (examples, code, Makefile)."""
    files = [
        ROOT / "Makefile",
        ROOT / "pyproject.toml",
        *ROOT.glob("examples/**/*.yaml"),
        *ROOT.glob("src/**/*.py"),
        *ROOT.glob("bench/*.py"),
    ]
    broken = [
        f"{path.relative_to(ROOT)}: {file}#{anchor}"
        for path in files
        for file, anchor in PLAIN_REF.findall(path.read_text())
        if not (ROOT / file).exists() or anchor not in anchors(ROOT / file)
    ]
    assert not broken, "references to missing headings:\n" + "\n".join(broken)
