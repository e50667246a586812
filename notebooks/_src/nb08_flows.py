"""08 — Flows and scale-out: a prompt over a small dataset, an outline then one section per
heading, watched in FlowView; the same flow on Ray."""

from _src import code, md

CELLS = [
    md("""
    # Flows: many prompts at once, in this kernel or on Ray

    A **flow** is a graph of operations: `flow.add("communicate", instruction=..., branch=...)`
    adds a node, `depends_on=[...]` makes it wait for others, and `await flow.run()` runs every
    node as soon as what it depends on has finished, at most `max_concurrent` at a time.
    A node added without `branch=` continues the conversation of the node it depends on (on a
    fork of that branch, taken when the dependency finished). `session.map(...)` is the
    shortcut for one operation over many inputs.

    `FlowView(flow)` shows one row per node — status, run time, tokens, cost — live; **open**
    shows a node's transcript, **Stop** cancels the run.

    This notebook runs on the offline scripted model; its replies are computed from the prompt
    (a function), so they are the same in this kernel and on a Ray worker.
    """),
    code("""
    from lion_nb import FlowView, Session, iModel
    from lion_nb.flow import Flow


    def reply(request):
        \"\"\"The scripted model's answer: the prompt's first words, as a 'summary' or a
        numbered outline.\"\"\"
        prompt = request.messages[-1]["content"]
        if prompt.startswith("Outline"):
            return {
                "text": "1. Tides and the Moon\\n2. Spring and neap tides\\n3. Tide tables",
                "delay": 0.05,
            }
        words = prompt.split()
        return {
            "text": f"({len(request.messages)} messages seen) " + " ".join(words[:6]) + " …",
            "delay": 0.05,
        }


    session = Session(name="flows")
    model = iModel(provider="scripted", default_reply=reply)
    template = session.new_branch(
        system="You write short, plain summaries.", chat_model=model, name="template"
    )
    texts = [
        "The tide rises and falls twice a day because the Moon pulls the oceans.",
        "Spring tides happen at new and full moon, when Sun and Moon line up.",
        "Neap tides are the small ones, at the Moon's first and last quarter.",
        "Tide tables predict the height of the water hour by hour for a harbour.",
        "Tidal power stations turn the moving water into electricity.",
    ]
    """),
    md("""
    ## 1. One prompt over a dataset

    Each row becomes a node on its own fork of `template`, so every row starts from the same
    system message and none sees another's answer. Display the view, then run.
    """),
    code("""
    rows = Flow(session, name="summaries")
    for text in texts:
        rows.add("communicate", instruction=f"Summarise: {text}", branch=template.fork())
    FlowView(rows)
    """),
    code("""
    results = await rows.run(max_concurrent=3)
    for node in rows:
        print(f"{node.status.value:9s} {node.duration_ms:6.0f} ms  {node.response}")
    print("template untouched:", len(template.messages) == 1)
    """),
    md("""
    ## 2. An outline, then one section per heading

    The sections depend on the outline and have no `branch=`: each one runs on a fork of the
    outline's branch taken after the outline finished, so it sees the outline in its history.
    """),
    code("""
    talk = Flow(session, name="talk on tides")
    outline = talk.add("communicate", instruction="Outline a talk on tides", branch=template.fork())
    sections = [
        talk.add("communicate", instruction=f"Write section {n}", depends_on=[outline])
        for n in (1, 2, 3)
    ]
    view = FlowView(talk)
    view
    """),
    code("""
    await talk.run()
    print(outline.response.splitlines()[0])
    for node in sections:
        print(node.parameters["instruction"], "->", node.response)
    print(
        "each section continued the outline's conversation:",
        all(node.branch.messages[2].text == outline.response for node in sections),
    )
    """),
    md("""
    `session.map` does the first part in one call and returns the answers in input order
    (`None` for a row that failed; `return_nodes=True` gives the nodes).
    """),
    code("""
    outs = await session.map(
        "communicate",
        [{"instruction": f"Summarise: {t}"} for t in texts],
        template=template,
        max_concurrent=16,
    )
    print(len(outs), "answers in input order:", outs[0])
    """),
    md("""
    ## 3. The same flow on Ray

    `engine="ray"` runs each node as a Ray task: the branch travels as data (models as their
    settings, never their keys: workers read keys from their own environment), the operation
    runs on the worker through the same operations layer, and its signals and messages stream
    back, so the view above fills in live: each new message lands on this kernel's branch as
    the worker records it, with its id, once (if a worker dies, Ray runs the node again and
    what the lost attempt had landed is taken back first).

    `start_ray()` starts a local cluster here, quietly, longer on a busy machine (Ray's start-up
    waits are raised, and it tries once more if they still run out); `defer_imports=True` makes
    it about 4 s on two quiet cores by deferring a grammar every Ray process builds when it
    imports jsonschema (opt-in: it puts a stand-in for the package `rfc3987_syntax` on the
    cluster's path). Later runs in this kernel reuse it. To keep one cluster for every notebook
    and kernel, start it once in a terminal, `ray start --head --num-cpus=2` (or
    `python -m lion_nb.flow.ray_start --defer-imports`, which starts faster and prints the
    address), and start
    Jupyter with `RAY_ADDRESS=auto` (or that address): `start_ray()` then joins it in about a
    second. `ray.init(address="ray://<head>:10001")` before it points the same cells at a real
    cluster (workers need `pip install 'lion_nb[ray]'`).
    """),
    code("""
    from lion_nb.flow.ray_start import start_ray

    started = start_ray(num_cpus=2)  # joins RAY_ADDRESS when it is set
    joined = f" (joined {started.address})" if started.joined else ""
    print(f"Ray ready in {started.seconds:.1f} s{joined}" if not started.reused else "Ray reused")
    talk_on_ray = Flow(session, name="talk on tides (Ray)")
    outline = talk_on_ray.add(
        "communicate", instruction="Outline a talk on tides", branch=template.fork()
    )
    for n in (1, 2, 3):
        talk_on_ray.add("communicate", instruction=f"Write section {n}", depends_on=[outline])
    ray_view = FlowView(talk_on_ray)
    ray_view
    """),
    code("""
    import os

    import ray

    await talk_on_ray.run(engine="ray")
    attempts = [node.metadata["ray"]["attempts"][0] for node in talk_on_ray]
    print("nodes run in Ray worker processes:", all(a["pid"] != os.getpid() for a in attempts))
    print(
        "same answers as in the kernel:",
        [n.response for n in talk_on_ray] == [outline_.response for outline_ in talk],
    )
    ray.shutdown()
    """),
]
