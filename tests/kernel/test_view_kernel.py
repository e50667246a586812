"""BranchView, Stop, the %%lion magic and the sync helpers inside a real ipykernel."""

from __future__ import annotations

import json
import os
import time

import pytest

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(120)]

SCRIPTED = """
from lion_nb import Branch, BranchView, iModel
from tests.support.chat_view_doubles import install; install()
from lion_nb.render.html import message_html
words = [f"word{{i}} " for i in range({n})]
branch = Branch(chat_model=iModel(provider="scripted",
                                  replies=[{{"chunks": words, "delay": {delay}}}]))
view = BranchView(branch)
display(view)
"""


def updates_sent(kernel, since: float) -> list[dict]:
    """The front end's ordered updates (``{"seq", "ops"}`` custom messages) sent since."""
    out = []
    for at, kind, content in kernel.comm:
        data = content.get("data", {})
        if at >= since and kind == "comm_msg" and data.get("method") == "custom":
            out.append(data["content"])
    return out


def texts_sent(kernel, since: float) -> list[str]:
    return [json.dumps(u) for u in updates_sent(kernel, since)]


def test_a_streamed_reply_updates_the_view_progressively(kernel):
    kernel.run(SCRIPTED.format(n=300, delay=0.02))
    start = time.monotonic()
    cell = kernel.run("view.send('stream please'); print(view.running, view.send_button.disabled)")
    assert cell.stdout.split() == ["True", "True"]  # the cell returned while the reply streams
    kernel.pump(1.5)
    partial = [t for t in texts_sent(kernel, start) if "word3" in t or "word4" in t]
    assert len(partial) >= 3, "the view should update several times while the reply streams"
    kernel.run("await view.wait()")
    assert kernel.value("view.send_button.disabled") is False
    same = kernel.value("view.rendered_html() == BranchView(branch).rendered_html()")
    assert same is True
    # replayed in order by a page, the updates show exactly the recorded cards
    kernel.pump(0.3)
    updates = updates_sent(kernel, start)
    seqs = [u["seq"] for u in updates]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # in order, no gap
    from tests.support.page_model import Page

    state, seq = kernel.value("[view.parts, view.seq]")
    page = Page(state, seq)  # what a reload gets: the kernel's state (complete, at rest)
    final = kernel.value("''.join(message_html(m) for m in branch.messages)")
    assert page.html() == final
    live = Page(templates=kernel.value("view.templates"))
    for u in updates_sent(kernel, 0):  # a page that was there from the start
        live.receive(u)
    assert live.resyncs == 0 and live.html() == final


def test_comm_traffic_is_linear_and_bytes_per_update_bounded(kernel):
    results = {}
    for n in (400, 4000):
        kernel.run(SCRIPTED.format(n=n, delay=0.0005))
        kernel.pump(0.3)
        start = time.monotonic()
        kernel.run("view.send('go')")
        kernel.run("await view.wait()")
        kernel.pump(0.5)
        traffic = [(k, json.dumps(c)) for at, k, c in kernel.comm if at >= start]
        final = kernel.value("sum(len(message_html(m)) for m in branch.messages)")
        updates = texts_sent(kernel, start)  # the deltas (not the state sent at the cell's end)
        streaming = [u for u in updates if '"seal"' not in u]  # the last one renders the block
        results[n] = (len(traffic), sum(map(len, updates)), final, max(map(len, streaming)))
    (_, b_small, f_small, _), (m_big, b_big, f_big, big_update) = results[400], results[4000]
    assert m_big < 4000 / 20, f"{m_big} comm messages for 4,000 tokens: not throttled"
    # payload bytes (envelopes excluded here; the benchmark counts them) stay a small
    # multiple of the final HTML at both sizes, so 10x the reply costs ~10x the bytes. This
    # reply is one paragraph that never ends: its text streams once as text, and is sent
    # rendered once, when it is recorded
    assert b_big <= 2.5 * f_big, (b_big, f_big)
    assert b_small <= 2.5 * f_small, (b_small, f_small)
    assert big_update < 8000, big_update  # while streaming: blocks since the last + new text


def test_a_late_page_heals_its_gap_from_the_synced_state(kernel):
    from tests.support.page_model import Page

    kernel.run(SCRIPTED.format(n=600, delay=0.005))
    kernel.pump(0.3)
    start = time.monotonic()
    kernel.run("view.send('go')")
    kernel.pump(0.8)  # half-way: a page attaches now, with the state the kernel holds
    state, seq = kernel.value("[view.parts, view.seq]")
    late = Page(state, seq)
    mark = time.monotonic()
    kernel.pump(0.3)
    for u in updates_sent(kernel, mark):
        late.receive(u)
    assert late.resyncs >= 1  # it saw a gap (the stream went on without the state)
    model_id = kernel.run("print(view.model_id)").stdout.strip()
    mark = time.monotonic()
    kernel.page_action(model_id, {"action": "resync", "have": late.applied})
    kernel.pump(0.5)
    synced = [
        c["data"]["state"]
        for at, k, c in kernel.comm
        if at >= mark and k == "comm_msg" and "parts" in c.get("data", {}).get("state", {})
    ]
    assert synced, "the kernel sends its state when a page asks"
    late.from_state(synced[-1]["parts"], synced[-1]["seq"])
    kernel.run("await view.wait()")
    kernel.pump(0.3)
    for u in updates_sent(kernel, mark):
        late.receive(u)
    final = kernel.value("''.join(message_html(m) for m in branch.messages)")
    assert late.html() == final and start < mark


