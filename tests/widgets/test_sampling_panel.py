"""The sampling panel's kernel side (``widgets/sampling_panel.py``): the settings a reply's
panel starts at (the turn's own, the view's, the model's; llama.cpp's defaults for the rest,
saying which are which), sent as one ``sampler`` op when the page asks; and the entropy of
each token's stored alternatives, sent beside its surprise for the strip's second line."""

from __future__ import annotations

import math
from typing import Any

from lion_nb import Branch, iModel
from lion_nb.messages import AssistantResponse, Instruction, TokenChoice
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.sampling_panel import LLAMA_CPP_DEFAULTS, reply_settings, stored_entropy


def _reply(branch: Branch, text: str = "hi") -> AssistantResponse:
    top = [(text, math.log(0.5)), ("yo", math.log(0.25)), ("hey", math.log(0.25))]
    tokens = [TokenChoice(text=text, logprob=math.log(0.5), top=top)]
    branch.add_message(Instruction(instruction="q"))
    reply = AssistantResponse(response=text, tokens=tokens)
    branch.add_message(reply)
    return reply


def test_stored_entropy_is_over_the_stored_alternatives_in_hundredths_of_a_nat() -> None:
    half = TokenChoice(text="a", logprob=math.log(0.5), top=[("a", -0.7), ("b", -0.7)])
    assert stored_entropy(half) == round(math.log(2) * 100)  # two alike: ln 2 nats
    # renormalised: a top of 0.4 and 0.1 is 0.8 / 0.2 among what was stored
    skew = TokenChoice(
        text="a", logprob=math.log(0.4), top=[("a", math.log(0.4)), ("b", math.log(0.1))]
    )
    h = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2))
    assert stored_entropy(skew) == round(h * 100)
    assert stored_entropy(TokenChoice(text="a", logprob=0.0, top=[("a", 0.0)])) == 0
    assert stored_entropy(TokenChoice(text="a", logprob=0.0, top=[])) == -1  # none stored


def test_a_model_that_does_not_say_starts_at_llama_cpps_defaults() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", replies=["x"]))
    reply = _reply(branch)
    settings, given = reply_settings(branch, {}, reply.id)
    assert (
        settings
        == LLAMA_CPP_DEFAULTS
        == {
            "temperature": 0.8,
            "top_k": 40,
            "top_p": 0.95,
            "min_p": 0.05,
        }
    )
    assert given == []


def test_the_models_own_then_the_views_then_the_turns_own_settings_win() -> None:
    model = iModel(provider="local", temperature=0.3, top_k=20)
    branch = Branch(chat_model=model)
    reply = _reply(branch)
    settings, given = reply_settings(branch, {}, reply.id)
    assert settings == {"temperature": 0.3, "top_k": 20, "top_p": 0.95, "min_p": 0.05}
    assert given == ["temperature", "top_k"]
    # the embedded model's own temperature when none is given (LocalProvider's 0.6)
    plain = Branch(chat_model=iModel(provider="local"))
    settings, given = reply_settings(plain, {}, _reply(plain).id)
    assert (settings["temperature"], given) == (0.6, ["temperature"])
    # the view's options beat the model's
    settings, given = reply_settings(branch, {"top_p": 0.5}, reply.id)
    assert settings["top_p"] == 0.5 and "top_p" in given
    # a sample's fork: its first reply was sampled at the sample's settings
    fork = branch.fork(at=0)
    fork.metadata["sample"] = {"n": 1, "of": 5, "temperature": 1.2, "top_p": 0.8}
    sampled = _reply(fork, "yo")
    settings, _ = reply_settings(fork, {}, sampled.id)
    assert (settings["temperature"], settings["top_p"]) == (1.2, 0.8)
    assert reply_settings(fork, {}, fork.messages[1].id)[0]["temperature"] == 0.3  # inherited


def test_the_page_asks_and_gets_one_sampler_op_and_the_tokens_carry_entropy() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", replies=["x"], temperature=0))
    reply = _reply(branch)
    view = BranchView(branch)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    view._on_page(view, {"action": "tokens", "key": str(reply.id), "open": True}, [])
    view._on_page(view, {"action": "sampler", "key": str(reply.id)}, [])
    view._on_page(view, {"action": "sampler", "key": "no-such-reply"}, [])
    view.channel.flush()
    ops = [op for msg in sent for op in msg["ops"]]
    samplers = [op for op in ops if op["op"] == "sampler"]
    assert samplers == [
        {
            "op": "sampler",
            "key": str(reply.id),
            "temperature": 0.0,
            "top_k": 40,
            "top_p": 0.95,
            "min_p": 0.05,
            "given": ["temperature"],
        }
    ]
    tokens = [op for op in ops if op["op"] == "tokens"]
    assert tokens[0]["e"] == [stored_entropy(reply.tokens[0])]
    view.close()
