"""The README's Python example runs as written, and its commands match .ci/run."""

from __future__ import annotations

import re

from conftest import REPO


def test_readme_python_example_runs() -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README lost its Python example"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert float(namespace["jac"].values.max()) <= 0.5 + 1e-9  # type: ignore[attr-defined]


def test_ci_runs_the_readme_test_command() -> None:
    text = (REPO / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert len(commands) == 2, "the README keeps exactly two set-up commands"
    assert commands[1] in (REPO / ".ci" / "run").read_text()
