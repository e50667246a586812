"""02 — Streaming run() with a CLI agent: messages as they arrive, StreamDelta, stopping early,
stream_persist and recover_branch."""

from _src import code, md

CELLS = [
    md("""
    # Streaming a CLI agent with `run()`

    Coding agents such as **Claude Code**, **Codex** and **Gemini CLI** run as command-line
    programs that work on their own (read files, run commands) and print what they do as a
    stream of JSON events. `branch.run(...)` starts the agent, turns that stream into typed
    messages — assistant text, tool calls, tool results — **records each one on the branch**,
    and yields it to you as it arrives.

    **No agent installed? Nothing to set up.** When the `claude` executable is not on your
    `PATH`, this notebook replays a **recorded Claude Code session**: `data/replay_claude.py`
    stands in for the `claude` executable and prints, line by line, the real output of Claude
    Code 2.1.197 (recorded offline; see `data/README.md`). Everything after the executable is
    the real thing: `lion_nb` starts a process, decodes its stream, records messages, and stops
    the process when you stop reading. With Claude Code installed (and logged in), the same
    cells drive the real agent. Set the environment variable `LION_NB_REPLAY=1` to use the
    recording anyway.
    """),
    code("""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from lion_nb import Branch, iModel

    DATA = Path("data").resolve()
    REAL_CLI = shutil.which("claude") is not None and os.environ.get("LION_NB_REPLAY") != "1"

    # Everything this notebook writes goes into one scratch folder (removed at the end). The
    # agent works in scratch/work, next to the file it will be asked to read.
    scratch = Path(tempfile.mkdtemp(prefix="lion_nb_02_"))
    workdir = scratch / "work"
    workdir.mkdir()
    (workdir / "hello.txt").write_text("hello from file\\n")


    def agent(recording="tool_read_partial", delay=0.05):
        \"\"\"Claude Code as an iModel: the real CLI when installed, else a recorded session
        replayed by data/replay_claude.py (one line every `delay` seconds).\"\"\"
        if REAL_CLI:
            return iModel(provider="claude_code", cwd=str(workdir), allowed_tools=["Read"])
        return iModel(
            provider="claude_code",
            cwd=str(workdir),
            cli_path=str(DATA / "replay_claude.py"),
            env={
                "REPLAY_RECORDING": str(DATA / "claude" / f"{recording}.jsonl"),
                "REPLAY_DELAY": str(delay),
            },
        )


    print("Using the installed claude CLI." if REAL_CLI else "Replaying a recorded session.")
    """),
    md("""
    ## 1. Messages as they arrive

    `run()` is an async generator: iterate it with `async for`. The first message is your
    instruction; then come the agent's messages, each recorded on the branch *before* it is
    yielded. The timings show them arriving while the agent works.
    """),
    code("""
    import time

    branch = Branch(chat_model=agent(), name="agent")
    started = time.perf_counter()
    async for message in branch.run("Read hello.txt and tell me what it says."):
        print(f"{time.perf_counter() - started:5.2f} s  {message.role:<16} {message.text[:60]!r}")
    """),
    md("""
    The agent wrote a sentence, called its `Read` tool, got the file's content back, and
    answered. All of it is on the branch — as typed messages you can display, inspect or
    export, with the agent's session id and usage in the last response's metadata:
    """),
    code("""
    final = branch.messages[-1]
    print("session:", final.metadata.get("session_id"))
    print("usage:  ", final.metadata.get("usage"))
    branch
    """),
    md("""
    ## 2. Text as it streams: `StreamDelta`

    Messages arrive whole. While a response is still being written, the branch emits
    `StreamDelta` signals: `kind` (`"text"`, `"thinking"` or `"tool_args"`), the new `delta`,
    the `message_id` of the response being built, and the running snapshot (`length`, and the
    accumulated text in `source`). A view attached halfway through a reply can therefore draw
    the whole text so far — that is how the views in these notebooks stream.

    `run_and_collect` consumes `run()` for you and returns the joined assistant text.
    """),
    code("""
    from lion_nb.signals import StreamDelta


    def show_delta(signal: StreamDelta):
        print(f"{signal.kind:<5} + {signal.delta!r:<26} -> {signal.length:>2} characters so far")


    watched = Branch(chat_model=agent(), name="deltas")
    watched.observe(StreamDelta, handler=show_delta)
    text = await watched.run_and_collect("Read hello.txt and tell me what it says.")
    print("\\nrun_and_collect returned:", repr(text))
    """),
    md("""
    ## 3. The live view

    A chat view with `verb="run"` sends its prompt box to `run()`. Press **Send** with any
    prompt (the recording answers the same whatever you ask), and **Stop** while it streams: the
    agent's process is terminated and the partial reply stays recorded, marked as stopped.
    The next cell sends a prompt for you so that the notebook also works under *Run All*.
    """),
    code("""
    import lion_nb

    live = Branch(chat_model=agent(), name="live view")
    view = lion_nb.view(live, verb="run")
    view
    """),
    code("""
    await view.asend("Read hello.txt and tell me what it says.")
    """),
    md("""
    ## 4. Stopping early

    You can stop reading at any point. Close the generator — `await stream.aclose()`, or let
    `contextlib.aclosing` do it when you `break` — and `run()` terminates the agent's whole
    process group *before* `aclose()` returns, records what it had received, and ends the run
    with `RunEnd(stopped=True)`. Here we stop as soon as the agent has said what it will do.
    The tool call it sent along with that sentence is recorded too (nothing the agent sent is
    lost), but its result never arrives:
    """),
    code("""
    from contextlib import aclosing

    from lion_nb.signals import RunEnd

    stopped = Branch(chat_model=agent(delay=0.1), name="stopped early")
    ends = []
    stopped.observe(RunEnd, handler=ends.append)

    async with aclosing(stopped.run("Read hello.txt and tell me what it says.")) as stream:
        async for message in stream:
            print(f"{message.role:<10} {message.text!r}")
            if message.role == "assistant":
                break  # enough: aclosing() closes the stream, which stops the agent

    print("\\nRunEnd.stopped =", ends[-1].stopped)
    print("recorded:", [m.role for m in stopped.messages])
    """),
    md("""
    Stopping in the middle of a sentence works the same way. Cancelling the task that reads the
    stream is exactly what the view's Stop button does; the text received so far is recorded
    as the response, marked `metadata["stopped"] = True`:
    """),
    code("""
    import asyncio

    partial = Branch(chat_model=agent("thinking_partial", delay=0.1), name="stopped mid-reply")
    first_text = asyncio.Event()
    partial.observe(StreamDelta, handler=lambda s: s.kind == "text" and first_text.set())

    task = asyncio.ensure_future(partial.run_and_collect("Greet me."))
    await first_text.wait()  # the reply has started streaming ...
    task.cancel()  # ... stop it, like the Stop button
    try:
        await task
    except asyncio.CancelledError:
        pass

    reply = partial.messages[-1]
    print(f"recorded {reply.role}: {reply.text!r}")
    print({key: reply.metadata.get(key) for key in ("stopped", "thinking")})
    """),
    md("""
    ## 5. Surviving a crash: `stream_persist` and `recover_branch`

    An agent turn can run for minutes. With `stream_persist=True`, `run()` writes

    * `<branch id>.json` — a snapshot of the branch, before the agent starts and again at the
      end (written atomically: a crash never leaves a torn file);
    * `<branch id>.buffer.jsonl` — every event of the stream, one line each, appended as it
      arrives. It is deleted once the final snapshot is safely on disk.

    By default the files go to `~/.local/share/lion_nb/runs` (or `$LION_NB_HOME/runs`); here
    we use the scratch folder. After a clean run only the snapshot is left:
    """),
    code("""
    persist_dir = scratch / "runs"
    persisted = Branch(chat_model=agent(), name="persisted")
    async for _ in persisted.run(
        "Read hello.txt and tell me what it says.", stream_persist=True, persist_dir=persist_dir
    ):
        pass
    sorted(p.name for p in persist_dir.iterdir())
    """),
    md("""
    Now a crash. The cell below starts a separate Python process that runs a persisted turn
    (always on the recording, so the demo does not depend on an agent), waits until the reply
    has begun to stream, and kills that process with `SIGKILL` — no cleanup code gets to run,
    as when a kernel dies. The buffer is left behind.
    """),
    code("""
    import json
    import subprocess
    import sys

    CHILD = \"\"\"
    import asyncio, json, sys
    from lion_nb import Branch, iModel
    from lion_nb.signals import StreamDelta

    persist_dir, replay, recording = sys.argv[1:4]
    agent = iModel(provider="claude_code", cli_path=replay,
                   env={"REPLAY_RECORDING": recording, "REPLAY_DELAY": "0.1"})
    branch = Branch(chat_model=agent, name="crashed")
    branch.observe(StreamDelta, handler=lambda s: print(json.dumps([s.kind, s.delta]), flush=True))

    async def main():
        async for _ in branch.run("Greet me.", stream_persist=True, persist_dir=persist_dir):
            pass

    asyncio.run(main())
    \"\"\"

    crash_dir = scratch / "crash"
    replay = DATA / "replay_claude.py"
    recording = DATA / "claude" / "thinking_partial.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(crash_dir), str(replay), str(recording)],
        stdout=subprocess.PIPE,
        text=True,
    )
    for line in child.stdout:
        kind, delta = json.loads(line)
        print(f"the child received {kind}: {delta!r}")
        if kind == "text":  # the reply has started: pull the plug
            child.kill()
            break
    child.wait()
    child.stdout.close()
    print("\\nchild exit code:", child.returncode)
    print("left on disk:", sorted(p.name for p in crash_dir.iterdir()))
    """),
    md("""
    `recover_branch(folder)` loads the snapshot and replays the buffered events through the same
    code `run()` uses. Messages the run had recorded come back with the same ids; text that was
    received but never recorded becomes a final response marked `metadata["recovered"] = True`.
    The agent's session id is restored too, so the next `run()` on the recovered branch resumes
    the agent's own session.
    """),
    code("""
    from lion_nb import recover_branch

    recovered = recover_branch(crash_dir)
    for message in recovered.messages:
        print(f"{message.role:<10} {message.text!r}")
    print("\\nrecovered:", recovered.messages[-1].metadata.get("recovered"))
    print("session to resume:", recovered.chat_model.provider_session_id)
    """),
    md("""
    ## Other agents

    `iModel(provider="codex")` and `iModel(provider="gemini_cli")` work the same way. Each
    provider takes `cli_path=` (default: the executable on `PATH`), `cwd=` (where the agent
    works), `env=` (extra environment variables) and `extra_args=`. If the executable is
    missing, the first `run()` raises `CLINotFound` naming the npm package to install, for
    example `npm install -g @anthropic-ai/claude-code`.

    Finally, remove the scratch folder this notebook wrote to:
    """),
    code("""
    shutil.rmtree(scratch)
    """),
]