def test_enter_in_the_page_sends_and_esc_stops(each_kernel):
    kernel = each_kernel
    kernel.run(SCRIPTED.format(n=400, delay=0.02))
    model_id = kernel.run("print(view.model_id)").stdout.strip()
    kernel.page_action(model_id, {"action": "send", "text": "from the page"})
    kernel.pump(0.6)
    assert kernel.value("view.running") is True
    kernel.page_action(model_id, {"action": "stop"})
    kernel.pump(0.6)
    kernel.run("await view.wait()")
    shown = kernel.value("view.rendered_html()")
    assert "from the page" in shown and "lion-stopped-msg" in shown  # the partial reply kept
    assert "stopped" in kernel.value("view.status.value")
    assert kernel.value("view.running") is False


def test_stop_click_during_a_fake_cli_run_ends_the_process_group(each_kernel, tmp_path):
    kernel = each_kernel
    record = tmp_path / "record.json"
    start = time.monotonic()
    kernel.run(f"""
from tests.support.fake_cli import make_fake_cli, recording
from pathlib import Path
from tests.support.chat_view_doubles import install; install()
fake = make_fake_cli(Path({str(tmp_path)!r}))
env = fake.env(recording("claude/text_partial"), delay=1.0)
env["FAKE_CLI_RECORD"] = {str(record)!r}
cli_branch = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path), env=env))
cli_view = BranchView(cli_branch, verb="run")
display(cli_view)
cli_view.send("say hello")
""")
    view_id = kernel.run("print(cli_view.model_id)").stdout.strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kernel.pump(0.1)
        if any("Hello! How can" in t for t in texts_sent(kernel, start)):
            break
    else:
        pytest.fail("the first text delta never reached the view")
    pgid = json.loads(record.read_text())["pgid"]
    kernel.page_action(view_id, {"action": "stop"})  # Stop / Esc, handled mid-stream
    kernel.pump(1.0)
    kernel.run("await cli_view.wait()")
    assert "stopped" in kernel.value("cli_view.status.value")
    last = kernel.value("[cli_branch.messages[-1].response, cli_branch.messages[-1].metadata]")
    assert last[0].startswith("Hello! How can") and "today?" not in last[0]
    assert last[1].get("stopped") is True
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert kernel.value("cli_view.send_button.disabled") is False


def test_the_cell_magic_interpolates_and_shows_a_live_view(kernel):
    kernel.run("""
%load_ext lion_nb
topic = "otters"
notes = Branch(chat_model=iModel(provider="scripted", replies=["Otters hold hands."]))
""")
    cell = kernel.run(
        '%%lion --branch notes --wait\nTell me about {topic} (JSON like {"a": 1} stays)'
    )
    assert cell.outputs, "the magic displays the view"
    bundle = cell.outputs[0]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "text/html" in bundle  # static fallback for saved notebooks
    sent = kernel.value("notes.messages[0].text")
    assert sent == 'Tell me about otters (JSON like {"a": 1} stays)'
    assert kernel.value("notes.messages[-1].response") == "Otters hold hands."
    bad = kernel.run("%%lion --branch notes\n{missing}", check=False)
    assert bad.status == "error" and "no variable 'missing'" in bad.error + bad.stderr


def test_sync_helpers_work_under_queued_cells(kernel):
    """Run All: several cells queued at once; blocking helpers must not hang the next ones."""
    cells = [
        "from lion_nb.sync import communicate_sync, run_sync\n"
        "qb = Branch(chat_model=iModel(provider='scripted', replies=['one', 'two'], delay=0.01))\n"
        "r1 = communicate_sync(qb, 'first')",
        "r2 = communicate_sync(qb, 'second')",
        "import asyncio\nr3 = run_sync(asyncio.sleep(0.05, result='three'))",
        "await asyncio.sleep(0.01)\nprint(r1, r2, r3, len(qb.messages))",
    ]
    ids = [kernel.kc.execute(code) for code in cells]
    replies = {}
    deadline = time.monotonic() + 60
    while len(replies) < len(ids) and time.monotonic() < deadline:
        msg = kernel.kc.get_shell_msg(timeout=deadline - time.monotonic())
        replies[msg["parent_header"]["msg_id"]] = msg["content"]["status"]
    assert [replies.get(i) for i in ids] == ["ok"] * 4
    assert kernel.run("print(r1, r2, r3, len(qb.messages))").stdout.strip() == "one two three 4"
