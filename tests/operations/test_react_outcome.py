"""ReAct ends in an answer or says why not, never None: an answer round with no answer, or an
analysis round that ignored a forced tool choice, is a ReActError naming the round and what the
model sent; the rounds view shows "no answer: ..." for that round and run."""

from __future__ import annotations

import json

import pytest

from lion_nb import Branch
from lion_nb.errors import OperationError, ReActError
from lion_nb.render.rounds_html import round_head_html, rounds_html
from lion_nb.signals import RoundEnd, RunFailed
from lion_nb.viewmodels.rounds import RoundsModel
from tests.support.scripted import scripted


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def analysis(text: str, *calls: tuple[str, dict]) -> dict:
    reply: dict = {"analysis": text, "extension_needed": False}
    if calls:
        reply["action_requests"] = [{"function": f, "arguments": a} for f, a in calls]
    return {"json": reply}


def watched(branch: Branch) -> tuple[RoundsModel, list]:
    model, seen = RoundsModel(), []

    def handler(signal) -> None:
        seen.append(signal)
        model.on_signal(signal)

    branch.observe(handler=handler)
    return model, seen


@pytest.mark.parametrize(
    "final",
    [
        {"json": {"answer": None}},
        "{",
        '{"answer": ',
        "",
        {"json": {"answer": "   "}},
        "The final answer of a ReAct run.",  # Analysis's docstring echoed back
        {"json": {"description": "The final answer of a ReAct run."}},
        {"json": {"answer": "{"}},  # measured on SmolLM2 under a grammar, as the next two
        {"json": {"answer": "This is a multi-step task. You have room for up to 3 more."}},
        {"json": {"answer": "Your reasoning for this round: what you know. Your task to"}},
    ],
    ids=[
        "null",
        "brace",
        "cut",
        "empty",
        "blank",
        "docstring",
        "schema-echo",
        "brace-answer",
        "prompt-echo",
        "description-echo",
    ],
)
async def test_an_answer_round_without_an_answer_is_a_react_error(final):
    branch = Branch(chat_model=scripted(analysis("thinking", ("add", {"a": 2, "b": 3})), final))
    rounds, seen = watched(branch)
    with pytest.raises(ReActError) as caught:
        await branch.ReAct("What is 2+3?", num_parse_retries=0)
    err = caught.value
    assert isinstance(err, OperationError) and err.round == 2 and err.missing == "answer"
    assert "round 2" in str(err) and "no answer" in str(err)
    assert len(err.sent) <= 160
    # every round stays recorded; the round and the run end with the error
    assert [m.role for m in branch.messages][-2:] == ["user", "assistant"]
    ends = [s for s in seen if isinstance(s, RoundEnd)]
    assert ends[-1].final and ends[-1].error is err
    assert isinstance(seen[-1], RunFailed) and seen[-1].error is err
    answer_round = rounds.all_rounds()[-1]
    assert answer_round.status == "no-answer" and answer_round.error.startswith("no answer: ")
    assert rounds.runs[-1].status == "no-answer"
    head = round_head_html(answer_round)
    assert ">no answer<" in head and ">done<" not in head
    page = rounds_html(rounds)
    assert "no answer: the model sent" in page
    assert ("(no text)" in page) == (final == "")  # an empty reply is shown as one


async def test_the_error_quotes_what_the_model_sent_truncated():
    junk = "{" + "x" * 500
    branch = Branch(chat_model=scripted(analysis("a"), junk))
    with pytest.raises(ReActError) as caught:
        await branch.ReAct("q", num_parse_retries=0)
    assert caught.value.sent.startswith("{xxx") and caught.value.sent.endswith("…")
    assert len(caught.value.sent) == 160 and repr(caught.value.sent) in str(caught.value)


async def test_react_stream_raises_instead_of_yielding_an_empty_answer():
    branch = Branch(chat_model=scripted(analysis("a"), {"json": {"answer": None}}))
    items = []
    with pytest.raises(ReActError):
        async for item in branch.ReActStream("q"):
            items.append(item)
    assert len(items) == 1  # the analysis round, then the error instead of Analysis(None)


