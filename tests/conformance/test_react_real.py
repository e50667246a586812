"""ReAct with one tool on servers whose model declares no tool support: llama.cpp's
``llama-server --jinja`` on SmolLM2 (it ignores ``tools``/``tool_choice``) and the embedded model.
lion_nb asks for its own JSON action requests, constrained by the schema, so over several seeds
every run calls ``add`` and ends in an answer or a ``ReActError`` — never ``None`` — and no
``UnboundedSchemaWarning`` about lion_nb's own schemas is raised (warnings are errors here)."""

from __future__ import annotations

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ReActError
from lion_nb.models import capabilities

pytestmark = [pytest.mark.slow, pytest.mark.local_model]

SEEDS = range(1, 6)
INSTRUCT = {"instruction": "What is 2+3? Use the add tool."}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def taught():
    """Servers this test taught that they ignore native tools (forgotten afterwards)."""
    urls: list[str] = []
    yield urls
    for url in urls:
        capabilities.forget(url)


async def ignoring_tools(model: iModel, taught: list[str]) -> iModel:
    """``model``, known to ignore native tools: what the server probe says, or (before the
    probe knows this server) remembered for its ``base_url`` here."""
    if (await model.capabilities()).native_tools is None:
        url = model.base_url or ""  # the embedded model has none
        capabilities.remember(url, native_tools=False)
        taught.append(url)
    assert (await model.capabilities()).native_tools is False
    return model


async def one_run(model: iModel) -> tuple[str, bool]:
    """``(outcome, called add)``: outcome "answer" or "ReActError"; never None."""
    branch = Branch(chat_model=model)
    try:
        out = await branch.ReAct(instruct=INSTRUCT, tools=[add], max_extensions=1)
    except ReActError as exc:
        assert exc.round >= 1 and str(exc)
        outcome = "ReActError"
    else:
        assert isinstance(out, str) and out.strip(), f"ReAct returned {out!r}"
        outcome = "answer"
    called = [m for m in branch.messages if m.role == "action_response" and m.function == "add"]
    assert all(m.output == m.arguments["a"] + m.arguments["b"] for m in called)
    return outcome, bool(called)


def check(results: list[tuple[str, bool]]) -> None:
    assert all(called for _, called in results), results  # the schema makes round 1 call add
    assert sum(outcome == "answer" for outcome, _ in results) >= len(results) // 2, results


@pytest.mark.real_server
async def test_react_on_llama_server_calls_the_tool_and_answers(llama_server_1, taught):
    results = []
    for seed in SEEDS:
        model = iModel(
            provider="openai",
            model="smollm2",
            base_url=llama_server_1.v1,
            temperature=0.7,
            seed=seed,
            max_tokens=256,
        )
        results.append(await one_run(await ignoring_tools(model, taught)))
    check(results)


async def test_react_on_the_embedded_model_calls_the_tool_and_answers(taught):
    results = []
    for seed in SEEDS:
        model = iModel(provider="local", temperature=0.7, seed=seed, max_tokens=256)
        results.append(await one_run(await ignoring_tools(model, taught)))
    check(results)
