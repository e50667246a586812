"""11 — The exploration grid: five prompts × three columns on the embedded model (two
temperatures and a system-prompt variant), live; the word-level diff against the baseline;
summaries; records; opening a cell and continuing it; running a cell again; ``%%lion --grid``;
the same grid on Ray. Ships a cassette, so it runs without the model."""

from _src import code, md

CELLS = [
    md("""
    # The exploration grid: many prompts × many models, side by side

    Exploratory prompting is comparative: this wording or that one, temperature 0.2 or 1.0,
    with or without a system prompt. A **`lion_nb.Grid`** runs every prompt (a row) on every
    column (a model, the same model with other settings, or another system prompt) and shows
    the cells streaming side by side. Every cell is a real conversation: open it, continue it.

    1. five prompts × three columns, run live;
    2. what differs from the baseline column, word by word;
    3. a summary per row and per column;
    4. the grid as records (a `pandas.DataFrame` is one call away);
    5. open a cell and continue it;
    6. run a cell again;
    7. the quickest start: `%%lion --grid`;
    8. the same grid on Ray.

    It runs on the **embedded SmolLM2 model** (135 M parameters: small, fast, often wrong).
    Its calls were recorded into `data/11_grid.cassette.jsonl`, which ships with the notebook:
    without the model (Binder, say) the same cells replay from it.
    """),
    code("""
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb import Grid, iModel

    # The cassette of this notebook. (The test suite replays it strictly: mode "replay".)
    # speed=None replays at once; speed=1.0 streams at the pace it was recorded.
    CASSETTE = Path(os.environ.get("LION_NB_CASSETTE", "data/11_grid.cassette.jsonl"))
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")
    lion_nb.use_cassette(CASSETTE, mode=MODE, speed=None)


    def local(temperature):
        \"\"\"The embedded model at one temperature; the seed makes each reply reproducible.\"\"\"
        return iModel(provider="local", temperature=temperature, seed=7, max_tokens=40)


    SYSTEM = "Answer in one or two short sentences."
    PROMPTS = [
        "Name three uses for a paperclip.",
        "Why is the sky blue?",
        "Write a haiku about the sea.",
        "Give one tip for learning to cook.",
        "What is the capital of Japan?",
    ]
    COLUMNS = {
        "T 0.2": local(0.2),  # the baseline: the first column
        "T 1.0": local(1.0),
        "pirate": (local(0.2), "You are a pirate. Answer in one short sentence, like a pirate."),
    }
    grid = Grid(PROMPTS, COLUMNS, system=SYSTEM, name="Five prompts")
    print(grid, "· columns:", grid.labels)
    """),
    md("""
    ## 1. Run it, live

    `lion_nb.view(grid)` is the grid's view: prompts down, columns across. Each cell streams
    its reply as it is written; underneath it says its status, how many tokens it wrote, its
    time to first token and its tokens per second. The embedded model answers one request at
    a time, so the cells take turns: a cell's *first token* time includes its wait. Stop, *Run
    again* on a row or a column, and a cell's *Open*, *Full text* and *Diff* are in the view
    (arrow keys move between cells, Enter opens one). Display the view, then run.
    """),
    code("""
    view = lion_nb.view(grid)
    view
    """),
    code("""
    await grid.run(max_concurrent=3)
    print(grid)
    for i, prompt in enumerate(PROMPTS):
        print(f"{i + 1}. {prompt}")
        for cell in grid.row(i):
            print(f"   {cell.label:7} {cell.usage.output_tokens:3} tokens | {cell.text[:70]!r}")
    first_texts = [cell.text for cell in grid.cells()]
    """),
    md("""
    `grid[i, j]` (or `grid.cell(i, j)`) is one cell: `.text`, `.status` ("pending", "running",
    "done", "failed", "stopped"), `.usage`, `.cost_usd` (None here: a local model has no
    price), `.latency_ms`, `.first_token_ms`, `.tokens_per_s`, `.error` (in words) and
    `.branch`, its conversation.

    ## 2. What differs from the baseline

    The first column is the **baseline** (`Grid(..., baseline=...)` picks another). A cell's
    *Diff* in the view puts its reply under the grid, word by word against the baseline's
    reply of the same row: the words only it has marked as added, the baseline's words it lacks
    struck out. `view.show(i, j, "diff")` opens that panel from code; `word_diff` is the same
    comparison as data.
    """),
    code("""
    from lion_nb.viewmodels.grid import word_diff

    view.show(2, 1, "diff")  # the haiku at T 1.0 against T 0.2, under the grid


    def marked(pieces):
        \"\"\"A diff as text: [+added] and [-removed] words.\"\"\"
        signs = {"same": "{}", "added": "[+{}]", "removed": "[-{}]"}
        return "".join(signs[op].format(words) for op, words in pieces)


    def changed_share(baseline, text):
        \"\"\"The share of the words of ``text`` that the baseline does not have there.\"\"\"
        pieces = word_diff(baseline, text)
        added = sum(len(words.split()) for op, words in pieces if op == "added")
        return added / max(1, len(text.split()))


    print("row 3, T 1.0 against T 0.2:", marked(word_diff(grid[2, 0].text, grid[2, 1].text)))
    print()
    print("words differing from the baseline, row by row:")
    print(f"  {'row':7}", " ".join(f"{i + 1:>4}" for i in range(len(PROMPTS))))
    for j, label in enumerate(grid.labels[1:], start=1):
        shares = [changed_share(grid[i, 0].text, grid[i, j].text) for i in range(len(PROMPTS))]
        print(f"  {label:7}", " ".join(f"{s:4.0%}" for s in shares))
    """),
    md("""
    Each figure is the share of a cell's words that the baseline's reply does not have at that
    place (0%: the same reply; 100%: not one run of words in common), one per row. The higher
    temperature and the pirate's system prompt both change most of the words of the open
    questions; the question with one right answer (row 5) gets the same reply everywhere.

    ## 3. Summaries per row and per column

    Under each row and each column the view sums its cells up: how many are done, the mean
    latency of the cells that are done, the total cost and the failures. They are the view
    model's, as data (`view.model.snapshot()`), in the view's words:
    """),
    code("""
    from lion_nb.render.grid_html import summary_text

    snapshot = view.model.snapshot()
    for label, summary in zip(grid.labels, snapshot.columns, strict=True):
        print(f"column {label:7} {summary_text(summary)}")
    for i, summary in enumerate(snapshot.rows):
        print(f"row {i + 1}         {summary_text(summary)}")
    print("the grid:", summary_text(snapshot.total))
    """),
    md("""
    The latencies here are a replay's (the cassette replays at once: a few milliseconds); live,
    they are the model's, its wait for its turn included. There is no cost: a local model has
    no price (a priced model's column shows its total, with "+ n unpriced" where some cells
    have none).

    ## 4. The grid as records

    `grid.to_records()` gives one flat dict per cell: prompt, column label, text, status,
    tokens, cost, latency, first token, tokens/s, error. `pandas.DataFrame(grid.to_records())`
    makes it a table (pandas is not a dependency of lion_nb; it is used below when installed).
    """),
    code("""
    records = grid.to_records()
    print(len(records), "records with:", ", ".join(records[0]))
    try:
        import pandas
    except ImportError:
        by_label = {}
        for r in records:
            by_label.setdefault(r["label"], []).append(r["output_tokens"])
        print("pandas is not installed; mean output tokens by column:")
        for label, tokens in by_label.items():
            print(f"  {label:7} {sum(tokens) / len(tokens):5.1f}")
    else:
        frame = pandas.DataFrame(records)
        print(frame.groupby("label", sort=False)["output_tokens"].mean().round(1))
    """),
    md("""
    ## 5. Open a cell, continue it

    A cell is a conversation: `grid[i, j].branch` is a `Branch` like any other. Its view's
    *Open* shows it in a chat view under the grid (`view.open_cell(i, j)` from code); here it
    gets a chat view of its own. Type in its prompt box, or send from code: the reply streams
    into that view.
    """),
    code("""
    pirate = grid[0, 2]
    print(pirate.name(), "·", pirate.status, "·", len(pirate.branch.messages), "messages")
    chat = lion_nb.view(pirate.branch, height=300)
    chat
    """),
    code("""
    reply = await pirate.branch.communicate("Which of the three is the best?")
    print("continued:", [m.role for m in pirate.branch.messages])
    print("the cell still shows its own reply:", pirate.text == first_texts[2])
    """),
    md("""
    ## 6. Run a cell again

    `await grid.run(cells=[(i, j)])` (or `rows=[i]`, `columns=[j]`; the view's *Run again*)
    runs those cells afresh: on a new fork of the cell's branch before its prompt, so the
    earlier reply is not sent again. The earlier run stays in the session, in `cell.attempts`,
    as an alternative of the new one. With a seed, the same settings give the same reply: a
    run again is how a failed or stopped cell gets its answer, or an unseeded column draws
    anew. (Under a cassette an identical request replays what was recorded for it: a cassette
    cannot tell a run again from a repeat.)
    """),
    code("""
    await grid.run(cells=[(2, 1)])
    again = grid[2, 1]
    print(f"{again.name()}: run {again.attempt + 1}, {len(again.attempts)} branches")
    print("the earlier reply is kept:", again.attempts[0].messages[-1].text == first_texts[7])
    print("the same seed gave the same reply:", again.text == first_texts[7])
    """),
    md("""
    ## 7. The quickest start: `%%lion --grid`

    The cell magic makes a grid from a cell: one prompt per line, one `--model` per column (a
    notebook variable holding an `iModel`, or a spec such as `openai/gpt-4.1-mini`). It shows
    the grid's view and runs it; `--wait` waits for the end, `--name` names the variable. The
    prompts below are two of the grid's, so the cassette has their answers already.
    """),
    code("""
    %load_ext lion_nb
    cold, warm = COLUMNS["T 0.2"], COLUMNS["T 1.0"]
    """),
    code("""
    %%lion --grid --model cold --model warm --system "Answer in one or two short sentences." --name quick --wait
    Why is the sky blue?
    What is the capital of Japan?
    """),
    code("""
    made = quick.cells()  # noqa: F821 (the grid %%lion --name made: a linter cannot see it)
    print([f"{cell.name()}: {cell.status}" for cell in made])
    big = [grid[i, j].text for i in (1, 4) for j in (0, 1)]  # the same prompts and columns
    print("same replies as the big grid:", [cell.text for cell in made] == big)
    """),
    md("""
    ## 8. The same grid on Ray

    `engine="ray"` runs each cell as a Ray task (the cells are the nodes of a flow, as in
    notebook 08): the branch travels as data, the worker runs the cell through the same
    operations layer, and its messages stream back into the view. The cassette in force here
    travels with each cell, so the workers replay it too (a worker never records: record with
    the local engine first, as this notebook did).

    `start_ray()` starts a local cluster, quietly (a few seconds on two quiet cores, longer on
    a busy machine), or joins the one `RAY_ADDRESS` names.
    """),
    code("""
    from lion_nb.flow.ray_start import start_ray

    started = start_ray(num_cpus=2)  # joins RAY_ADDRESS when it is set
    joined = f" (joined {started.address})" if started.joined else ""
    print(f"Ray ready in {started.seconds:.1f} s{joined}" if not started.reused else "Ray reused")
    on_ray = Grid(PROMPTS, COLUMNS, system=SYSTEM, name="Five prompts on Ray")
    lion_nb.view(on_ray)
    """),
    code("""
    import ray

    await on_ray.run(engine="ray", max_concurrent=2)
    workers = {cell.node.metadata["ray"]["attempts"][0]["pid"] for cell in on_ray.cells()}
    replayed = all("replayed" in cell.branch.messages[-1].metadata for cell in on_ray.cells())
    print(on_ray)
    print("cells run in Ray worker processes:", os.getpid() not in workers)
    print("same replies as in the kernel:", [cell.text for cell in on_ray.cells()] == first_texts)
    print("the replies came from:", "the cassette" if replayed else "the embedded model, live")
    ray.shutdown()
    """),
]