@pytest.mark.parametrize(
    "final",
    ["It is 5.", {"json": {"answer": "5"}}, {"json": {"answer": "The sum is 5."}}],
)
async def test_an_answer_is_an_answer_even_short_or_in_plain_words(final):
    branch = Branch(chat_model=scripted(analysis("a"), final))
    assert await branch.ReAct("q", num_parse_retries=0) in ("It is 5.", "5", "The sum is 5.")


async def test_a_callers_response_format_keeps_handle_validation():
    from pydantic import BaseModel

    class Sum(BaseModel):
        total: int

    branch = Branch(chat_model=scripted(analysis("a"), "{"))
    out = await branch.ReAct("q", response_format=Sum, num_parse_retries=0)
    assert out == "{"  # the raw reply, as documented for handle_validation="return_value"


@pytest.mark.parametrize("choice", ["add", "required", {"type": "function", "name": "add"}])
async def test_a_forced_tool_that_was_not_called_is_a_react_error(choice):
    branch = Branch(chat_model=scripted(analysis("no tools for me"), {"json": {"answer": "9"}}))
    rounds, _seen = watched(branch)
    with pytest.raises(ReActError) as caught:
        await branch.ReAct("What is 2+3?", tools=[add], tool_choice=choice)
    assert caught.value.round == 1 and caught.value.missing == "tool call"
    assert "no tool" in str(caught.value) and "no tools for me" in str(caught.value)
    first = rounds.all_rounds()[0]
    assert first.status == "failed" and first.error.startswith("no tool call: ")


async def test_a_forced_tool_that_was_called_answers_and_the_answer_round_gets_no_tool_choice():
    model = scripted(analysis("adding", ("add", {"a": 2, "b": 3})), {"json": {"answer": "5"}})
    branch = Branch(chat_model=model)
    assert await branch.ReAct("2+3?", tools=[add], tool_choice="add", max_extensions=0) == "5"
    sent = model.provider.requests
    assert sent[0].tool_choice == "add" and sent[-1].tool_choice is None


async def test_lionagi_instruct_fills_the_instruction():
    model = scripted(analysis("adding", ("add", {"a": 2, "b": 3})), {"json": {"answer": "5"}})
    branch = Branch(chat_model=model)
    out = await branch.ReAct(
        instruct={"instruction": "What is 2+3? Use the add tool.", "guidance": "Be brief."},
        tools=[add],
        max_extensions=0,
    )
    assert out == "5"
    first = json.dumps(model.provider.requests[0].messages)
    assert "What is 2+3? Use the add tool." in first and "Be brief." in first


async def test_a_malformed_response_format_fails_before_the_first_round():
    model = scripted(analysis("a"), {"json": {"answer": "x"}})
    branch = Branch(chat_model=model)
    with pytest.raises(ValueError, match="not a JSON schema"):
        await branch.ReAct("q", response_format={"type": "json_schema"})
    assert not model.provider.requests and not list(branch.messages)


async def test_a_rounds_view_rebuilt_from_the_messages_says_no_answer_too():
    """The rebuilt view (a saved notebook, a view opened after the run) ends the answer round
    as the live one did: the recorded reply carries what it lacked."""
    final = json.dumps({"answer": None})
    branch = Branch(chat_model=scripted(analysis("thinking", ("add", {"a": 2, "b": 3})), final))
    with pytest.raises(ReActError):
        await branch.ReAct("What is 2+3?", num_parse_retries=0)
    rebuilt = RoundsModel.from_messages(branch.messages)
    last = rebuilt.all_rounds()[-1]
    assert (
        last.status == "no-answer"
        and last.error == "no answer: the model sent '{\"answer\": null}'"
    )
    assert rebuilt.runs[-1].status == "no-answer"
    assert ">no answer<" in round_head_html(last)
    assert [r.status for r in rebuilt.all_rounds()[:-1]] == ["done"]
