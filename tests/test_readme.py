"""The README's first example runs as written (top-level await, as in a notebook cell)."""

import re
import textwrap
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


async def test_readme_example_runs_and_says_what_it_claims():
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    body = textwrap.indent(block, "    ")
    namespace: dict = {}
    exec(f"async def example():\n{body}\n    return branch", namespace)
    branch = await namespace["example"]()
    assert len(branch.messages) == 3
    assert [m.role for m in branch.messages] == ["system", "user", "assistant"]
