"""The token view's kernel side (``widgets/token_panels.py``): a reply's tokens reach the page
as deltas while it streams (never the whole list per update), its alternatives only when the
page asks, a view that does not show tokens sends none, and the page actions."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from lion_nb import Branch, Session, iModel
from lion_nb.messages import AssistantResponse, Instruction, TokenChoice
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.front import Front
from lion_nb.widgets.protocol import TOP_CHUNK
from lion_nb.widgets.token_panels import sample_defaults, surprise
from tests.support.page_model import Page


def token_dicts(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        lp = -((i * 37) % 300) / 100
        top = [[f" w{i}", lp], [f" x{i}", lp - 1.0]]
        out.append({"text": f" w{i}", "logprob": lp, "top": sorted(top, key=lambda a: -a[1])})
    return out


def streamed_branch(n: int, delay: float = 0.005) -> Branch:
    model = iModel(
        provider="scripted", logprobs=5, replies=[{"tokens": token_dicts(n), "delay": delay}]
    )
    return Branch(chat_model=model)


def token_ops(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [op for msg in sent for op in msg["ops"] if op["op"] == "tokens"]


def recorded(n: int) -> Branch:
    branch = Branch()
    tokens = [
        TokenChoice(text=t["text"], logprob=t["logprob"], top=t["top"]) for t in token_dicts(n)
    ]
    branch.add_message(Instruction(instruction="q"))
    branch.add_message(AssistantResponse(response="".join(t.text for t in tokens), tokens=tokens))
    return branch


def test_surprise_is_minus_log_p_in_hundredths_of_a_nat() -> None:
    assert surprise(0.0) == 0
    assert surprise(math.log(0.5)) == 69
    assert surprise(-1e9) == 9999
    assert surprise(None) == 9999


async def test_a_streamed_reply_sends_its_tokens_as_deltas_to_an_open_token_view() -> None:
    branch = streamed_branch(60)
    view = BranchView(branch, tokens=True)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    page = Page(templates={"live": view.templates["live"]})
    await view.asend("go")
    await asyncio.sleep(0.05)
    for msg in sent:
        page.receive(msg)
    ops = token_ops(sent)
    assert len(ops) >= 3  # tinted as they arrive: several updates, not one at the end
    assert sum(len(op["t"]) for op in ops) == 60  # each token sent once: deltas
    assert all("top" not in op for op in ops)  # alternatives only when asked for
    reply = branch.messages[-1]
    assert ops[0]["key"].startswith("L") and ops[-1]["key"] in (str(reply.id), ops[0]["key"])
    shown = page.parts[str(reply.id)].tokens
    assert [t for t, _ in shown] == [t.text for t in reply.tokens]
    assert [s for _, s in shown] == [surprise(t.logprob) for t in reply.tokens]
    assert str(reply.id) in view.token_marks  # a "Tokens" control on it
    view.close()


async def test_a_view_that_shows_no_tokens_sends_none_but_marks_the_reply() -> None:
    branch = streamed_branch(20)
    view = BranchView(branch)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    await view.asend("go")
    await asyncio.sleep(0.05)
    assert token_ops(sent) == []
    assert view.token_marks == [str(branch.messages[-1].id)]
    text = "".join(json.dumps(m) for m in sent)
    assert '"s":' not in text  # no token data at all
    view.close()


async def test_opening_sends_all_tokens_then_alternatives_by_chunk_on_demand() -> None:
    branch = recorded(100)
    reply = branch.messages[-1]
    view = BranchView(branch)
    assert view.token_marks == [str(reply.id)]  # in the first state the page is given
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    page = Page(view.parts, view.seq)
    view._on_page(view, {"action": "tokens", "key": str(reply.id), "open": True}, [])
    await asyncio.sleep(0.01)
    view._on_page(view, {"action": "token_top", "key": str(reply.id), "at": 70}, [])
    await asyncio.sleep(0.01)
    for msg in sent:
        page.receive(msg)
    part = page.parts[str(reply.id)]
    assert len(part.tokens) == 100
    assert sorted(part.top) == list(range(TOP_CHUNK, 100))  # the chunk holding token 70
    assert part.top[70] == [[t, round(math.exp(lp), 4)] for t, lp in reply.tokens[70].top]
    # closed: nothing more is sent for it
    view._on_page(view, {"action": "tokens", "key": str(reply.id), "open": False}, [])
    assert view.token_panels.open == set()
    view._on_page(view, {"action": "token_top", "key": str(reply.id), "at": 999}, [])
    view._on_page(view, {"action": "tokens", "key": "nonsense", "open": True}, [])
    await asyncio.sleep(0.01)
    assert len(token_ops(sent)) == 2
    view.close()


def test_show_tokens_needs_a_reply_with_tokens() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction="q"))
    branch.add_message(AssistantResponse(response="no tokens"))
    view = BranchView(branch)
    try:
        view.show_tokens()
    except ValueError as exc:
        assert "logprobs" in str(exc)
    else:
        raise AssertionError("show_tokens opened a reply without tokens")
    view.close()
    with_tokens = recorded(3)
    view = BranchView(with_tokens)
    view.show_tokens()
    assert view.token_panels.open == {with_tokens.messages[-1].id}
    view.close()


def test_the_static_fallback_shows_the_open_token_views_tinted() -> None:
    branch = recorded(5)
    view = BranchView(branch)
    assert "data-token-index" not in view.static_html()
    view.show_tokens()
    html = view.static_html()
    assert html.count("data-token-index") == 5
    assert "Tokens of reply 1" in html and "lion-tok-b" in html
    view.close()


def story_model() -> iModel:
    def tok(text: str, p: float, *alts: tuple[str, float]) -> dict[str, Any]:
        top = sorted(
            [(text, math.log(p)), *[(t, math.log(q)) for t, q in alts]], key=lambda a: -a[1]
        )
        return {"text": text, "logprob": math.log(p), "top": [list(a) for a in top]}

    story = [
        tok("The", 0.95),
        tok(" cat", 0.7),
        tok(" sat", 0.45),
        tok(" on", 0.2, (" under", 0.5)),
    ]
    rest = [tok(" the", 0.9), tok(" table.", 0.6)]
    return iModel(provider="scripted", logprobs=5, replies=[{"tokens": story}, {"tokens": rest}])


async def test_choosing_an_alternative_forks_there_and_the_switcher_counts_the_fork() -> None:
    branch = Branch(chat_model=story_model())
    view = BranchView(branch)
    await view.asend("a story")
    reply = branch.messages[-1]
    assert reply.text == "The cat sat on"
    view._on_page(
        view, {"action": "fork_token", "key": str(reply.id), "index": 3, "text": " under"}, []
    )
    for _ in range(200):
        await asyncio.sleep(0.01)
        if view.branch is not branch and not view.running:
            break
    fork = view.branch
    assert fork is not branch and branch.messages[-1].text == "The cat sat on"  # untouched
    new = fork.messages[-1]
    assert new.text == "The cat sat under the table."
    assert view.alt_marks[str(new.id)] == [2, 2]  # the switcher: ‹ 2/2 ›
    assert new.id in view.token_panels.open  # the fork's reply streamed with its token view open
    assert str(new.id) in view.token_marks
    view.close()


async def test_sample_from_the_page_runs_five_forks_and_shows_where_they_agree() -> None:
    answers = ["The sky is blue.", "The sky is grey.", "The sea.", "The sky!", "The end."]
    session = Session()
    branch = Branch(chat_model=iModel(provider="scripted", replies=["First.", *answers]))
    session.include_branches(branch)
    view = BranchView(branch)
    await view.asend("Describe the sky.")
    reply = branch.messages[-1]
    view._on_page(view, {"action": "sample", "key": str(reply.id), "n": 5}, [])
    for _ in range(300):
        await asyncio.sleep(0.01)
        if view.compare_html:
            break
    assert "5 samples" in view.compare_html and "lion-sample-shared" in view.compare_html
    assert len(view.conversation.alternatives(1)) == 6  # the reply and its five samples
    assert view.alt_marks[str(view.branch.messages[-1].id)][1] == 6
    view._on_page(view, {"action": "compare_close"}, [])
    await asyncio.sleep(0.01)
    assert view.compare_html == ""  # Close closes it
    view._on_page(view, {"action": "sample", "key": str(reply.id), "n": 99}, [])
    await asyncio.sleep(0.05)
    assert len(view.conversation.alternatives(1)) == 6  # refused: 1 to 20
    view.close()


def test_the_open_token_views_are_synced_state_for_a_page_that_attaches_later() -> None:
    """Voilà draws the view after the notebook ran: the ``tokens`` op ``show_tokens()`` sent
    went to no page, so which token views are open is in the synced state (``token_open``)."""
    branch = recorded(10)
    view = BranchView(branch)
    key = str(branch.messages[-1].id)
    assert view.chrome_value("token_open") == []
    view.show_tokens()
    view._apply_chrome()
    assert view.token_open == [key]  # the trait a late page reads
    view._on_page(view, {"action": "tokens", "key": key, "open": False}, [])
    view._apply_chrome()
    assert view.token_open == []
    view.close()


def test_sample_defaults_warm_a_model_at_temperature_0_and_keep_its_own_otherwise() -> None:
    cold = Branch(chat_model=iModel(provider="scripted", temperature=0))
    assert sample_defaults({}, cold) == {"temperature": 0.8, "top_p": 0.95}
    assert sample_defaults({}, Branch(chat_model=iModel(provider="scripted"))) == {
        "temperature": 0.8,
        "top_p": 0.95,
    }
    own = Branch(chat_model=iModel(provider="scripted", temperature=1.1, top_p=0.9))
    assert sample_defaults({}, own) == {"temperature": 1.1, "top_p": 0.9}
    assert sample_defaults({"temperature": 0}, own) == {"temperature": 0.8, "top_p": 0.9}
    # the synced trait starts at what a model that says neither gets: a new view sends no op
    assert Front.class_traits()["sample_at"].default() == sample_defaults({}, Branch())


async def _sampled(view: BranchView, content: dict[str, Any]) -> str:
    view._on_page(view, {"action": "sample", "n": 5, **content}, [])
    for _ in range(300):
        await asyncio.sleep(0.01)
        if view.compare_html:
            break
    return view.compare_html


async def test_sample_five_at_temperature_0_samples_at_0_8_and_its_title_says_so() -> None:
    answers = ["The sky is blue.", "The sky is grey.", "The sea.", "The sky!", "The end."]
    model = iModel(provider="scripted", temperature=0, replies=["First.", *answers, *answers])
    session = Session()
    branch = Branch(chat_model=model)
    session.include_branches(branch)
    view = BranchView(branch)
    await view.asend("Describe the sky.")
    view.sync_alternatives()
    view._apply_chrome()
    assert view.sample_at == {"temperature": 0.8, "top_p": 0.95}  # what the page shows
    key = str(branch.messages[-1].id)
    html = await _sampled(view, {"key": key})
    asked = model.provider.requests[1:6]
    assert {(r.options.get("temperature"), r.options.get("top_p")) for r in asked} == {(0.8, 0.95)}
    title = "5 samples at temperature 0.8, top-p 0.95 · 1 word shared"
    assert f'<span class="lion-tokens-title">{title}</span>' in html
    view._on_page(view, {"action": "compare_close"}, [])
    await asyncio.sleep(0.01)
    # the page's controls set them; a value out of range samples nothing
    key = str(view.branch.messages[-1].id)  # the reply shown now: the first sample
    html = await _sampled(view, {"key": key, "temperature": 1.3, "top_p": 0.5})
    assert "5 samples at temperature 1.3, top-p 0.5" in html
    assert {r.options.get("temperature") for r in model.provider.requests[6:11]} == {1.3}
    view._on_page(view, {"action": "compare_close"}, [])
    before = len(model.provider.requests)
    view._on_page(view, {"action": "sample", "key": key, "n": 5, "temperature": 9}, [])
    await asyncio.sleep(0.05)
    assert len(model.provider.requests) == before
    view.close()
