"""07 — Cassettes: record a session on the embedded model once, replay it anywhere (offline, at
the recorded pace), and let replay mode catch an edited prompt."""

from _src import code, md

CELLS = [
    md("""
    # Record once, replay anywhere: cassettes

    A notebook that talks to a language model is hard to share: the key is missing on the
    student's machine, the model changed, the network is down, the answer came out different,
    the CLI agent is not installed. A **cassette** fixes that. Run the notebook once against a
    real model with a cassette switched on and every model call is written to a file: the
    request as the model saw it, the reply's chunks *with their timing*, and errors. Commit the
    file next to the notebook; from then on *Restart & Run All* replays the calls from it —
    offline, identical, and streaming at the original pace, so the live views still look live.

    This notebook was recorded on the **embedded SmolLM2 model**, and its cassette ships with it
    (`data/07_cassettes.cassette.jsonl`). On a machine without the embedded model (Binder,
    say) it runs all the same: nothing here needs the model unless you change a prompt.
    """),
    code("""
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb import Branch, iModel

    # The cassette recorded with this notebook. (The test suite points these variables at a
    # fresh file to record the notebook again; you can leave them alone.)
    CASSETTE = Path(os.environ.get("LION_NB_CASSETTE", "data/07_cassettes.cassette.jsonl"))
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")
    """),
    md("""
    ## 1. Switch the cassette on

    `lion_nb.use_cassette(path, mode=..., speed=...)` puts every model call of the notebook on
    the cassette from here on; the line magic `%lion_cassette PATH [--mode ...] [--speed ...]`
    is the same switch. For a few calls only, use a block: `with lion_nb.cassette(path): ...`
    (or `async with`), or the cell magic's `%%lion --cassette PATH`.

    | mode | what it does |
    | --- | --- |
    | `"auto"` (default) | replays what the cassette has, records what it lacks (only the misses need a model) |
    | `"record"` | calls the models and rewrites what it calls, in the file you named |
    | `"replay"` | never calls a model: an unrecorded request raises `CassetteMiss` |
    | `"off"` | calls the models, touches no file |

    `speed=1.0` replays every chunk at its recorded time, `10` ten times faster, `None` at once.

    **`"auto"` never changes a cassette that exists**, such as the one shipped with this
    notebook: what it records goes to a sibling file, `data/07_cassettes.local.cassette.jsonl`
    (it says so with a warning the first time, and replays from both files). Only a cassette
    that does not exist yet is recorded into directly; `record_to=` names another file. While a
    cassette is in force, the chat view's status line says *replaying from …* / *recording to …*.
    Where the model is not installed, a prompt that is not on the cassette is a `CassetteMiss`
    in `"auto"` mode too: *This prompt is not on the cassette*.
    """),
    code("""
    %load_ext lion_nb
    tape = %lion_cassette {CASSETTE} --mode {MODE}
    """),
    md("""
    ## 2. Streaming, replayed at the recorded pace

    A request is matched by **what the model would see**: the provider and model, the compiled
    messages, tools, response format and sampling options — never ids, timestamps or
    credentials. This one was recorded; watch the view: the reply streams in as it did when the
    model wrote it, delta by delta, although no model runs.
    """),
    code("""
    from lion_nb.signals import StreamDelta

    model = iModel(provider="local", temperature=0, seed=0, max_tokens=64)
    SYSTEM = "You are a helpful assistant. Answer in one or two sentences."
    branch = Branch(system=SYSTEM, chat_model=model, name="lesson")
    deltas = []
    branch.observe(StreamDelta, handler=deltas.append)
    view = lion_nb.view(branch)
    view
    """),
    code("""
    answer = await branch.communicate("Why is the sky blue?")
    print(answer)
    print(f"streamed as {len(deltas)} deltas; the first: {deltas[0].delta!r}")
    """),
    md("""
    ## 3. A parse with a repair turn

    `parse` first tries to read the text as the requested type; when that fails it asks the
    model to rewrite it (a *repair turn*, an unrecorded model call). The repair turn is on the
    cassette like any other call.
    """),
    code("""
    from pydantic import BaseModel, Field

    from lion_nb.signals import ParseAttempt


    class Person(BaseModel):
        name: str = Field(max_length=30)
        born: int


    attempts = []
    branch.observe(ParseAttempt, handler=attempts.append)
    person = await branch.parse(
        "Ada Lovelace; she was born in eighteen fifteen", response_format=Person
    )
    for attempt in attempts:
        print(
            f"attempt {attempt.attempt}: {'valid' if attempt.ok else 'invalid'}  {attempt.raw[:50]!r}"
        )
    print(repr(person))
    """),
    md("""
    ## 4. ReAct with a Python tool: tools run for real

    A cassette records the **model's** side only. Tools are your code: on replay they run
    again (so a tool that reads a file reads it again). The embedded 135M model cannot plan tool
    calls, so this part uses the scripted model — a cassette records it exactly like any other
    model; each reply below is what a good model would answer in that round.
    """),
    code("""
    tool_runs = []


    def word_length(word: str) -> int:
        \"\"\"The number of letters in a word.\"\"\"
        tool_runs.append(word)
        return len(word)


    def analysis(text, more, *calls):
        requests = [{"function": name, "arguments": args} for name, args in calls]
        return {
            "json": {"analysis": text, "extension_needed": more, "action_requests": requests},
            "delay": 0.03,
        }


    planner = iModel(
        provider="scripted",
        replies=[
            analysis("Count the letters with the tool.", True, ("word_length", {"word": "notebook"})),
            analysis("The tool says 8. Nothing is missing.", False),
            {"json": {"answer": "'notebook' has 8 letters."}, "delay": 0.03},
        ],
    )
    agent = Branch(system=SYSTEM, chat_model=planner, name="react")
    result = await agent.ReAct("How many letters are in 'notebook'?", tools=[word_length])
    print("answer:", result)
    print("the tool ran in this session:", tool_runs)
    """),
    md("""
    ## 5. Replay mode catches an edited prompt

    In `"replay"` mode no model is ever called. A request the cassette does not have raises
    `lion_nb.errors.CassetteMiss`: a short message naming the request's last instruction, the
    provider and the model, the closest recording (the same turn of the conversation first) with
    what differs, and how to record it. (In `"auto"` mode the same request would be sent to the
    model and recorded into the sibling file.)
    """),
    code("""
    from lion_nb.errors import CassetteMiss

    edited = Branch(system=SYSTEM, chat_model=model)
    with lion_nb.cassette(CASSETTE, mode="replay"):
        try:
            await edited.communicate("Why is the sky green?")
        except CassetteMiss as miss:
            print(miss)
    """),
    md("""
    ## 6. What is on the cassette

    JSON lines: a format header, then one model call per line — the request as matched, the
    events with their time offsets (`t`, seconds since the call started), the response (or the
    error). Keys keep one order, so a re-recording diffs cleanly; credentials never reach the
    file (API keys, `Authorization` headers, passwords in URLs, secret environment values).
    """),
    code("""
    import json

    lines = CASSETTE.read_text(encoding="utf-8").splitlines()
    print(lines[0])
    first = json.loads(lines[1])
    print("call", first["call"], "-", first["kind"], "- request:", list(first["request"]))
    print("first events:", [{k: v for k, v in e.items() if k != "t"} for e in first["events"][:3]])
    print("response:", first["response"]["text"][:60])
    """),
    code("""
    %lion_cassette --off
    """),
]
