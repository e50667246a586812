"""operate: one Middle exchange (exactly once), validation, reason/action fields, actions through
act, Middle selection (API / CLI / custom), per-call models, one lifecycle pair."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from lion_nb import Branch
from lion_nb.errors import ParseError
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.models.base import CLIRequest, ModelRequest
from lion_nb.operations.communicate import communicate
from lion_nb.operations.fields import ActionResponseModel
from lion_nb.operations.operate import operate
from lion_nb.operations.types import ChatParam
from tests.support.scripted import RECORDED_EXCHANGE, kinds, recording_branch, scripted


class Answer(BaseModel):
    answer: str
    confidence: float = 0.5


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def roles(branch: Branch) -> list[str]:
    return [m.role for m in branch.messages]


def requests_of(model) -> list:
    return model.provider.requests


async def test_plain_turn_records_once_under_one_lifecycle():
    branch, seen = recording_branch("hello back")
    assert await branch.operate(instruction="hello") == "hello back"
    assert roles(branch) == ["user", "assistant"]
    assert kinds(seen) == ["RunStart", *RECORDED_EXCHANGE, "RunEnd"]
    assert seen[0].operation == "operate" and seen[-1].result == "hello back"


async def test_response_format_gives_a_validated_model():
    branch, _ = recording_branch({"json": {"answer": "42", "confidence": 0.9}})
    out = await branch.operate(instruction="q", response_format=Answer)
    assert out == Answer(answer="42", confidence=0.9)
    ins = branch.messages[0]
    assert ins.response_schema == Answer.model_json_schema()


@pytest.mark.parametrize("handle, expected", [("return_value", "not json"), ("return_none", None)])
async def test_handle_validation_values(handle, expected):
    branch, _ = recording_branch("not json")
    out = await branch.operate(
        instruction="q", response_format=Answer, num_parse_retries=0, handle_validation=handle
    )
    assert out == expected


async def test_handle_validation_raise_is_a_run_failure():
    branch, seen = recording_branch("not json")
    with pytest.raises(ParseError, match="Answer"):
        await branch.operate(
            instruction="q", response_format=Answer, num_parse_retries=0, handle_validation="raise"
        )
    assert kinds(seen)[-1] == "RunFailed" and roles(branch) == ["user", "assistant"]
    with pytest.raises(ValueError, match="handle_validation"):
        await branch.operate(instruction="q", handle_validation="ignore")  # type: ignore[arg-type]


async def test_parse_repair_turns_are_unrecorded_and_clamped():
    branch, seen = recording_branch("I think 42", {"json": {"answer": "42"}})
    out = await branch.operate(instruction="q", response_format=Answer)
    assert out == Answer(answer="42")
    assert roles(branch) == ["user", "assistant"]  # the repair turn is not in the history
    assert [s.ok for s in seen if type(s).__name__ == "ParseAttempt"] == [False, True]
    with pytest.warns(UserWarning, match="clamped to 5"):
        await Branch(chat_model=scripted({"json": {"answer": "1"}})).operate(
            instruction="q", response_format=Answer, num_parse_retries=9
        )


async def test_reason_adds_a_reason_field_and_keeps_the_callers_type():
    reply = {"answer": "yes", "reason": {"title": "t", "content": "because", "confidence_score": 1}}
    branch, _ = recording_branch({"json": reply})
    out = await branch.operate(instruction="q", response_format=Answer, reason=True)
    assert isinstance(out, Answer) and out.answer == "yes"
    assert out.reason.content == "because"
    schema = branch.messages[0].response_schema
    assert "reason" in schema["properties"] and "action_requests" not in schema["properties"]


async def test_structured_action_requests_run_through_act_and_merge_into_the_result():
    reply = {
        "answer": "sum",
        "action_requests": [{"function": "add", "arguments": {"a": 2, "b": 3}}],
    }
    model = scripted({"json": reply})
    branch = Branch(chat_model=model, tools=[add])
    out = await branch.operate(instruction="q", response_format=Answer, actions=True)
    assert isinstance(out, Answer)
    assert out.action_responses == [
        ActionResponseModel(function="add", arguments={"a": 2, "b": 3}, output=5)
    ]
    assert roles(branch) == ["user", "assistant", "action_request", "action_response"]
    request: ModelRequest = requests_of(model)[0]
    assert [t["function"]["name"] for t in request.tools] == ["add"]  # offered natively too
    props = request.response_schema["properties"]
    assert "action_requests" in props and "action_responses" not in props  # response-only


async def test_native_tool_calls_are_executed_without_parse_repair_turns():
    # only one scripted reply: a parse-repair turn would fail with "no reply left"
    model = scripted({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "c1"}]})
    branch = Branch(chat_model=model, tools=[add])
    seen: list = []
    branch.observe(handler=seen.append)
    out = await branch.operate(instruction="q", actions=True)
    assert [r.function for r in out.action_requests] == ["add"]
    assert out.action_responses[0].output == 3 and out.action_responses[0].call_id == "c1"
    assert len(requests_of(model)) == 1 and "ParseAttempt" not in kinds(seen)
    res = branch.messages[1]
    assert isinstance(res, AssistantResponse) and res.metadata["tool_calls"][0]["id"] == "c1"
    req, resp = list(branch.messages)[2:]
    assert req.call_id == resp.call_id == "c1" and req.action_response_id == resp.id


async def test_native_calls_run_even_when_the_callers_schema_cannot_be_filled():
    model = scripted({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]})
    branch = Branch(chat_model=model, tools=[add])
    out = await branch.operate(instruction="q", response_format=Answer, actions=True)
    assert out == ""  # return_value: the raw reply
    assert roles(branch)[2:] == ["action_request", "action_response"]


async def test_native_and_identical_structured_requests_run_once():
    reply = {
        "text": json.dumps(
            {"action_requests": [{"function": "add", "arguments": {"a": 1, "b": 1}}]}
        ),
        "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}, "id": "n1"}],
    }
    branch = Branch(chat_model=scripted(reply), tools=[add])
    out = await branch.operate(instruction="q", actions=True)
    assert len(out.action_requests) == 1 and len(out.action_responses) == 1
    assert roles(branch).count("action_request") == 1


async def test_invoke_actions_false_reports_requests_without_running_them():
    reply = {"action_requests": [{"function": "add", "arguments": {"a": 1, "b": 1}}]}
    branch = Branch(chat_model=scripted({"json": reply}), tools=[add])
    out = await branch.operate(instruction="q", actions=True, invoke_actions=False)
    assert out.action_requests[0].function == "add" and out.action_responses == []
    assert roles(branch) == ["user", "assistant"]


async def test_a_turn_may_declare_its_batch_sequential():
    order: list[str] = []

    async def slow(tag: str) -> str:
        import asyncio

        order.append(f"start {tag}")
        await asyncio.sleep(0.01)
        order.append(f"end {tag}")
        return tag

    class Plan(BaseModel):
        action_strategy: str = "concurrent"

    reply = {
        "action_strategy": "sequential",
        "action_requests": [
            {"function": "slow", "arguments": {"tag": "a"}},
            {"function": "slow", "arguments": {"tag": "b"}},
        ],
    }
    branch = Branch(chat_model=scripted({"json": reply}), tools=[slow])
    await branch.operate(instruction="q", response_format=Plan, actions=True)
    assert order == ["start a", "end a", "start b", "end b"]


async def test_tools_argument_implies_actions_and_registers_functions():
    reply = {"action_requests": [{"function": "add", "arguments": {"a": 4, "b": 4}}]}
    model = scripted({"json": reply})
    branch = Branch(chat_model=model)
    out = await branch.operate(instruction="q", tools=[add])
    assert out.action_responses[0].output == 8 and "add" in branch.tools
    with pytest.raises(ValueError, match="no tool named 'nope'"):
        await branch.operate(instruction="q", tools=["nope"])


async def test_json_schema_response_format_with_actions():
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    reply = {"answer": "x", "action_requests": [{"function": "add", "arguments": {"a": 1, "b": 2}}]}
    branch = Branch(chat_model=scripted({"json": reply}), tools=[add])
    out = await branch.operate(instruction="q", response_format=schema, actions=True)
    assert out["answer"] == "x" and out["action_responses"][0]["output"] == 3


async def test_skip_validation_returns_the_raw_reply_and_runs_nothing():
    reply = {"action_requests": [{"function": "add", "arguments": {"a": 1, "b": 2}}]}
    branch = Branch(chat_model=scripted({"json": reply}), tools=[add])
    out = await branch.operate(instruction="q", actions=True, skip_validation=True)
    assert json.loads(out) == reply and roles(branch) == ["user", "assistant"]


async def test_model_options_and_chat_fields_reach_the_request():
    model = scripted("ok")
    branch = Branch(chat_model=model)
    await branch.operate(
        instruction="q", guidance="g", context={"k": 1}, temperature=0.2, sender="ann"
    )
    request = requests_of(model)[0]
    assert request.options == {"temperature": 0.2}
    ins = branch.messages[0]
    assert (ins.guidance, ins.context, ins.sender) == ("g", [{"k": 1}], "ann")


# ----- the Middle seam -------------------------------------------------------------------
async def test_a_custom_middle_is_called_exactly_once_with_the_protocol_arguments():
    calls: list[tuple] = []

    async def middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        calls.append(
            (branch, instruction, chat_param, parse_param, clear_messages, skip_validation)
        )
        return '{"answer": "from middle"}'

    branch, seen = recording_branch()
    out = await branch.operate(
        instruction="q", response_format=Answer, middle=middle, clear_messages=True
    )
    assert out == Answer(answer="from middle")
    assert len(calls) == 1
    b, ins, param, pparam, clear, skip = calls[0]
    assert b is branch and ins == "q" and isinstance(param, ChatParam)
    assert param.response_format is Answer and pparam is None and clear is True and not skip
    assert len(branch.messages) == 0  # operate recorded nothing around the Middle
    assert kinds(seen) == ["RunStart", "ParseAttempt", "RunEnd"]


async def test_a_middle_with_two_inner_exchanges_is_used_as_is():
    async def two_step(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        draft = await communicate(branch, instruction, chat_param.with_(response_format=None))
        return await communicate(branch, f"Refine as JSON: {draft}", chat_param)

    branch, seen = recording_branch("draft answer", {"json": {"answer": "refined"}})
    out = await branch.operate(instruction="q", response_format=Answer, middle=two_step)
    assert out == Answer(answer="refined")
    assert roles(branch) == ["user", "assistant", "user", "assistant"]  # no duplicates
    assert kinds(seen).count("RunStart") == 1 and kinds(seen)[-1] == "RunEnd"


async def test_api_models_use_communicate_and_cli_models_use_run_and_collect():
    cli = scripted({"json": {"answer": "via cli"}}, cli=True)
    branch = Branch(chat_model=cli)
    seen: list = []
    branch.observe(handler=seen.append)
    out = await branch.operate(instruction="q", response_format=Answer)
    assert out == Answer(answer="via cli")
    assert isinstance(requests_of(cli)[0], CLIRequest)
    assert [k for k in kinds(seen) if k.startswith("Run")] == ["RunStart", "RunEnd"]
    assert seen[0].operation == "operate"


async def test_stream_persist_selects_the_collecting_middle(tmp_path):
    cli = scripted("persisted", cli=True)
    branch = Branch(chat_model=cli)
    assert (
        await branch.operate(instruction="q", stream_persist=True, persist_dir=str(tmp_path))
        == "persisted"
    )
    assert any(tmp_path.rglob("*"))  # the run's snapshot was written
    api = Branch(chat_model=scripted("x"))
    with pytest.raises(ValueError, match="CLI"):  # run() refuses API models, no fallback
        await api.operate(instruction="q", stream_persist=True, persist_dir=str(tmp_path))


@pytest.mark.parametrize("cli", [False, True])
async def test_a_per_call_chat_model_applies_to_that_call_only(cli):
    own = scripted("own")
    other = scripted("other", cli=cli)
    branch = Branch(chat_model=own)
    assert await branch.operate(instruction="q", chat_model=other) == "other"
    assert branch.chat_model is own
    assert await branch.operate(instruction="again") == "own"


async def test_cli_agents_get_tool_schemas_and_unseen_results_in_the_prompt():
    first = {"action_requests": [{"function": "add", "arguments": {"a": 20, "b": 22}}]}
    cli = scripted({"json": first}, "done", cli=True)
    branch = Branch(chat_model=cli, tools=[add])
    await branch.operate(instruction="add them", actions=True)
    prompt1 = requests_of(cli)[0].prompt
    assert '"name": "add"' in prompt1 and "tool_results" not in prompt1
    await branch.operate(instruction="and now?")
    prompt2 = requests_of(cli)[1].prompt
    assert '"tool_results": [{"function": "add"' in prompt2 and '"output": 42' in prompt2


async def test_operations_level_operate_has_no_lifecycle():
    branch, seen = recording_branch("x")
    assert await operate(branch, instruction="q") == "x"
    assert kinds(seen) == list(RECORDED_EXCHANGE)
    assert isinstance(branch.messages[0], Instruction)


async def test_clear_messages_is_done_by_the_middle():
    branch, _ = recording_branch("one", "two")
    await branch.operate(instruction="first")
    await branch.operate(instruction="second", clear_messages=True)
    assert [m.text for m in branch.messages] == ["second", "two"]


async def test_requests_already_answered_in_the_branch_are_not_run_again():
    async def middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        # an adapter that executes the model's native call itself
        branch.add_message(
            AssistantResponse(
                response="",
                metadata={
                    "tool_calls": [{"id": "k1", "name": "add", "arguments": {"a": 1, "b": 1}}]
                },
            )
        )
        branch.add_message(ActionRequest(function="add", arguments={"a": 1, "b": 1}, call_id="k1"))
        branch.add_message(ActionResponse(function="add", output=2, call_id="k1"))
        return ""

    branch = Branch(chat_model=scripted(), tools=[add])
    out = await branch.operate(instruction="q", actions=True, middle=middle)
    # a tool-calling turn: no parse repair (the scripted model has no reply for one)
    assert out.action_requests == [] and out.action_responses == []
    assert roles(branch).count("action_request") == 1
