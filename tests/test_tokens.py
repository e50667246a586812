"""A reply's tokens and their log-probabilities: ``logprobs=K``, the scripted
``tokens`` reply, ``AssistantResponse.tokens``, persistence, export and cassettes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import CassetteError, ConfigurationError
from lion_nb.export import export_json, import_json
from lion_nb.messages import MESSAGE_LIST, AssistantResponse, TokenChoice
from lion_nb.models.logprobs import check_logprobs, tokens_from_bytes
from lion_nb.signals import StreamDelta
from lion_nb.tokens import agreement, decode_tokens_delta, encode_tokens_delta

TOKENS = [
    {"text": "Par", "logprob": -0.1, "top": [["Par", -0.1], ["Lon", -2.5], ["Rom", -3.0]]},
    {"text": "is", "logprob": -0.01, "top": [["is", -0.01], ["ma", -5.0]]},
    {"text": ".", "logprob": -0.7, "top": [[".", -0.7], ["!", -1.2]]},
]


def scripted(*replies: object, **kw: object) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


# -- the data --------------------------------------------------------------------------------


def test_bytes_split_inside_a_character_join_into_one_token() -> None:
    smile, e_acute = "🙂".encode(), "é".encode()
    tokens = tokens_from_bytes(
        [
            (b"Caf", -0.5, [(b"Caf", -0.5), (b"Tea", -1.5)]),
            (e_acute[:1], -0.25, [(e_acute[:1], -0.25)]),
            (e_acute[1:], -0.25, []),
            (b" ", -0.1, []),
            (smile[:2], -1.0, []),
            (smile[2:3], -0.5, []),
            (smile[3:], -0.5, []),
        ]
    )
    assert [t.text for t in tokens] == ["Caf", "é", " ", "🙂"]
    assert "".join(t.text for t in tokens) == "Café 🙂"
    assert tokens[1].logprob == pytest.approx(-0.5)  # the joint probability of the pieces
    assert tokens[3].logprob == pytest.approx(-2.0)
    assert tokens[0].top == [("Caf", -0.5), ("Tea", -1.5)]
    # bytes that never complete a character still join to the decoded text
    cut = tokens_from_bytes([(b"a", -1.0, []), (smile[:1], -1.0, [])])
    assert [t.text for t in cut] == ["a", "\ufffd"]


def test_a_token_is_validated_and_the_tokens_must_spell_the_reply() -> None:
    assert TokenChoice(text="a", logprob=-0.5).p == pytest.approx(math.exp(-0.5))
    with pytest.raises(ValueError):
        TokenChoice(text="a", logprob=0.5)
    with pytest.raises(ValueError, match="do not join"):
        AssistantResponse(response="Paris", tokens=[TokenChoice(text="Lon", logprob=-1)])


def test_check_logprobs_accepts_0_to_20_and_off() -> None:
    assert [check_logprobs(v) for v in (None, False, 0, 5, 20)] == [None, None, 0, 5, 20]
    for bad in (-1, 21, True, 2.5, "5"):
        with pytest.raises(ConfigurationError, match="logprobs="):
            check_logprobs(bad)
    with pytest.raises(ConfigurationError, match="0 to 20"):
        iModel(provider="scripted", logprobs=21)


def test_the_tokens_delta_round_trips() -> None:
    tokens = [TokenChoice.model_validate(t) for t in TOKENS]
    assert decode_tokens_delta(encode_tokens_delta(tokens)) == tokens


def test_agreement_falls_where_replies_diverge_and_never_rises() -> None:
    assert agreement(["a b c", "a b d", "a x"]) == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert agreement(["same", "same"]) == [1.0]
    assert agreement([]) == []


# -- through a branch --------------------------------------------------------------------------


async def test_scripted_tokens_become_the_reply_tokens_and_stream_as_they_come() -> None:
    branch = Branch(chat_model=scripted({"tokens": TOKENS}, logprobs=2))
    deltas: list[StreamDelta] = []
    branch.subscribe((StreamDelta,), deltas.append)
    assert await branch.communicate("Capital of France?") == "Paris."
    reply = branch.messages[-1]
    assert isinstance(reply, AssistantResponse)
    assert reply.tokens is not None
    assert [(t.text, t.logprob) for t in reply.tokens] == [
        ("Par", -0.1),
        ("is", -0.01),
        (".", -0.7),
    ]
    assert reply.tokens[0].top == [("Par", -0.1), ("Lon", -2.5)]  # cut to K=2, most likely first
    streamed = [d for d in deltas if d.kind == "tokens"]
    assert [(d.token_index, [t.text for t in d.tokens or []]) for d in streamed] == [
        (0, ["Par"]),
        (1, ["is"]),
        (2, ["."]),
    ]
    assert streamed[-1].snapshot == "Paris."
    assert "".join(d.delta for d in deltas if d.kind == "text") == "Paris."


async def test_logprobs_per_call_and_none_when_not_asked() -> None:
    branch = Branch(chat_model=scripted("Hello there", "Hello again"))
    await branch.communicate("hi")
    plain = branch.messages[-1]
    assert isinstance(plain, AssistantResponse) and plain.tokens is None
    assert "tokens" not in MESSAGE_LIST.dump_python([plain], mode="json")[0]
    assert '"tokens"' not in export_json(branch)  # nor in an export
    await branch.communicate("hi", logprobs=0)
    asked = branch.messages[-1]
    assert isinstance(asked, AssistantResponse) and asked.tokens is not None
    assert "".join(t.text for t in asked.tokens) == "Hello again"
    with pytest.raises(ConfigurationError, match="logprobs=25"):
        await branch.communicate("hi", logprobs=25)


async def test_a_provider_without_logprobs_says_so() -> None:
    with pytest.raises(ConfigurationError, match="cannot give log-probabilities"):
        iModel(provider="claude_code", logprobs=5)


async def test_tokens_are_persisted_and_exported() -> None:
    branch = Branch(chat_model=scripted({"tokens": TOKENS}, logprobs=3))
    await branch.communicate("Capital of France?")
    restored = Branch.from_dict(json.loads(json.dumps(branch.to_dict())))
    assert restored.messages[-1] == branch.messages[-1]
    exported = export_json(branch)
    assert "__lion_nb_model__" not in exported  # tokens are plain data, not tagged models
    imported = import_json(exported)
    assert imported.messages[-1] == branch.messages[-1]
    assert imported.messages[-1].tokens[2].top == [(".", -0.7), ("!", -1.2)]  # type: ignore[attr-defined]


async def test_cassette_round_trip_keeps_the_tokens(tmp_path: Path) -> None:
    path = tmp_path / "t.cassette.jsonl"
    branch = Branch(chat_model=scripted({"tokens": TOKENS}, logprobs=3))
    with lion_nb.cassette(path, mode="record"):
        await branch.communicate("Capital of France?")
    recorded = branch.messages[-1]
    again = Branch(chat_model=scripted(logprobs=3))  # no replies: a live call would fail
    deltas: list[StreamDelta] = []
    again.subscribe((StreamDelta,), deltas.append)
    with lion_nb.cassette(path, mode="replay"):
        await again.communicate("Capital of France?")
    replayed = again.messages[-1]
    assert isinstance(replayed, AssistantResponse) and isinstance(recorded, AssistantResponse)
    assert replayed.tokens == recorded.tokens
    assert [d.token_index for d in deltas if d.kind == "tokens"] == [0, 1, 2]


async def test_a_damaged_tokens_entry_is_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / "t.cassette.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted({"tokens": TOKENS}, logprobs=3)).communicate("Q")
    lines = path.read_text(encoding="utf-8").splitlines()
    call = json.loads(lines[1])
    call["response"]["tokens"][1]["logprob"] = 3.0  # a probability above 1
    path.write_text("\n".join([lines[0], json.dumps(call)]) + "\n", encoding="utf-8")
    with pytest.raises(CassetteError, match=r"line 2.*token"):
        lion_nb.cassette(path, mode="replay")


async def test_a_stopped_reply_keeps_the_tokens_that_spell_what_it_streamed() -> None:
    import asyncio

    branch = Branch(chat_model=scripted({"tokens": TOKENS, "delay": 0.01}, logprobs=3))
    task: asyncio.Task[object] | None = None
    seen: list[StreamDelta] = []

    def on_delta(signal: StreamDelta) -> None:
        seen.append(signal)
        if signal.kind == "tokens" and signal.token_index == 1 and task is not None:
            task.cancel()

    branch.subscribe((StreamDelta,), on_delta)
    task = asyncio.ensure_future(branch.communicate("Capital?", on_stop="record"))
    with pytest.raises(asyncio.CancelledError):
        await task
    reply = branch.messages[-1]
    assert isinstance(reply, AssistantResponse) and reply.metadata["stopped"] is True
    assert reply.response == "Paris"
    assert reply.tokens is not None and [t.text for t in reply.tokens] == ["Par", "is"]


async def test_a_cli_agent_asked_for_logprobs_per_call_says_so() -> None:
    branch = Branch(chat_model=iModel(provider="claude_code", cli_path="/nonexistent/claude"))
    with pytest.raises(ConfigurationError, match="cannot give log-probabilities"):
        async for _ in branch.run("hi", logprobs=3):
            pass
