"""``GridView``: a ``lion_nb.Grid`` live on the page protocol — cells stream into their parts,
Stop and Run again act on the grid, Open shows a cell's conversation in a chat view, the
panel under the grid shows a full text or a diff, a large grid keeps only the rows in view."""

from __future__ import annotations

import asyncio
import re
import time
from html import unescape
from typing import Any

import lion_nb
from lion_nb import Branch, Grid, iModel
from lion_nb.widgets.channel import MAX_RATE
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.grid_view import GridView
from lion_nb.widgets.protocol import ENVELOPE_BYTES

PROMPTS = ["Name a colour.", "Name a fish."]


def answering(tag: str, *, delay: float = 0.0, words: int = 6) -> iModel:
    def answer(request: Any) -> dict[str, Any]:
        return {"text": f"{tag} says " + " ".join(f"w{k}" for k in range(words))}

    return iModel(provider="scripted", default_reply=answer, delay=delay)


def recorded(view: GridView) -> list[dict[str, Any]]:
    """The channel's messages from now on (what a page drawing the view receives)."""
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    return sent


def ops(sent: list[dict[str, Any]], kind: str, key: str | None = None) -> list[dict[str, Any]]:
    return [o for m in sent for o in m["ops"] if o["op"] == kind and key in (None, o.get("key"))]


def act(view: GridView, **content: Any) -> None:
    view._on_page(view, content, [])


async def settle(view: GridView) -> None:
    await asyncio.sleep(0.15)
    view.channel.flush()


def test_view_of_a_grid_is_a_grid_view_and_of_a_branch_still_a_chat_view() -> None:
    grid = Grid(PROMPTS, {"a": answering("A")})
    view = lion_nb.view(grid)
    assert isinstance(view, GridView) and isinstance(view, lion_nb.GridView)
    chat = lion_nb.view(Branch())
    assert isinstance(chat, BranchView)
    view.close()
    chat.close()


async def test_rendered_html_is_the_static_table_of_the_grid() -> None:
    grid = Grid(PROMPTS, {"a": answering("A"), "b": answering("B")})
    await grid.run()
    html = lion_nb.view(grid).rendered_html()
    assert html.count('class="lion-grid-cell') == 4
    assert "A says w0" in html and "B says w0" in html and "Name a fish." in html
    assert "Row 2, b: done" in html


async def test_running_cells_stream_into_their_parts_at_the_channels_rate() -> None:
    grid = Grid(
        PROMPTS,
        {"a": answering("A", delay=0.02, words=30), "b": answering("B", delay=0.02, words=30)},
    )
    view = GridView(grid)
    sent = recorded(view)
    started = time.monotonic()
    await grid.run()
    elapsed = time.monotonic() - started
    await settle(view)
    for i in range(2):
        for j in range(2):
            key = f"c{i}-{j}"
            tails = ops(sent, "tail", key)
            assert len(tails) >= 4, key  # streamed, not only the end
            running = [o for o in ops(sent, "put", key) if "lion-grid-running" in o["html"]][-1]
            start = unescape(re.search(r'lion-tail-text">([^<]*)<', running["html"]).group(1))
            streamed = start + "".join(t["text"] for t in tails)
            assert grid[i, j].text.startswith(streamed) and len(streamed) > len(start)
            final = ops(sent, "put", key)[-1]["html"]
            assert "lion-grid-done" in final and grid[i, j].text in final
    # one throttle for every cell: messages at most MAX_RATE a second (+ structural ones)
    assert len(sent) <= elapsed * MAX_RATE + 12
    view.close()


async def test_stop_from_the_page_stops_the_grid_and_cells_say_stopped() -> None:
    grid = Grid(PROMPTS, {"slow": answering("S", delay=0.05, words=200)})
    view = GridView(grid)
    run = asyncio.ensure_future(grid.run())
    await asyncio.sleep(0.3)
    assert view.chrome_value("can_stop") is True
    act(view, action="stop")
    await asyncio.wait_for(run, 10)
    assert {c.status for c in grid.cells()} == {"stopped"}
    await settle(view)
    assert view.can_stop is False and view.busy is False
    assert "stopped" in view.status_line
    view.close()


