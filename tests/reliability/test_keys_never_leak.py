"""API keys given as arguments and as environment variables never show up in anything
lion_nb produces — recorded messages, snapshots and run buffers on disk, exports, reprs, views,
log records (DEBUG), stdout/stderr, signals, exceptions (message, repr, traceback, body, stderr,
partial text) — across every verb that works offline or on loopback, and across provider
failures that echo the key back (401/500 bodies, an SSE error event, a CLI printing it on
stderr). And a CLI agent's process receives its own vendor's key, not everyone else's.

Each key is distinct, so a failure names the source that leaked.
"""

from __future__ import annotations

import io
import json
import logging
import os
import traceback
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import AuthenticationError, CLIError, ProviderError, ServerError
from tests.servers.chat_server import ChatServer, ErrorReply, RawReply, Reply
from tests.support.fake_cli import FakeCLI, make_fake_cli, recording

KEYS = {
    "OPENAI_API_KEY": "sk-env-openai-a81d0c4e92f7",
    "ANTHROPIC_API_KEY": "sk-ant-env-6b2e9f14c7d3",
    "GEMINI_API_KEY": "AIza-env-gemini-4e8b1d2f60",
    "GOOGLE_API_KEY": "AIza-env-google-93c5e7a1b8",
    "CODEX_API_KEY": "sk-env-codex-5d0f2a8c4e61",
    "OPENROUTER_API_KEY": "sk-or-env-7a3c9e1f5b20",
    "GITHUB_TOKEN": "ghp_envunrelated0c8e4a2f9d",
    "AWS_SECRET_ACCESS_KEY": "aws-env-secret-2f6b8d0e4c1a",
}
ARG_KEYS = {
    "openai api_key=": "sk-arg-openai-3f9c1e7d5b08",
    "claude api_key=": "sk-ant-arg-0d5c7a9e31f4",
    "env= argument": "tok-arg-env-8e2a6c0f4d97",
}
ALL = {**{f"${k}": v for k, v in KEYS.items()}, **ARG_KEYS}


@pytest.fixture
def keys_in_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return KEYS


