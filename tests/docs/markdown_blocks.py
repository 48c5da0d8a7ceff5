"""The fenced code blocks of the project's Markdown documents, and how each is run.

A block is run when its language is a shell (``sh``, ``bash``, ``shell``, ``console``) or Python,
unless the line before its fence (blank lines aside) is ``<!-- not run: reason -->``. ``console``
blocks run their ``$ `` lines and ignore the output shown between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
PYTHON_LANGUAGES = {"python", "py"}
RUN_LANGUAGES = SHELL_LANGUAGES | PYTHON_LANGUAGES

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text, and why it is not run (if it is not)."""

    path: Path
    line: int
    language: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        """``README.md:27``: the fence's line, relative to the checkout."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        """Whether the test runs it: a shell or Python block without a not-run mark."""
        return self.language in RUN_LANGUAGES and self.not_run is None

    def shell_script(self) -> str:
        """The commands of a shell block (for ``console``: its ``$ `` lines, prompt removed)."""
        if self.language != "console":
            return self.code
        return "\n".join(line[2:] for line in self.code.splitlines() if line.startswith("$ "))


def documents() -> list[Path]:
    """README.md and docs/*.md, in the order a newcomer reads them."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> tuple[list[Block], list[str]]:
    """The fenced blocks of ``path``, and the problems found (a not-run mark before no block, a
    mark without a reason, a fence never closed)."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    problems: list[str] = []
    pending: tuple[int, str] | None = None  # a not-run mark waiting for its block
    i = 0
    while i < len(lines):
        mark = _NOT_RUN.match(lines[i])
        fence = _FENCE.match(lines[i])
        if mark:
            if not mark["reason"]:
                problems.append(f"{path.name}:{i + 1}: 'not run' without a reason")
            pending = (i + 1, mark["reason"])
        elif fence:
            end = _closing_fence(lines, i, fence["fence"])
            if end is None:
                problems.append(f"{path.name}:{i + 1}: fence never closed")
                break
            indent = len(fence["indent"])
            code = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
            language = fence["info"].strip().split(" ")[0].lower()
            found.append(Block(path, i + 1, language, code, pending[1] if pending else None))
            pending = None
            i = end
        elif lines[i].strip() and pending is not None:
            problems.append(f"{path.name}:{pending[0]}: a 'not run' mark that no block follows")
            pending = None
        i += 1
    if pending is not None:
        problems.append(f"{path.name}:{pending[0]}: a 'not run' mark that no block follows")
    return found, problems


def _closing_fence(lines: list[str], start: int, fence: str) -> int | None:
    for j in range(start + 1, len(lines)):
        if lines[j].strip() == fence:
            return j
    return None