async def test_run_again_from_the_page_replaces_the_cell() -> None:
    grid = Grid(PROMPTS, {"a": answering("A"), "b": answering("B", delay=0.005)})
    view = GridView(grid)
    await grid.run()
    await settle(view)
    before = grid[1, 1].branch
    sent = recorded(view)
    act(view, action="grid_run", cells=[[1, 1]])
    assert view._tasks
    await asyncio.wait_for(asyncio.gather(*view._tasks), 10)
    await settle(view)
    assert grid[1, 1].attempt == 1 and grid[1, 1].branch is not before
    final = ops(sent, "put", "c1-1")[-1]["html"]
    assert "run 2" in final and "lion-grid-done" in final
    assert ops(sent, "put", "c0-0") == []  # the other cells stay as they were
    view.close()


async def test_a_refused_run_says_why_in_the_view() -> None:
    grid = Grid(PROMPTS[:1], {"slow": answering("S", delay=0.05, words=100)})
    view = GridView(grid)
    run = asyncio.ensure_future(grid.run())
    await asyncio.sleep(0.2)
    act(view, action="grid_run", cells=[[0, 0]])
    await asyncio.sleep(0.1)
    assert "running now" in view.chrome_value("error_box")
    grid.stop()
    await run
    view.close()


async def test_open_shows_the_cells_conversation_in_a_chat_view_and_again_closes_it() -> None:
    grid = Grid(PROMPTS, {"a": answering("A"), "b": answering("B")})
    view = GridView(grid)
    await grid.run()
    act(view, action="open", key="c1-0")
    chat = view.chat
    assert isinstance(chat, BranchView) and chat.branch is grid[1, 0].branch
    assert chat.title == "Row 2, a"
    act(view, action="open", key="c1-1")
    assert view.chat is not None and view.chat.branch is grid[1, 1].branch
    assert chat.closed  # the chat view it replaced
    act(view, action="open", key="c1-1")
    assert view.chat is None and view.opened is None
    view.close()


async def test_the_panel_shows_a_full_text_or_a_diff_against_the_baseline() -> None:
    grid = Grid(PROMPTS[:1], {"a": answering("A", words=300), "b": answering("B", words=300)})
    view = GridView(grid, cell_chars=50)
    await grid.run()
    await settle(view)
    cell_html = dict((k, h) for k, h, *_ in view.state_parts())["c0-1"]
    assert grid[0, 1].text not in cell_html  # compact: the start only
    sent = recorded(view)
    act(view, action="grid_show", key="c0-1", what="text")
    view.channel.flush()
    panel = ops(sent, "put", "detail")[-1]["html"]
    assert grid[0, 1].text in panel and "full text" in panel
    act(view, action="grid_show", key="c0-1", what="diff")
    view.channel.flush()
    diff = ops(sent, "put", "detail")[-1]["html"]
    assert '<del class="lion-grid-del">A</del><ins class="lion-grid-ins">B</ins>' in diff
    act(view, action="grid_show", key="c0-1", what="")
    view.channel.flush()
    assert ops(sent, "drop", "detail")
    view.close()