class Artifacts:
    """Everything produced, as labelled text, then one scan for every key."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, label: str, obj: Any) -> None:
        if isinstance(obj, BaseException):
            self.add_error(label, obj)
        elif isinstance(obj, bytes):
            self.items.append((label, obj.decode("utf-8", "replace")))
        elif isinstance(obj, str):
            self.items.append((label, obj))
        else:
            self.items.append((label, repr(obj)))
            try:
                self.items.append((f"{label} (json)", json.dumps(obj, default=repr)))
            except (TypeError, ValueError):
                pass

    def add_error(self, label: str, error: BaseException) -> None:
        self.items.append((f"{label} str", str(error)))
        self.items.append((f"{label} repr", repr(error)))
        self.items.append((f"{label} traceback", "".join(traceback.format_exception(error))))
        for attr in ("body", "stderr", "partial_text", "partial_thinking", "message", "args"):
            if hasattr(error, attr):
                self.items.append((f"{label} .{attr}", repr(getattr(error, attr))))

    def add_tree(self, label: str, root: Path) -> int:
        count = 0
        for path in sorted(root.rglob("*")):
            if path.is_file():
                count += 1
                self.add(f"{label}/{path.relative_to(root)}", path.read_bytes())
        return count

    def add_branch(self, label: str, branch: Branch) -> None:
        """Every way a branch is shown or saved."""
        from rich.console import Console

        from lion_nb.export import export_html, export_json, export_markdown
        from lion_nb.render.html import transcript_html

        self.add(f"{label} to_dict", branch.to_dict())
        self.add(f"{label} export_json", export_json(branch))
        self.add(f"{label} export_markdown", export_markdown(branch))
        self.add(f"{label} export_html", export_html(branch))
        self.add(f"{label} transcript_html", transcript_html(branch.messages, standalone=True))
        self.add(f"{label} _repr_html_", branch._repr_html_())
        self.add(f"{label} _repr_markdown_", branch._repr_markdown_())
        console = Console(file=io.StringIO(), width=100, color_system=None)
        console.print(branch)
        self.add(f"{label} rich", console.file.getvalue())  # type: ignore[attr-defined]
        self.add(f"{label} repr", repr(branch))
        for i, message in enumerate(branch.messages):
            self.add(f"{label} message {i} repr", repr(message))
            self.add(f"{label} message {i} json", message.model_dump_json())
        for name in ("_chat_model", "_parse_model"):
            model = getattr(branch, name)
            if model is not None:
                self.add(f"{label} {name} repr", repr(model))
                self.add(f"{label} {name} to_dict", model.to_dict())
                self.add(f"{label} {name} provider repr", repr(model.provider))
                self.add(f"{label} {name} copy repr", repr(model.copy()))

    def leaks(self, keys: dict[str, str] = ALL) -> list[str]:
        return [
            f"{source} in {label}"
            for label, text in self.items
            for source, key in keys.items()
            if key in text
        ]


def assert_no_leaks(out: Artifacts, keys: dict[str, str] = ALL) -> None:
    leaks = out.leaks(keys)
    assert not leaks, "secrets leaked:\n" + "\n".join(leaks)


def capture_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Every logger at DEBUG (httpx, asyncio, lion_nb...), except markdown-it's per-rule trace,
    which logs only parser states."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.INFO, logger="markdown_it")


def log_records(caplog: pytest.LogCaptureFixture) -> str:
    """The captured log as text, plus each record's raw args (a handler may format them
    differently from caplog)."""
    parts = [caplog.text]
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(repr(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
    return "\n".join(parts)


class Answer(BaseModel):
    answer: str


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def sse_body(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def text_event(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }


async def test_api_verbs_errors_exports_and_views_never_show_a_key(
    chat_server: ChatServer, keys_in_env, caplog, capsys, tmp_path
) -> None:
    from lion_nb.port.stream_persist import write_snapshot
    from lion_nb.provenance import provenance_of

    capture_logs(caplog)
    key = ARG_KEYS["openai api_key="]
    model = iModel(
        provider="openai",
        model="test-model",
        base_url=chat_server.base_url,
        api_key=key,
        max_retries=0,
    )
    branch = Branch(system="Be brief.", chat_model=model, tools=[add])
    provenance_of(branch)  # the provenance table is exported too: record from the start
    seen: list[Any] = []
    branch.observe(handler=seen.append)
    out = Artifacts()

    chat_server.script(
        Reply("hello"),
        Reply("recorded"),
        Reply('{"answer": "42"}'),
        Reply('{"answer": "7"}'),  # the parse repair turn
        Reply("a clearer prompt"),
        Reply('{"answer": "operated"}'),
        Reply(tool_calls=[{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_1"}]),
        Reply(json.dumps({"analysis": "2+3=5", "extension_needed": False})),
        Reply(json.dumps({"answer": "5"})),
    )
    out.add("chat", await branch.chat("hi"))
    out.add("chat_and_record", await branch.chat_and_record("record this"))
    out.add("communicate", await branch.communicate("q", response_format=Answer))
    out.add(
        "parse",
        await branch.parse("no JSON in here", Answer, parse_model=model, max_retries=1),
    )
    out.add("interpret", await branch.interpret("make this clearer", interpret_model=model))
    out.add("operate", await branch.operate(instruction="op", response_format=Answer))
    out.add("ReAct", await branch.ReAct("add 2 and 3", max_extensions=1))
    assert chat_server.pending == 0  # every verb really went over HTTP

    # Provider failures that echo the key back.
    echo = {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid"}}
    chat_server.script(
        ErrorReply(401, body=echo),
        ErrorReply(
            500, body=f"upstream saw Authorization: Bearer {key} and {KEYS['OPENAI_API_KEY']}"
        ),
        RawReply(
            sse_body(text_event("partial "), {"error": {"message": f"bad key {key}"}}),
            content_type="text/event-stream",
        ),
    )
    errors: list[BaseException] = []
    for _ in range(3):
        with pytest.raises(ProviderError) as info:
            await branch.communicate("this fails")
        errors.append(info.value)
    assert [type(e) for e in errors][:2] == [AuthenticationError, ServerError]
    assert getattr(errors[2], "partial_text", None) == "partial "
    for n, error in enumerate(errors):
        out.add(f"error {n}", error)

    # A retried failure is logged (INFO) with the server's message, which quotes the key.
    retrying = iModel(
        provider="openai",
        model="test-model",
        base_url=chat_server.base_url,
        api_key=key,
        max_retries=1,
        backoff=0.01,
    )
    chat_server.script(ErrorReply(503, body=echo), Reply("after a retry"))
    assert await branch.communicate("retry me", chat_model=retrying) == "after a retry"
    assert "retry 1 of 1" in caplog.text

    # The key was really in play: sent on every request, to a loopback server.
    auth = {r.headers.get("authorization") for r in chat_server.requests}
    assert auth == {f"Bearer {key}"}

    # Print everything a user might print; render every view.
    print(repr(model), repr(model.provider), repr(branch), *map(repr, branch.messages))
    print(*errors, sep="\n")
    out.add_branch("branch", branch)
    out.add("provenance", provenance_of(branch).to_dict())
    out.add("signals", [repr(s) for s in seen])
    write_snapshot(branch, tmp_path / "snapshots")
    assert out.add_tree("snapshots", tmp_path / "snapshots") == 1
    out.add_tree("data dir", Path(os.environ["LION_NB_HOME"]))
    captured = capsys.readouterr()
    out.add("stdout", captured.out)
    out.add("stderr", captured.err)
    out.add("log", log_records(caplog))
    assert_no_leaks(out)


def claude_error_recording(tmp_path: Path, message: str) -> Path:
    """Recorded Claude Code lines: the streamed reply of ``claude/text_partial``, then the
    401 result of ``claude/error_401`` with ``message`` as its text (an agent quoting the key
    back, as the OpenAI API does)."""
    text = [json.loads(line) for line in recording("claude/text_partial").read_text().splitlines()]
    errors = [json.loads(line) for line in recording("claude/error_401").read_text().splitlines()]
    result = next(e for e in errors if e["type"] == "result")
    events = [e for e in text if e["type"] != "result"] + [{**result, "result": message}]
    path = tmp_path / "claude_error_echo.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


async def test_cli_runs_persisted_and_failed_never_show_a_key(
    keys_in_env, caplog, capsys, tmp_path
) -> None:
    from lion_nb.signals import MessageAdded

    capture_logs(caplog)
    fake: FakeCLI = make_fake_cli(tmp_path)
    arg_key, env_arg = ARG_KEYS["claude api_key="], ARG_KEYS["env= argument"]
    out = Artifacts()
    data_dir = Path(os.environ["LION_NB_HOME"])

    # 1. A successful persisted run (default data dir), then 2. a failing one: the agent
    #    reports 401 quoting every key it has and prints them on stderr before exiting 1.
    ok_env = fake.env(recording("claude/tool_read_partial"))
    model = iModel(
        provider="claude_code",
        model="sonnet",
        api_key=arg_key,
        cli_path=str(fake.path),
        env={**ok_env, "EXTRA_SERVICE_TOKEN": env_arg},
    )
    # Every key the agent process has (the environment's that it inherits, api_key=, env=);
    # the OpenAI api_key= argument, for one, never reaches it.
    has = [v for v in model.provider.child_env().values() if v in ALL.values()]
    assert arg_key in has and env_arg in has
    everything = " ".join(has)
    bad_env = fake.env(
        claude_error_recording(tmp_path, f"Invalid API key: {everything}"),
        exit_code=1,
        stderr=f"debug: env dump {everything}\nfatal: rejected {everything}\n",
    )
    branch = Branch(system="Be brief.", chat_model=model)
    seen: list[Any] = []
    branch.observe(handler=seen.append)
    buffers: list[bytes] = []
    capturing = True

    def keep_buffer(signal: Any) -> None:
        # What a kill -9 at this moment would leave on disk (the buffer is removed at the end).
        if capturing:
            buffers.extend(p.read_bytes() for p in data_dir.rglob("*.buffer.jsonl"))

    branch.observe(MessageAdded, handler=keep_buffer)
    async for message in branch.run("read a.txt", stream_persist=True):
        out.add("run message", repr(message))
    # (the buffer of a failing run is the next test's subject)
    capturing = False

    model.provider.env = {**bad_env, "EXTRA_SERVICE_TOKEN": env_arg}
    with pytest.raises(AuthenticationError) as info:
        async for message in branch.run("again", stream_persist=True):
            out.add("failed run message", repr(message))
    error = info.value
    partial = branch.messages[-1]
    assert partial.role == "assistant" and partial.response and partial.metadata["error"]
    out.add("run error", error)

    # The keys were really in play: the agent process got them.
    record = json.loads(fake.record_path.read_text())
    assert record["pid"] > 0
    print(repr(model), repr(model.provider), repr(branch), error, sep="\n")
    out.add_branch("branch", branch)
    out.add("signals", [repr(s) for s in seen])
    assert buffers, "no run buffer was seen during the runs"
    for n, data in enumerate(buffers):
        out.add(f"run buffer at message {n}", data)
    assert out.add_tree("data dir", data_dir) >= 1
    captured = capsys.readouterr()
    out.add("stdout", captured.out)
    out.add("stderr", captured.err)
    out.add("log", log_records(caplog))
    assert_no_leaks(out)


async def test_cli_error_does_not_show_the_key_the_child_got_from_the_environment(
    keys_in_env, tmp_path, monkeypatch
) -> None:
    """The key reaches the agent through the inherited $ANTHROPIC_API_KEY, not api_key=; the
    agent prints it on stderr and exits 1. The stderr tail is in the error message, and run()
    records the error on the partial response (which a snapshot then writes to disk). A short
    value of a secret-looking name is a flag, not a key: it is not masked."""
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    fake = make_fake_cli(tmp_path)
    env = fake.env(
        recording("claude/text_partial"),
        exit_code=1,
        stderr=f"fatal: the key {KEYS['ANTHROPIC_API_KEY']} was rejected (retry=false)\n",
    )
    branch = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path), env=env))
    with pytest.raises(CLIError) as info:
        async for _ in branch.run("hi", stream_persist=True, persist_dir=str(tmp_path / "p")):
            pass
    out = Artifacts()
    out.add("error", info.value)
    out.add_branch("branch", branch)
    out.add_tree("persist dir", tmp_path / "p")
    assert_no_leaks(out)
    assert "[REDACTED] was rejected (retry=false)" in str(info.value)  # only the key masked


async def test_a_failing_agents_raw_events_are_masked_in_the_run_buffer(
    keys_in_env, tmp_path
) -> None:
    """The buffer keeps each chunk's raw provider event for recovery; a result/error event
    quoting the key must be masked there too — the buffer is on disk while the run lasts,
    and stays there after a crash."""
    from lion_nb.signals import MessageAdded

    fake = make_fake_cli(tmp_path)
    arg_key = ARG_KEYS["claude api_key="]
    quoted = f"Invalid API key: {arg_key} {KEYS['GITHUB_TOKEN']}"
    env = fake.env(claude_error_recording(tmp_path, quoted), exit_code=1)
    model = iModel(provider="claude_code", api_key=arg_key, cli_path=str(fake.path), env=env)
    branch = Branch(chat_model=model)
    persist = tmp_path / "persist"
    buffers: list[bytes] = []
    branch.observe(
        MessageAdded,
        handler=lambda _: buffers.extend(p.read_bytes() for p in persist.glob("*.buffer.jsonl")),
    )
    with pytest.raises(AuthenticationError):
        async for _ in branch.run("hi", stream_persist=True, persist_dir=str(persist)):
            pass
    # The partial reply is recorded after the error chunk was buffered: that copy has it.
    assert buffers and b'"type": "error"' in buffers[-1]
    out = Artifacts()
    out.add("run buffer at the failure", buffers[-1])
    assert_no_leaks(out)


def test_credentials_in_the_base_url_never_show(tmp_path) -> None:
    """``http://user:password@host`` is how some gateways take a key; httpx sends it as basic
    auth. The provider already hides it from its repr; the model's repr and saved settings
    must too (a saved branch needs the key passed again, like any other credential)."""
    password = "pw-in-url-5e1c9a7b3d"
    model = iModel(provider="openai", model="m", base_url=f"http://bob:{password}@127.0.0.1:9/v1")
    branch = Branch(chat_model=model)
    out = Artifacts()
    out.add_branch("branch", branch)
    assert_no_leaks(out, {"url password": password})


# -- what a CLI child process receives ------------------------------------------------------

_OTHER_VENDORS = {
    "claude_code": ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CODEX_API_KEY"),
    "codex": ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "gemini_cli": ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY"),
}
_OWN = {
    "claude_code": ("ANTHROPIC_API_KEY",),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
    "gemini_cli": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
_RECORDING = {
    "claude_code": "claude/text",
    "codex": "codex/text",
    "gemini_cli": "gemini/text",
}


async def _child_env(provider: str, tmp_path: Path, **model_kw: Any) -> dict[str, str | None]:
    fake = make_fake_cli(tmp_path)
    names = (
        *KEYS,
        "EXTRA_SERVICE_TOKEN",
        "LION_TEST_PLAIN",
        "PATH",
        "HOME",
        "LANG",
        "HTTPS_PROXY",
    )
    extra = model_kw.pop("env", {})
    env = {**fake.env(recording(_RECORDING[provider]), env_keys=names), **extra}
    branch = Branch(
        chat_model=iModel(provider=provider, cli_path=str(fake.path), env=env, **model_kw)
    )
    async for _ in branch.run("hi"):
        pass
    return fake.record()["env"]


@pytest.mark.parametrize("provider", sorted(_OWN))
async def test_cli_child_gets_its_own_key_and_the_ordinary_environment(
    provider: str, keys_in_env, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("LION_TEST_PLAIN", "plain-value")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    got = await _child_env(provider, tmp_path)
    for name in _OWN[provider]:
        assert got[name] == KEYS[name], name  # its own key, from the environment
    # An agent runs the user's tools in the user's project: the ordinary environment stays.
    for name in ("PATH", "HOME", "LANG", "LION_TEST_PLAIN", "HTTPS_PROXY"):
        assert got[name] == os.environ[name], name


@pytest.mark.parametrize("provider", sorted(_OWN))
async def test_cli_child_does_not_get_other_vendors_keys_or_unrelated_tokens(
    provider: str, keys_in_env, tmp_path
) -> None:
    got = await _child_env(provider, tmp_path)
    unrelated = (*_OTHER_VENDORS[provider], "GITHUB_TOKEN")
    if provider != "claude_code":  # Claude Code's Bedrock back end needs AWS credentials
        unrelated += ("AWS_SECRET_ACCESS_KEY",)
    assert {name: got[name] for name in unrelated} == dict.fromkeys(unrelated)
    if provider == "claude_code":
        assert got["AWS_SECRET_ACCESS_KEY"] == KEYS["AWS_SECRET_ACCESS_KEY"]


async def test_cli_child_gets_what_env_and_api_key_pass_explicitly(keys_in_env, tmp_path) -> None:
    """Explicit is always honoured: an unrelated token passed through ``env=`` (e.g. for the
    agent's ``gh`` tool) and the ``api_key=`` argument, which wins over the environment."""
    arg_key = ARG_KEYS["claude api_key="]
    got = await _child_env(
        "claude_code",
        tmp_path,
        api_key=arg_key,
        env={"GITHUB_TOKEN": KEYS["GITHUB_TOKEN"], "EXTRA_SERVICE_TOKEN": "x-passed-1234"},
    )
    assert got["ANTHROPIC_API_KEY"] == arg_key
    assert got["GITHUB_TOKEN"] == KEYS["GITHUB_TOKEN"]
    assert got["EXTRA_SERVICE_TOKEN"] == "x-passed-1234"
