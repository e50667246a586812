"""06 — Extending the operations layer: a registered session operation, a custom Middle, an
Operation node."""

from _src import code, md

CELLS = [
    md("""
    # Extending the operations layer

    Every verb of a `Branch` is an **operation**: `chat`, `communicate`, `run`, `operate`,
    `ReAct` and the others. You can add your own at three levels:

    1. **a named session operation** — an `async def` registered on a `Session`, callable by
       name on any of its branches (`session.run_operation("name", ...)`);
    2. **a custom Middle** — the exchange at the heart of `operate` (and so of `ReAct`),
       replaced by yours: say, a draft and then a revision, instead of one request;
    3. **an `Operation` node** — an operation name plus its parameters, as a value you can
       store, schedule and invoke on a branch later (a building block for graphs of work).

    This notebook runs on the offline scripted model.
    """),
    code("""
    import lion_nb
    from lion_nb import Session, iModel
    from lion_nb.signals import RunEnd, RunStart


    def streamed(text: str) -> dict:
        \"\"\"A scripted reply that streams in small pieces, like a real model.\"\"\"
        return {"chunks": [text[i : i + 6] for i in range(0, len(text), 6)], "delay": 0.02}


    model = iModel(
        provider="scripted",
        replies=[
            streamed("Solar panels now cost 90% less than in 2010."),
            streamed("Bakery tagline draft: Bread, daily."),
            streamed('{"tagline": "Warm bread, every morning.", "tone": "friendly"}'),
            "Petrichor.",
            "Panels got cheap.",
        ],
    )
    session = Session(name="ops")
    branch = session.new_branch(system="You are a helpful editor.", chat_model=model, name="editor")

    runs = []  # the lifecycle signals of the branch's runs, as "RunStart(operation)"


    def log_run(signal):
        runs.append(f"{type(signal).__name__}({signal.operation})")


    branch.observe(RunStart, RunEnd, handler=log_run)
    """),
    md("""
    The chat view below follows the branch. Everything this notebook adds to the operations
    layer - the registered operation, the custom Middle's two exchanges, the `Operation` node -
    streams into it live, like a built-in verb: they all go through the same operations layer.
    """),
    code("""
    lion_nb.view(branch, title="editor: custom operations, live")
    """),
    md("""
    ## 1. A registered session operation

    `@session.operation()` registers an `async def` under its name. It receives the branch it
    runs on as `branch=`, plus your keyword arguments, and composes the built-in verbs however
    it likes. Built-in names always win: a registered operation can never shadow a verb of
    `Branch`.
    """),
    code("""
    ARTICLE = (
        "Between 2010 and 2020 the price of solar photovoltaic modules fell by about ninety "
        "percent, driven by manufacturing scale, better cell efficiency and cheaper polysilicon."
    )


    @session.operation()
    async def summarize(branch, text: str, words: int = 12):
        \"\"\"Summarise `text` in at most `words` words (one recorded exchange).\"\"\"
        return await branch.communicate(f"Summarise in at most {words} words.", context={"text": text})


    summary = await session.run_operation("summarize", text=ARTICLE)
    print(summary)
    print("runs:", runs)
    print("found on the branch too:", branch.get_operation("summarize") is summarize)
    """),
    md("""
    ## 2. A custom Middle: two inner exchanges in one `operate`

    `operate` composes the response schema, calls its **Middle** exactly once, validates what
    the Middle returns and runs any tool calls the model asked for. The default Middle is
    `communicate` (or `run_and_collect` for a CLI agent). A Middle is any async callable with
    this signature; it records the exchange it performs.

    The Middle below asks for a free-text **draft** first, then for a **revision** in the
    requested format. Both exchanges are recorded; `operate` validates the second one. The
    whole thing is still one run: one `RunStart`, one `RunEnd`.
    """),
    code("""
    from pydantic import BaseModel

    from lion_nb.operations.communicate import communicate
    from lion_nb.operations.types import Middle


    class DraftThenRevise:
        \"\"\"A Middle doing two recorded exchanges: a free-text draft, then a revision of it
        in the requested format (operate validates the revision).\"\"\"

        async def __call__(
            self,
            branch,
            instruction,
            chat_param,
            parse_param=None,
            clear_messages=False,
            skip_validation=False,
        ):
            draft = await communicate(
                branch,
                instruction,
                chat_param.with_(response_format=None),  # the draft is free text
                clear_messages=clear_messages,
                skip_validation=True,
            )
            return await communicate(
                branch,
                f"Revise your draft ({draft!r}): make it warmer and shorter.",
                chat_param,  # carries the response schema operate composed
                skip_validation=True,  # operate validates the reply itself
            )


    class Tagline(BaseModel):
        tagline: str
        tone: str


    print("is a Middle:", isinstance(DraftThenRevise(), Middle))
    """),
    code("""
    runs.clear()
    before = len(branch.messages)
    tagline = await branch.operate(
        instruction="Write a tagline for a neighbourhood bakery.",
        response_format=Tagline,
        middle=DraftThenRevise(),
    )
    print(repr(tagline))
    print("runs:", runs)
    for message in branch.messages[before:]:
        print(f"  {message.role:<10} {message.text[:70]!r}")
    """),
    md("""
    Because `ReAct` runs each round through `operate`, the same Middle can be passed to it:
    `branch.ReAct(..., middle=DraftThenRevise())`.

    ## 3. An `Operation` node

    An `Operation` names an operation — a built-in verb or a registered one — with its
    parameters. `await node.invoke(branch)` runs it on a branch and settles the node: its
    `status`, `response` and `duration_ms`. A failure does not raise; it is kept in
    `node.error`, so a scheduler can look at a batch of nodes afterwards.
    """),
    code("""
    from lion_nb import Operation

    word = Operation("communicate", {"instruction": "One word for the smell of rain?"})
    short = Operation("summarize", {"text": ARTICLE, "words": 3})  # the registered operation
    typo = Operation("summarise", {"text": ARTICLE})  # no such operation

    for node in (word, short, typo):
        await node.invoke(branch)
        outcome = repr(node.response) if node.error is None else f"{node.error!r}"
        print(f"{node.operation:<12} {node.status.value:<10} {node.duration_ms:6.1f} ms  {outcome}")
    """),
    md("""
    Nodes are plain values, so they can wait in a list, be built from data, or be chained: the
    response of one node can become a parameter of the next. Everything they record lands on
    the branch like any other call:
    """),
    code("""
    branch
    """),
]
