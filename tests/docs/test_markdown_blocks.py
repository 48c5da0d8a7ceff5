"""The extraction of fenced blocks and their not-run marks (tests/docs/markdown_blocks.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.markdown_blocks import ROOT, blocks

SAMPLE = """# doc

```sh
echo one
```

<!-- not run: starts a broker on 6650 -->

```python
print("two")
```

  ```console
  $ magnetar --version
  magnetar 0.1.0
  ```

```json
{"a": 1}
```
<!-- not run: -->
text
"""


def test_blocks_languages_marks_and_problems(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(SAMPLE)
    found, problems = blocks(doc)
    assert [(b.line, b.language, b.not_run, b.runnable) for b in found] == [
        (3, "sh", None, True),
        (9, "python", "starts a broker on 6650", False),
        (13, "console", None, True),
        (18, "json", None, False),
    ]
    assert found[0].code == "echo one\n"
    assert found[2].shell_script() == "magnetar --version"
    assert problems == ["doc.md:21: 'not run' without a reason", "doc.md:21: a 'not run' mark that no block follows"]


def test_an_unclosed_fence_is_a_problem(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```sh\necho\n")
    assert blocks(doc) == ([], ["doc.md:1: fence never closed"])


def test_where_is_relative_to_the_checkout() -> None:
    found, _ = blocks(ROOT / "README.md")
    assert found[0].where == f"README.md:{found[0].line}"
