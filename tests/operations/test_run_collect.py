"""run_and_collect(): the CLI Middle (ADR D3, D5)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import ParseError, ServerError
from lion_nb.operations.run import run_and_collect
from lion_nb.operations.types import ChatParam, Middle, ParseParam, RunParam
from lion_nb.port.lifecycle import suppress_lifecycle
from lion_nb.signals import RunEnd
from tests.support.chunk_provider import (
    chunk_model,
    text,
    tool_result,
    tool_use,
    use_chunk_provider,
)
from tests.support.scripted import kinds


class Verdict(BaseModel):
    answer: str
    score: int


@pytest.fixture(autouse=True)
def _chunk_provider(monkeypatch):
    use_chunk_provider(monkeypatch)


def cli(*replies, **kw) -> iModel:
    return iModel(provider="scripted", cli=True, replies=list(replies), **kw)


def test_run_and_collect_satisfies_the_middle_protocol():
    assert isinstance(run_and_collect, Middle)


async def test_joins_non_empty_assistant_texts_with_a_blank_line():
    model = chunk_model(
        [
            text("First."),
            tool_use("t", "Read"),
            tool_result("t", "x"),
            tool_use("u", "Read"),
            tool_result("u", "y"),
            text("Second."),
        ]
    )
    branch = Branch(chat_model=model)
    seen: list = []
    branch.observe(handler=seen.append)
    out = await branch.run_and_collect("go")
    assert out == "First.\n\nSecond."
    assert kinds(seen).count("RunStart") == 1 and isinstance(seen[-1], RunEnd)
    assert seen[-1].result == out


async def test_returns_none_when_no_assistant_text_arrived():
    branch = Branch(chat_model=cli({"text": "", "tool_calls": [{"name": "T", "output": "x"}]}))
    assert await branch.run_and_collect("go") is None
    assert [m.role for m in branch.messages][-1] == "assistant"  # usage still on record


async def test_clear_messages_clears_first_and_keeps_the_system_message():
    branch = Branch(system="sys", chat_model=cli("one", "two"))
    await branch.run_and_collect("a")
    assert await branch.run_and_collect("b", clear_messages=True) == "two"
    assert [m.role for m in branch.messages] == ["system", "user", "assistant"]
    assert branch.messages[1].instruction == "b"


async def test_raw_text_without_a_response_format_or_when_validation_is_skipped():
    reply = '{"answer": "yes", "score": 3}'
    branch = Branch(chat_model=cli(reply, reply))
    assert await branch.run_and_collect("q") == reply
    assert await branch.run_and_collect("q", response_format=Verdict, skip_validation=True) == reply


async def test_structured_reply_on_the_cli_path_parses_once():
    model = cli(Verdict(answer="yes", score=3))
    branch = Branch(chat_model=model)
    out = await branch.run_and_collect("Is it?", response_format=Verdict)
    assert out == Verdict(answer="yes", score=3)
    request = model.provider.requests[0]
    assert request.response_schema == Verdict.model_json_schema()
    assert "JSON schema" in request.prompt and '"score"' in request.prompt  # the agent is told
    assert branch.messages[0].response_schema == Verdict.model_json_schema()


async def test_a_parse_only_format_is_still_put_on_the_instruction():
    model = cli('Sure: {"answer": "no", "score": 1}')
    branch = Branch(chat_model=model)
    out = await run_and_collect(branch, "q", ChatParam(), ParseParam(response_format=Verdict))
    assert out == Verdict(answer="no", score=1)
    assert model.provider.requests[0].response_schema == Verdict.model_json_schema()


async def test_unparseable_reply_raises_parse_error_without_asking_the_cli_agent_again():
    model = cli("no json here at all")
    branch = Branch(chat_model=model)
    with pytest.raises(ParseError) as info:
        await branch.run_and_collect("q", response_format=Verdict)
    assert info.value.raw == "no json here at all"
    assert len(model.provider.requests) == 1  # one CLI turn; no unrecorded repair turns


async def test_a_separate_parse_model_may_repair_the_reply():
    parser = iModel(provider="scripted", replies=['{"answer": "fixed", "score": 2}'])
    branch = Branch(chat_model=cli("answer fixed, score two"), parse_model=parser)
    out = await run_and_collect(
        branch, "q", ChatParam(), ParseParam(response_format=Verdict, max_retries=1)
    )
    assert out == Verdict(answer="fixed", score=2) and len(parser.provider.requests) == 1


async def test_promotes_chat_param_and_passes_run_options_through(tmp_path):
    model = cli("done")
    branch = Branch(chat_model=model)
    out = await branch.run_and_collect(
        "go", stream_persist=True, persist_dir=str(tmp_path), guidance="be brief", max_turns=2
    )
    assert out == "done"
    assert (tmp_path / f"{branch.id}.json").is_file()
    assert not (tmp_path / f"{branch.id}.buffer.jsonl").exists()
    assert model.provider.requests[0].options == {"max_turns": 2}
    assert branch.messages[0].guidance == "be brief"
    promoted = RunParam.from_chat(ChatParam(guidance="g"))
    assert isinstance(promoted, RunParam) and promoted.guidance == "g"


async def test_failure_propagates_with_partial_text_recorded():
    branch = Branch(chat_model=cli({"text": "partial", "error": "server overloaded"}))
    with pytest.raises(ServerError):
        await branch.run_and_collect("q")
    assert branch.messages[-1].response == "partial"


async def test_inside_a_suppressing_wrapper_it_emits_no_lifecycle():
    branch = Branch(chat_model=cli("x"))
    seen: list = []
    branch.observe(handler=seen.append)
    with suppress_lifecycle(branch):
        assert await run_and_collect(branch, "q", ChatParam()) == "x"
    assert kinds(seen) == ["MessageAdded", "MessageAdded"]
