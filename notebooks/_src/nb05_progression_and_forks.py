"""05 — Inspecting and forking a message progression; comparing two branches."""

from _src import code, md

CELLS = [
    md("""
    # Inspecting, forking and comparing conversations

    A branch's history is a **progression**: the ordered ids of its messages. Because messages
    are values and the order is explicit, you can look at exactly what a model saw at any turn,
    **fork** the conversation at any message into a new branch, continue the fork differently,
    and **compare** the two side by side — "what if I had asked that instead?".

    This notebook runs on the offline scripted model.
    """),
    md("""
    ## A conversation to explore

    A `Session` holds several branches; forks made from a branch in a session join it
    automatically.
    """),
    code("""
    from lion_nb import Session, iModel

    session = Session(name="titles")
    coach = iModel(
        provider="scripted",
        replies=[
            "How about: *Rising Slowly — A Year of Sourdough*.",
            "*Crumb Raiders: My Wild Yeast Adventure*!",
            "*Crumb Raiders*.",
        ],
        delay=0.01,
    )
    main = session.new_branch(
        system="You are a writing coach. Suggest one title at a time.", chat_model=coach, name="main"
    )
    await main.communicate("Suggest a title for a blog post about baking sourdough.")
    await main.communicate("Make it playful.")
    await main.communicate("Shorter, please.")
    main
    """),
    md("""
    ## The progression

    `branch.messages` is indexable by position or by id; `branch.progression` is the order.
    """),
    code("""
    for i, message in enumerate(main.messages):
        print(f"{i}  {message.role:<10} {str(message.id)[:8]}  {message.text[:55]!r}")
    print()
    print("progression:", [str(i)[:8] for i in main.progression])
    third = main.progression[3]
    print("message", str(third)[:8], "is", repr(main.messages[third].text))
    """),
    md("""
    ### What the model saw

    Each turn sends the messages before it, compiled into the provider's format. The
    `compile_messages` function does that compilation, so you can rebuild the payload of any
    turn — here the second reply (message 4) — and check it against what the scripted model
    actually received:
    """),
    code("""
    from lion_nb.compile import compile_messages

    payload = compile_messages(main.messages[:4])  # everything before message 4
    for entry in payload:
        print(f"{entry['role']:<10} {entry['content'][:60]!r}")
    print("\\nsame as the request the model received:", payload == coach.provider.requests[1].messages)
    """),
    md("""
    The **progression inspector** shows the same thing for every message: expand a row (▸) to
    see the message and the payload of its turn. Its header also estimates what the *next* turn
    will send.
    """),
    code("""
    from lion_nb.widgets.inspector import ProgressionInspector

    inspector = ProgressionInspector(main)
    inspector.go_to(4)  # expand message 4, as a click on its ▸ would
    inspector
    """),
    md("""
    ## Fork at message *k* and continue differently

    `branch.fork(k)` (or `session.fork(branch, k)`) makes a new branch holding messages `0..k`
    — the same message values, not copies — with the same model and tools, and a link to its
    origin in `metadata["forked_from"]`. Let us go back to the first suggestion (message 2) and
    ask for a formal title instead. The fork gets its own scripted model so it can answer
    differently.
    """),
    code("""
    formal = main.fork(2, name="formal")
    formal.chat_model = iModel(
        provider="scripted",
        replies=["*Sourdough Fermentation: A Practical Guide for Home Bakers*."],
        delay=0.03,
    )
    print("forked from:", formal.metadata["forked_from"])
    print("in the session:", formal.id in session.branches)
    await formal.communicate("Make it formal.")
    """),
    md("""
    ## Compare the two branches

    The compare view shows the shared history once (collapsed), then the turns after the fork
    point aligned side by side, with the differing turns highlighted and tokens and latency per
    side. It follows both branches: continue either one and the comparison updates.
    """),
    code("""
    from lion_nb.widgets.compare_view import CompareView

    compare = CompareView(main, formal)
    compare
    """),
    code("""
    alignment = compare.alignment()
    shared, differing = len(alignment.prefix), alignment.differing
    print(f"shared: {shared} messages ({alignment.lineage}); differing turns: {differing}")
    for left, right, kind in alignment.rows:
        l_text = left.text[:32] if left else "—"
        r_text = right.text[:32] if right else "—"
        print(f"{kind:<8} {l_text!r:<36} | {r_text!r}")
    """),
    md("""
    ### Forking from the inspector

    In the inspector every row has a **Fork here** button. It does what `inspector.fork(k)`
    does below: fork the branch at that message, and show the fork under the timeline with a
    chat view to continue it and a **Compare with origin** button.
    """),
    code("""
    shorter = inspector.fork(4, name="from the playful title")
    shorter.chat_model = iModel(provider="scripted", replies=["*Wild Crumbs*."])
    print(shorter, "—", len(shorter.messages), "messages")
    """),
    md("""
    ## Try again: regenerate and edit, every alternative kept

    In a chat view, **Regenerate** on a reply and **Edit** on a prompt (Enter resends, Esc
    cancels) never change a branch: they fork before that turn and run on the fork, which the
    view then shows. A `‹ 1/2 ›` switcher on the turn goes between the alternatives, and
    **Compare** opens the comparison above under the view. The same from code:
    """),
    code("""
    import lion_nb

    tries = session.new_branch(
        system="You write book titles.",
        chat_model=iModel(
            provider="scripted",
            replies=["*Crumb by Crumb*.", "*The Patient Loaf*.", "*Rise*."],
            delay=0.01,
        ),
        name="try again",
    )
    view = lion_nb.view(tries, height=320)
    await view.asend("A title for a sourdough book?")
    view
    """),
    code("""
    again = await view.aregenerate()  # another reply to the same question, on a fork
    edited = await view.aedit(1, "A one-word title for a sourdough book?")  # message 1, reworded
    print("the original keeps its messages:", [m.text for m in tries.messages[1:]])
    print("regenerated:", again.messages[-1].text, "| edited:", edited.messages[-1].text)
    view.show(tries)  # what the switcher does
    print(
        f"alternatives of the first reply: {len(view.alternatives(2))}; "
        f"of the question: {len(view.alternatives(1))}"
    )
    """),
    md("""
    ## Save a branch, and load it back

    `export_json` writes a branch losslessly — messages, tool calls, usage, parse results, the
    run and cell each message came from, and the fork lineage — and `import_json` rebuilds an
    equal branch. Markdown and self-contained HTML exports are for reading and sharing.
    """),
    code("""
    from lion_nb.export import export_html, export_json, export_markdown, import_json

    saved = export_json(formal)
    restored = import_json(saved)
    print(f"{len(saved):,} characters of JSON")
    print("same messages:", [m.id for m in restored.messages] == [m.id for m in formal.messages])
    print("lineage kept:", restored.metadata["forked_from"] == formal.metadata["forked_from"])
    print(f"HTML page: {len(export_html(formal)):,} characters\\n")
    print(export_markdown(formal))
    """),
]
