"""What lion_nb's errors and stops print in IPython (``lion_nb.tracebacks``), without a kernel:
the short block, the user's line, the one-line stop, and that a stop stays a true cancellation.
The same in a real kernel, line counts and all: ``tests/kernel/test_error_output.py``."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch
from lion_nb.errors import (
    AuthenticationError,
    ConnectionLost,
    ContextWindowError,
    LionError,
    ResponseFormatError,
    ServerError,
)
from lion_nb.flow.graph import Flow
from lion_nb.signals import StreamDelta
from lion_nb.tracebacks import block, flow_stop_line, stop_line, user_line
from tests.support.scripted import scripted

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def short_tracebacks() -> Iterator[None]:
    lion_nb.debug(False)
    yield
    lion_nb.debug(False)


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


async def test_a_context_window_error_is_a_few_lines_with_the_users_line() -> None:
    branch = Branch(chat_model=scripted("never", context_window=20))
    with pytest.raises(ContextWindowError) as info:
        await branch.communicate("word " * 200)  # the user's line
    lines = info.value._render_traceback_()
    assert len(lines) <= 5, lines
    assert lines[0].startswith("ContextWindowError: the request")
    assert "fit_context=True" in lines[0]  # the fix, in the message itself
    assert not any(line.lstrip().startswith("fix:") for line in lines)  # not said twice
    assert "test_tracebacks.py, line" in lines[-2] and "# the user's line" in lines[-2]
    assert "lion_nb.debug()" in lines[-1] and "%xmode Verbose" in lines[-1]


def test_the_fix_and_the_cause_in_one_line_each() -> None:
    try:
        try:
            raise ConnectionRefusedError("[Errno 111] Connection refused\n  (details)")
        except OSError as low:
            raise ConnectionLost("cannot reach http://127.0.0.1:9", provider="openai") from low
    except LionError as exc:
        lines = block(exc)
    assert lines[0] == "ConnectionLost: [openai] cannot reach http://127.0.0.1:9"
    assert lines[1].strip().startswith("fix: check that the server at base_url is running")
    assert (
        lines[2].strip()
        == "caused by: ConnectionRefusedError: [Errno 111] Connection refused (details)"
    )
    assert "test_tracebacks.py, line" in lines[3]


def test_authentication_names_the_variable_and_api_key_unless_the_message_does() -> None:
    bare = AuthenticationError("authentication failed: invalid key", provider="openai")
    assert bare.hint == "set $OPENAI_API_KEY, or pass api_key= to iModel(...)"
    said = AuthenticationError("no API key: set $ANTHROPIC_API_KEY or pass api_key=")
    assert said.hint is None  # the message says it already


def test_a_hint_set_on_an_instance_is_shown() -> None:
    exc = ServerError("boom", provider="x")
    exc.hint = "try again later"
    assert "  fix: try again later" in block(raised(exc))


def test_debug_and_verbose_give_ipython_its_own_full_traceback() -> None:
    exc = raised(ServerError("boom"))
    assert hasattr(exc, "_render_traceback_")
    lion_nb.debug()
    assert not hasattr(exc, "_render_traceback_")  # IPython then prints the full traceback
    lion_nb.debug(False)
    assert hasattr(exc, "_render_traceback_")
    assert "debug" in lion_nb.__all__ and lion_nb.debug is lion_nb.tracebacks.debug


def test_the_users_line_skips_lion_nb_and_library_frames() -> None:
    def inner() -> None:
        json.loads("{")  # raises inside the standard library

    try:
        inner()
    except ValueError as exc:
        where = user_line(exc.__traceback__)
        innermost = traceback.extract_tb(exc.__traceback__)[-1].filename
    assert "json" in innermost  # the library's frame is the innermost one...
    assert where is not None and 'json.loads("{")' in where  # ...the user's is named
    assert user_line(None) is None


# ----- stops ---------------------------------------------------------------------------------
async def stopped_communicate(**kw: object) -> tuple[asyncio.Task[object], Branch]:
    branch = Branch(chat_model=scripted({"text": "word " * 100, "delay": 0.02}))
    streamed = asyncio.Event()
    branch.observe(StreamDelta, handler=lambda _s: streamed.set())
    task = asyncio.create_task(branch.communicate("hi", **kw))
    await asyncio.wait_for(streamed.wait(), 30)  # a word streamed
    task.cancel()
    await asyncio.wait([task])
    return task, branch


async def test_a_stopped_call_is_one_line_and_still_a_cancellation() -> None:
    task, branch = await stopped_communicate()
    assert task.cancelled()  # asyncio's meaning is untouched
    with pytest.raises(asyncio.CancelledError) as info:
        task.result()
    assert type(info.value) is asyncio.CancelledError  # the very exception, not a new type
    assert info.value._render_traceback_() == ["stopped — nothing recorded"]  # type: ignore[attr-defined]
    assert len(branch.messages) == 0
    pickle.loads(pickle.dumps(info.value))  # still travels (Ray)


async def test_a_stop_that_records_says_the_partial_reply_is_kept() -> None:
    task, branch = await stopped_communicate(on_stop="record")
    assert task.cancelled()
    with pytest.raises(asyncio.CancelledError) as info:
        task.result()
    line = info.value._render_traceback_()  # type: ignore[attr-defined]
    assert line == ["stopped — the partial reply is kept"]
    assert [m.role for m in branch.messages] == ["user", "assistant"]


async def test_under_debug_a_stop_keeps_its_traceback() -> None:
    lion_nb.debug()
    task, _ = await stopped_communicate()
    with pytest.raises(asyncio.CancelledError) as info:
        task.result()
    assert not hasattr(info.value, "_render_traceback_")


async def test_a_stopped_flow_says_what_its_nodes_kept() -> None:
    flow = Flow()
    branch = Branch(chat_model=scripted({"text": "word " * 100, "delay": 0.02}))
    streamed = asyncio.Event()
    branch.observe(StreamDelta, handler=lambda _s: streamed.set())
    flow.add("communicate", branch, instruction="hi")
    task = asyncio.create_task(flow.run())
    await asyncio.wait_for(streamed.wait(), 30)
    assert flow.cancel()  # FlowView's Stop
    await asyncio.wait([task])
    assert task.cancelled()
    with pytest.raises(asyncio.CancelledError) as info:
        task.result()
    line = info.value._render_traceback_()  # type: ignore[attr-defined]
    assert line == ["stopped — nodes: 1 stopped; each keeps what it recorded"]


def test_stop_lines() -> None:
    assert stop_line([]) == "stopped — nothing recorded"
    assert stop_line(["a", "b"]) == "stopped — 2 messages recorded before the stop are kept"
    assert flow_stop_line(["completed", "cancelled", "cancelled"]) == (
        "stopped — nodes: 1 completed, 2 cancelled; each keeps what it recorded"
    )


def test_a_script_keeps_its_ordinary_traceback(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio
            from lion_nb import Branch, iModel

            model = iModel(provider="scripted", replies=["x"], context_window=20)
            asyncio.run(Branch(chat_model=model).communicate("word " * 200))
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1
    err = done.stderr
    assert err.startswith("Traceback (most recent call last):")
    assert "lion_nb/operations/chat.py" in err and "script.py" in err
    assert (
        err.rstrip().splitlines()[-1].startswith("lion_nb.errors.ContextWindowError: the request")
    )
    assert "%xmode" not in err


async def test_a_response_format_that_is_no_model_is_a_short_lion_nb_error() -> None:
    branch = Branch(chat_model=scripted("never"))
    with pytest.raises(ResponseFormatError) as info:
        await branch.communicate("hi", response_format="Person")
    exc = info.value
    assert isinstance(exc, TypeError) and isinstance(exc, ValueError)  # what callers caught
    assert isinstance(exc, LionError) and len(branch.messages) == 0
    lines = exc._render_traceback_()
    # the message carries the fix itself, so no separate "fix:" line repeats it
    assert lines[0].startswith("ResponseFormatError: response_format='Person' is a string")
    assert "pass the pydantic model class itself" in lines[0]
    assert not any(line.startswith("fix:") for line in lines)
    assert any('response_format="Person")' in line for line in lines[1:3])