async def test_a_large_grid_has_only_the_rows_in_view_on_the_page() -> None:
    prompts = [f"Prompt {i}" for i in range(100)]
    grid = Grid(prompts, {"a": answering("A", words=2), "b": answering("B", words=2)})
    await grid.run(max_concurrent=50)
    view = GridView(grid, page_rows=10)
    rows = [k for k, *_ in view.state_parts() if k.startswith("r")]
    assert rows == [f"r{i}" for i in range(15)]  # the first page and a margin
    assert any(k == "gb" for k, *_ in view.state_parts())  # the rest's height, kept
    sent = recorded(view)
    act(view, action="grid_window", first=60, count=10)
    view.channel.flush()
    rows = [k for k, *_ in view.state_parts() if k.startswith("r")]
    assert rows == [f"r{i}" for i in range(55, 75)]
    dropped = {o["key"] for o in ops(sent, "drop")}
    assert {f"r{i}" for i in range(15)} <= dropped
    put = [o for o in ops(sent, "put") if o["key"] == "r55"]
    assert put and put[0]["parent"] == "frame" and put[0]["before"] in ("r56", "gb", None)
    keys = [k for k, *_ in view.state_parts()]
    assert keys.index("gt") < keys.index("r55") < keys.index("r74") < keys.index("gb")
    view.close()


async def test_a_streaming_grid_costs_no_more_bytes_than_twelve_chat_views() -> None:
    """The issue's bound: a 4 × 3 grid streaming ≤ 1.1 × the bytes of 12 chat views showing
    the same replies (payloads, and with each message's envelope)."""

    def reply(i: int, j: int) -> str:
        return f"Reply {i}{j}: " + " ".join(f"word{k}" for k in range(60))

    def model(j: int) -> iModel:
        def answer(request: Any) -> dict[str, Any]:
            i = int(request.messages[-1]["content"].split()[-1])
            return {"text": reply(i, j), "delay": 0.01}

        return iModel(provider="scripted", default_reply=answer)

    grid = Grid([f"Prompt {i}" for i in range(4)], {f"m{j}": model(j) for j in range(3)})
    view = GridView(grid)
    recorded(view)
    await grid.run()
    await settle(view)
    chats = [
        BranchView(
            Branch(
                chat_model=iModel(
                    provider="scripted", replies=[{"text": reply(i, j), "delay": 0.01}]
                )
            )
        )
        for i in range(4)
        for j in range(3)
    ]
    for chat in chats:
        chat.channel._send = lambda _content: None
    await asyncio.gather(*(c.branch.communicate(f"Prompt {k}") for k, c in enumerate(chats)))
    await asyncio.sleep(0.15)
    for chat in chats:
        chat.channel.flush()
    payload = sum(c.channel.sent_bytes for c in chats)
    envelopes = ENVELOPE_BYTES * sum(c.channel.messages for c in chats)
    assert view.channel.sent_bytes <= 1.1 * payload
    assert view.channel.sent_bytes + ENVELOPE_BYTES * view.channel.messages <= 1.1 * (
        payload + envelopes
    )
    for chat in chats:
        chat.close()
    view.close()


async def test_the_saved_output_holds_the_grid_as_it_ended(outputs: Any) -> None:
    grid = Grid(PROMPTS, {"a": answering("A", delay=0.005), "b": answering("B")})
    view = GridView(grid)
    outputs.show(view)
    assert "A says" not in outputs.of(view)["text/html"]
    with outputs.cell():
        await grid.run()
        await settle(view)
    saved = outputs.of(view)
    assert saved["text/html"].count("lion-grid-done") == 4
    assert grid[1, 0].text in saved["text/html"] and grid[1, 0].text in saved["text/plain"]
    view.close()


def test_every_piece_of_a_row_is_a_part_in_column_order() -> None:
    """The page orders a row's nested parts from the synced state at the start of the row's
    box: markup of the row's own would be pushed behind them (its prompt ended up last)."""
    grid = Grid(PROMPTS, {"a": answering("A"), "b": answering("B")})
    view = GridView(grid)
    row = [(k, html) for k, html, *parent in view.state_parts() if parent == ["r1"]]
    assert [k for k, _ in row] == ["h1", "c1-0", "c1-1", "s1"]
    assert row[0][1].startswith('<th scope="row"') and "Name a fish." in row[0][1]
    tr = dict((k, html) for k, html, *_ in view.state_parts())["r1"]
    assert tr == '<tr class="lion-grid-row" data-row="1" data-parts=""></tr>'
    view.close()
