import uuid

import pytest

from lion_nb.compile import cli_prompt, compile_messages
from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
    System,
)


def test_full_history_compiles_without_dropping_anything():
    req = ActionRequest(function="add", arguments={"a": 1}, call_id="c1")
    res = ActionResponse(
        function="add",
        arguments={"a": 1},
        output={"sum": 1},
        call_id="c1",
        action_request_id=req.id,
    )
    out = compile_messages(
        [
            System(system="sys"),
            Instruction(instruction="go"),
            AssistantResponse(response="calling"),
            req,
            res,
            AssistantResponse(response="done"),
        ]
    )
    assert out == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"sum": 1}'},
        {"role": "assistant", "content": "done"},
    ]


def test_request_without_preceding_assistant_and_ids_derived_from_message():
    req = ActionRequest(function="f")
    res = ActionResponse(function="f", output="x", action_request_id=req.id)
    out = compile_messages([Instruction(instruction="i"), req, res])
    call_id = out[1]["tool_calls"][0]["id"]
    assert out[1]["role"] == "assistant" and out[1]["content"] == ""
    assert out[2] == {"role": "tool", "tool_call_id": call_id, "content": "x"}


def test_orphan_response_becomes_a_user_statement():
    res = ActionResponse(function="lookup", arguments={"q": "x"}, output="boom", is_error=True)
    out = compile_messages([res])
    assert out == [{"role": "user", "content": 'Tool lookup({"q": "x"}) failed: boom'}]


def test_images_become_content_parts():
    ins = Instruction(
        instruction="what is this", images=["https://e.x/a.png", "QUJD"], image_detail="low"
    )
    parts = compile_messages([ins])[0]["content"]
    assert parts[0] == {"type": "text", "text": "what is this"}
    assert parts[1]["image_url"] == {"url": "https://e.x/a.png", "detail": "low"}
    assert parts[2]["image_url"]["url"] == "data:image/png;base64,QUJD"


def test_unknown_message_type_is_an_error_not_a_silent_drop():
    class Odd(RoledMessage):
        role: str = "odd"

    with pytest.raises(TypeError, match="no compile rule for Odd"):
        compile_messages([Odd(id=uuid.uuid4())])


def test_cli_prompt_is_the_instruction_text():
    assert cli_prompt(Instruction(instruction="fix it", guidance="tests")) == (
        "fix it\n\nGuidance: tests"
    )
