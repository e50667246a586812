"""The front-end module (``widgets/lion_nb.js``) stays small parts: no function longer than
~80 lines (house style rule 20), and its FNV-1a agrees with the kernel's ``fingerprint``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lion_nb.widgets.channel import fingerprint

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "widgets").glob("*.js"))
MAX_LINES = 80

# where a function body opens: `function f(...) {`, `(...) => {`, `x => {`, a method `f(...) {`
_OPENS = re.compile(
    r"function\s*\*?\s*[\w$]*\s*\([^()]*\)\s*\{$"
    r"|=>\s*\{$"
    r"|^\s*(?:async\s+)?(?!(?:if|for|while|switch|catch|with)\b)[\w$]+\s*\([^()]*\)\s*\{$"
)


def _code(source: str) -> str:
    """``source`` with string contents and comments blanked (newlines kept), so braces in
    them are not counted."""
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i) + 2
            out.append(re.sub(r"[^\n]", " ", source[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(source: str) -> list[tuple[int, int]]:
    """``(first line, number of lines)`` of every function in ``source``."""
    code = _code(source)
    found = []
    for m in re.finditer(r"\{", code):
        head = code[code.rfind("\n", 0, m.start()) + 1 : m.end()]
        if not _OPENS.search(head):
            continue
        depth = 0
        for j in range(m.start(), len(code)):
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            if depth == 0:
                first = code.count("\n", 0, m.start()) + 1
                found.append((first, code.count("\n", m.start(), j) + 1))
                break
    return found


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_no_function_is_longer_than_a_screen(module: Path) -> None:
    source = module.read_text()
    found = functions(source)
    assert len(found) > 20  # the scan sees the module's functions
    long = [(line, size) for line, size in found if size > MAX_LINES]
    assert not long, f"{module.name}: functions over {MAX_LINES} lines at (line, lines): {long}"


def test_the_scan_finds_a_long_function() -> None:
    body = "\n".join(f"  x += {i};" for i in range(90))
    source = f"function long(a) {{\n{body}\n}}\nconst f = (b) => {{\n  return '}}';\n}};\n"
    assert functions(source) == [(1, 92), (93, 3)]


STRINGS = ["", "a", "abc", '<div class="lion-msg">é</div>', "emoji 🦁 and ∑ and \u0000", "x" * 1000]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_fnv_is_the_same_in_both_languages() -> None:
    script = (
        f"import {{ fnv }} from {json.dumps((ROOT / 'widgets' / 'lion_nb.js').as_uri())};"
        f"console.log(JSON.stringify({json.dumps(STRINGS)}.map(fnv)));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(out.stdout) == [fingerprint(s) for s in STRINGS]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_reveal_cuts_after_k_non_space_characters_never_inside_a_surrogate_pair() -> None:
    # makeReveal shows the first k non-space characters of a text node: cutAt(text, k) is
    # the length of the shortest start of `text` holding them
    cases = [("ab c", 3), ("  a b", 1), ("abc", 0), ("ab", 5), ("x🦁y", 2), ("a\n\nb", 2)]
    script = (
        f"import {{ cutAt }} from {json.dumps((ROOT / 'widgets' / 'lion_nb.js').as_uri())};"
        f"console.log(JSON.stringify({json.dumps(cases)}.map(([t, k]) => cutAt(t, k))));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # "x🦁y": the lion is two UTF-16 code units, kept together
    assert json.loads(out.stdout) == [4, 3, 0, 2, 3, 4]
