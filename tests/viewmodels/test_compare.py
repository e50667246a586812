"""Two branches as data: the shared prefix from lineage, the turns aligned, per-side figures."""

from __future__ import annotations

from datetime import timedelta

from lion_nb import Branch
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.provenance import provenance_of
from lion_nb.viewmodels.compare import align, message_content, shared_prefix, side_stats
from tests.support.forked_pair import forked_pair


async def test_a_fork_is_aligned_on_its_origin() -> None:
    origin, fork = await forked_pair()
    assert shared_prefix(origin, fork) == (3, "fork")
    assert shared_prefix(fork, origin) == (3, "fork")
    al = align(origin, fork)
    assert al.lineage == "fork" and [m.id for m in al.prefix] == list(origin.progression)[:3]
    kinds = [kind for _, _, kind in al.rows]
    assert kinds == ["same", "changed", "added", "added"]  # same question, other answer
    assert al.rows[0][0].text == al.rows[0][1].text == "Population?"
    assert al.rows[2][0] is None and al.rows[2][1].text == "Famous landmark?"
    assert al.differing == 3


async def test_stats_per_side_come_from_usage_and_observed_runs() -> None:
    origin, fork = await forked_pair()
    a = side_stats(origin.messages[3:], origin.messages, provenance_of(origin))
    b = side_stats(fork.messages[3:], fork.messages, provenance_of(fork))
    assert a.usage == {"input_tokens": 40, "output_tokens": 8} and a.turns == 1
    assert b.usage == {"input_tokens": 101, "output_tokens": 13} and b.turns == 2
    assert a.latency_source == b.latency_source == "runs"
    runs = provenance_of(fork).runs
    assert b.latency_ms == sum(r.duration_ms for r in runs) > 0
    assert b.estimated_tokens > a.estimated_tokens > 0


def test_latency_falls_back_to_message_timestamps() -> None:
    branch = Branch()
    ask = Instruction(instruction="q")
    branch.add_message(ask)
    branch.add_message(
        AssistantResponse(response="a", created_at=ask.created_at + timedelta(seconds=1.5))
    )
    stats = side_stats(branch.messages[:], branch.messages)
    assert stats.latency_source == "timestamps" and stats.latency_ms == 1500.0


def test_unrelated_branches_share_only_identical_messages() -> None:
    a, b = Branch(system="S"), Branch(system="S")
    for branch, answer in ((a, "yes"), (b, "no")):
        branch.add_message(Instruction(instruction="same question"))
        branch.add_message(AssistantResponse(response=answer))
    assert shared_prefix(a, b) == (2, "identical")
    assert [kind for _, _, kind in align(a, b).rows] == ["changed"]
    assert shared_prefix(Branch(system="X"), Branch(system="Y")) == (0, "none")


def test_message_content_is_role_and_text() -> None:
    assert message_content(Instruction(instruction="hi")) == ("user", "hi")
