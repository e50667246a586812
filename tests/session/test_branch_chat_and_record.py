import pytest

from lion_nb.errors import RateLimitError
from lion_nb.messages import AssistantResponse, Instruction
from tests.support.scripted import kinds, recording_branch


async def test_records_instruction_then_response_and_returns_text():
    branch, seen = recording_branch("answer")
    out = await branch.chat_and_record("question", return_ins_res_message=False)
    assert out == "answer"
    ins, res = list(branch.messages)
    assert isinstance(ins, Instruction) and isinstance(res, AssistantResponse)
    # the call is bracketed by CallStart / CallEnd (unrecorded: chat); no RunStart / RunEnd
    assert kinds(seen) == ["CallStart", "CallEnd", "MessageAdded", "MessageAdded"]
    assert [s.message for s in seen if type(s).__name__ == "MessageAdded"] == [ins, res]


async def test_failure_appends_nothing():
    branch, seen = recording_branch(RateLimitError("slow down", retry_after=3))
    with pytest.raises(RateLimitError) as info:
        await branch.chat_and_record("q")
    assert info.value.retry_after == 3
    assert len(branch.messages) == 0 and kinds(seen) == ["CallStart", "CallEnd"]
    assert seen[-1].outcome == "failed" and not seen[-1].recorded
