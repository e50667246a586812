"""Rich renderables, pinned as exact text from a 60-column colourless console.

Lines are compared with trailing spaces stripped (rich pads Markdown lines to the width)."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction, System
from lion_nb.render.rich import MessageRenderable, TranscriptRenderable

T = datetime(2024, 5, 1, 12, 30, 5, tzinfo=UTC)


def _print(renderable: object) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=60, color_system=None)
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in out.split("\n"))


def test_assistant_with_thinking_usage_and_markdown() -> None:
    m = AssistantResponse(
        response="Let me *compute*: [docs](https://x.org).\n\n- one\n- two",
        metadata={
            "thinking": "hmm [bold]x[/bold]",
            "model": "gpt-x",
            "stopped": True,
            "usage": {"input_tokens": 1234, "output_tokens": 56, "total_cost_usd": 0.0012},
        },
        created_at=T,
    )
    assert _print(MessageRenderable(m)) == (
        "Assistant · gpt-x · 12:30:05 ───────────────────────────────\n"
        "1,234 in · 56 out · $0.0012 · stopped\n"
        "╭─ thinking ───────────────────────────────────────────────╮\n"
        "│ hmm [bold]x[/bold]                                       │\n"
        "╰──────────────────────────────────────────────────────────╯\n"
        "Let me compute: docs (https://x.org).\n"
        "\n"
        " • one\n"
        " • two\n"
    )


def test_tool_call_and_results() -> None:
    req = ActionRequest(
        function="[red]add", arguments={"a": 2, "b": "\x1b[31m"}, call_id="c1", created_at=T
    )
    ok = ActionResponse(function="add", output={"sum": 4}, created_at=T)
    err = ActionResponse(
        function="div", output="ZeroDivisionError\x07\x1b[2J", is_error=True, created_at=T
    )
    assert _print(MessageRenderable(req)) == (
        "Action request · [red]add · 12:30:05 ───────────────────────\n"
        "{\n"
        '  "a": 2,\n'
        '  "b": "\\u001b[31m"\n'
        "}\n"
    )
    assert _print(MessageRenderable(ok)) == (
        'Action response · add · 12:30:05 ───────────────────────────\n{\n  "sum": 4\n}\n'
    )
    # Control characters are shown, never sent to the terminal.
    assert _print(MessageRenderable(err)) == (
        "Action response · div · error · 12:30:05 ───────────────────\nZeroDivisionError␇␛[2J\n"
    )


def test_transcript() -> None:
    messages = [
        System(system="Be **brief**.", created_at=T),
        Instruction(
            instruction="What is 2+2?",
            guidance="Use tools",
            context=["ctx"],
            images=["https://i.example/a.png"],
            created_at=T,
        ),
        AssistantResponse(response="", created_at=T),
    ]
    assert _print(TranscriptRenderable(messages, title="Demo")) == (
        "═══════════════════════════ Demo ═══════════════════════════\n"
        "\n"
        "System · 12:30:05 ──────────────────────────────────────────\n"
        "Be brief.\n"
        "\n"
        "User · 12:30:05 ────────────────────────────────────────────\n"
        "What is 2+2?\n"
        "guidance:\n"
        "Use tools\n"
        "context:\n"
        "[\n"
        '  "ctx"\n'
        "]\n"
        "1 image(s) attached\n"
        "\n"
        "Assistant · 12:30:05 ───────────────────────────────────────\n"
        "(no text)\n"
    )
    assert _print(TranscriptRenderable([])) == ""


def test_plain_content_and_structured_instruction() -> None:
    plain = Instruction(plain_content="Exactly *this*", sender="alice", created_at=T)
    structured = Instruction(instruction={"task": "sum", "values": [1, 2]}, created_at=T)
    assert _print(MessageRenderable(plain)) == (
        "User · alice · 12:30:05 ────────────────────────────────────\nExactly this\n"
    )
    assert _print(MessageRenderable(structured)) == (
        "User · 12:30:05 ────────────────────────────────────────────\n"
        "{\n"
        '  "task": "sum",\n'
        '  "values": [\n'
        "    1,\n"
        "    2\n"
        "  ]\n"
        "}\n"
    )


def _loaded_after(imports: str, names: tuple[str, ...]) -> list[str]:
    code = f"import sys\n{imports}\nprint([m for m in {names!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout)  # a list literal we printed ourselves


def test_render_package_is_lazy() -> None:
    heavy = ("rich", "markdown_it", "nh3", "pygments", "IPython", "ipywidgets")
    assert _loaded_after("import lion_nb, lion_nb.render, lion_nb.messages", heavy) == []
    # the HTML/text renderers need markdown-it, nh3 and pygments, but never rich
    assert _loaded_after("from lion_nb.render import html, text", heavy) == [
        "markdown_it",
        "nh3",
        "pygments",
    ]
