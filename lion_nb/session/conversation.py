"""``Conversation``: a branch and every alternative made from it — regenerate, edit, continue,
clear and ``alternatives(k)`` — the same from code and from a chat view (which only adds the
gestures that call these methods).

    conv = Conversation(branch, verb="communicate", verb_kwargs={"max_tokens": 400})
    await conv.asend("Tell me a story.")
    alt = await conv.aregenerate()          # a new reply to the last instruction, on a fork
    conv.alternatives(2)                    # [branch, alt]: both share messages 0..1
    conv.show(branch)                       # back to the first one

Rules:

* Each turn runs the conversation's verb (a name in ``VERBS``, the verbs' table in
  ``operations/verbs.py``, or ``async def f(branch, text, **kw)``) with ``verb_kwargs``. What
  a stopped turn keeps and how the history is fitted into the window are the verbs' own
  options (``on_stop``, ``fit_context``): a chat view passes ``INTERACTIVE``
  (``on_stop="record"``, ``fit_context=True``); code chooses. Nothing here records a message.
* Regenerate and edit never change an existing branch. They fork (``Branch.fork``, lineage in
  ``metadata["forked_from"]``) before the turn's instruction and run the verb on the fork.
  Regenerate sends the recorded instruction itself (communicate, operate and run take it as
  is), so the fork records the very same message and shares messages ``0..k-1`` with its
  origin; ``forked_from`` then names that instruction. Edit sends the new text as a new turn.
  The fork is shown before its run starts, so a view streams the new reply live.
* Continue asks for the rest of a reply cut off by the token limit; the continuation's
  instruction names the reply (``metadata["continues"]``), which is then no longer offered
  for continuing (``lion_nb.turns``).
* A fork from a token (``afork_at_token``) is one more alternative of the reply it forks:
  it shares the messages before the reply and differs at it.
* ``alternatives(k)``: the branches of this conversation (every branch it showed or made, and
  the session's branches forked from them) that share the shown branch's first ``k`` messages
  and differ at ``k``, one per distinct message at ``k``, ordered by when the first branch of
  each was made; the shown branch stands for its own. Messages are the same when their ids are;
  two instructions are also the same when they say the same (a ReAct turn tried again builds
  its prompt anew).
* A failed regenerate or edit (not a stop) leaves nothing behind: the fork is removed from the
  session (``Session.remove_branch``) and the branch shown before is shown again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse, Instruction, RoledMessage
from lion_nb.operations.verbs import SENDS_HISTORY, TAKES_INSTRUCTION, VERBS, Verb, warm_up
from lion_nb.operations.window import max_tokens_of, plan_context
from lion_nb.samples import Samples, sampling_label
from lion_nb.signals import MessageAdded, Signal
from lion_nb.turns import CONTINUE_PROMPT, continuations, is_truncated, open_truncated

if TYPE_CHECKING:
    from lion_nb.operations.window import ContextPlan
    from lion_nb.session.branch import Branch

__all__ = [
    "CONTINUE_PROMPT",
    "SENDS_HISTORY",
    "TAKES_INSTRUCTION",
    "VERBS",
    "Conversation",
    "Verb",
    "same_message",
    "truncated",
    "warm_up",
]


def truncated(message: RoledMessage) -> bool:
    """A reply that ended because of the token limit (``finish_reason == "length"``)."""
    return is_truncated(message)


def same_message(a: RoledMessage, b: RoledMessage) -> bool:
    """Whether two branches hold the same message here (as ``alternatives`` compares them):
    the same id, or two instructions that say the same."""
    if a.id == b.id:
        return True
    return (
        isinstance(a, Instruction)
        and isinstance(b, Instruction)
        and a.text == b.text
        and a.images == b.images
    )


_same = same_message


class Conversation:
    """The branch shown and every alternative made from it.

    ``verb`` (a name in ``VERBS`` or ``async def f(branch, text, **kw)``) and ``verb_kwargs``
    are what each turn runs; ``on_show(branch)`` is called whenever the shown branch changes."""

    def __init__(
        self,
        branch: Branch,
        *,
        verb: str | Verb = "communicate",
        verb_kwargs: dict[str, Any] | None = None,
        on_show: Callable[[Branch], Any] | None = None,
    ) -> None:
        if isinstance(verb, str) and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; use one of {', '.join(VERBS)}")
        self._branch = branch
        self.verb = verb
        self.verb_kwargs = dict(verb_kwargs or {})
        self.on_show = on_show
        self._family: list[Branch] = [branch]
        self._typed: dict[uuid.UUID, str] = {}  # a turn's first instruction -> the text sent
        self._running = False

    # ----- what is shown --------------------------------------------------------------------
    @property
    def branch(self) -> Branch:
        """The branch shown now."""
        return self._branch

    @property
    def origin(self) -> Branch:
        """The branch this conversation started from."""
        return self._family[0]

    @property
    def running(self) -> bool:
        """A turn started here is running."""
        return self._running

    @property
    def branches(self) -> list[Branch]:
        """Every branch of this conversation, earliest first: those shown or made here, then
        the session's branches forked from any of them."""
        found = list(self._family)
        session = self._branch.session
        if session is None:
            return found
        ids = {str(b.id) for b in found}
        grew = True
        while grew:
            grew = False
            for b in session.branches.values():
                origin = (b.metadata.get("forked_from") or {}).get("branch_id")
                if str(b.id) not in ids and origin in ids:
                    found.append(b)
                    ids.add(str(b.id))
                    grew = True
        return found

    def show(self, branch: Branch) -> Branch:
        """Show ``branch`` (one of ``alternatives(k)``, or any branch: it joins this
        conversation)."""
        if all(b is not branch for b in self._family):
            self._family.append(branch)
        self._branch = branch
        if self.on_show is not None:
            self.on_show(branch)
        return branch

    def alternatives(self, k: int) -> list[Branch]:
        """The branches sharing the shown branch's first ``k`` messages and differing at
        ``k``, earliest first, the shown branch among them."""
        current = list(self._branch.messages)
        if k < 0 or k > len(current):
            raise IndexError(f"no message {k} in the shown branch ({len(current)} messages)")
        prefix = current[:k]
        groups: list[tuple[RoledMessage | None, Branch]] = []
        for b in self.branches:
            messages = list(b.messages)
            if len(messages) < k or not all(map(_same, messages[:k], prefix)):
                continue
            at = messages[k] if len(messages) > k else None
            if at is None and b is not self._branch:
                continue  # a branch ending at k is listed only when it is the one shown
            for n, (seen, _) in enumerate(groups):
                if (seen is None and at is None) or (
                    seen is not None and at is not None and _same(seen, at)
                ):
                    if b is self._branch:
                        groups[n] = (seen, b)
                    break
            else:
                groups.append((at, b))
        return [b for _, b in groups]

    def position(self, k: int) -> tuple[int, int]:
        """``(n, of)`` for the ``‹ n/of ›`` switcher at message ``k``."""
        alts = self.alternatives(k)
        return next(i for i, b in enumerate(alts) if b is self._branch) + 1, len(alts)

    def shown_position(self) -> tuple[int, int, int] | None:
        """Where the shown branch stands among its alternatives: ``(k, n, of)`` of its last
        message ``k`` that has others (the ``‹ n/of ›`` a view draws there: the branch's
        latest fork); None when none has."""
        messages = self._branch.messages
        for k in range(len(messages) - 1, -1, -1):
            if k == 0 and messages[0].role == "system":
                break
            n, of = self.position(k)
            if of > 1:
                return k, n, of
        return None

    def previous_alternative(self, k: int) -> Branch | None:
        """What a comparison sets beside the shown branch: the alternative before it (the
        next one when it is the first); None when there is no other."""
        alts = self.alternatives(k)
        if len(alts) < 2:
            return None
        n = next(i for i, b in enumerate(alts) if b is self._branch)
        return alts[n - 1] if n > 0 else alts[1]

    def truncated(self, index: int) -> bool:
        """Whether message ``index`` of the shown branch is a reply cut off by the token limit
        and not continued yet (a view offers "continue" for it)."""
        message = self._branch.messages[index]
        return message.id in open_truncated(list(self._branch.messages))

    def continuation_of(self, index: int) -> uuid.UUID | None:
        """The id of the instruction that continued reply ``index``, if any."""
        message = self._branch.messages[index]
        return continuations(list(self._branch.messages)).get(str(message.id))

    # ----- the context window ---------------------------------------------------------------
    def plan(
        self, instruction: Instruction | str | None = None, branch: Branch | None = None
    ) -> ContextPlan:
        """What the next turn on the shown branch (or ``branch``) sends with ``instruction``:
        its tokens against the window and, with ``fit_context``, where it is cut."""
        branch = branch or self._branch
        model = self.verb_kwargs.get("chat_model") or branch.chat_model_or_none
        return plan_context(
            list(branch.messages),
            model,
            instruction=instruction,
            max_tokens=max_tokens_of(model, self.verb_kwargs),
            window=self.verb_kwargs.get("context_window"),
        )

    # ----- turns ----------------------------------------------------------------------------
    async def asend(self, text: str) -> Any:
        """One turn of the verb on the shown branch; returns the verb's result."""
        self._check_idle()
        return await self._turn(self._branch, text)

    async def aregenerate(
        self, index: int | None = None, *, temperature: float | None = None
    ) -> Branch:
        """A new reply to the last instruction (or to the turn of the assistant message at
        ``index`` of the shown branch), on a fork that is shown; returns the fork.

        ``temperature``: sample the new reply at that temperature (a model at temperature 0
        gives the same reply to the same messages every time), with a seed of its own (the
        given one, or 0, plus the number of replies the turn has already: each regenerate
        samples anew and replays alike); the fork records both in
        ``metadata["regenerated"]``."""
        self._check_idle()
        messages = list(self._branch.messages)
        if index is None:
            end = len(messages)
        else:
            if not isinstance(messages[index], AssistantResponse):
                raise ValueError(f"message {index} is not an assistant reply")
            end = index % len(messages)
        i = next((j for j in range(end - 1, -1, -1) if isinstance(messages[j], Instruction)), None)
        if i is None:
            raise ValueError("there is no instruction to answer again")
        ins = messages[i]
        assert isinstance(ins, Instruction)
        if temperature is None:
            return await self._on_fork(i, ins)
        sampling: dict[str, Any] = {"temperature": temperature}
        model = self.verb_kwargs.get("chat_model") or self._branch.chat_model_or_none
        if _takes_seed(model):  # OpenAI's Responses API and Anthropic's refuse a seed
            sampling["seed"] = _base_seed(self.verb_kwargs.get("seed")) + (
                len(self.alternatives(i + 1)) if i + 1 < len(messages) else 1
            )
        return await self._on_fork(i, ins, sampling)

    async def aedit(self, index: int, text: str) -> Branch:
        """User message ``index`` rewritten as ``text`` and sent again, on a fork that is
        shown; returns the fork."""
        self._check_idle()
        if not isinstance(self._branch.messages[index], Instruction):
            raise ValueError(f"message {index} is not a user message")
        return await self._on_fork(index % len(self._branch.messages), text)

    async def acontinue(self, index: int | None = None) -> Branch:
        """Ask for the rest of a reply cut off by the token limit and not continued yet
        (default: the last such reply). Continues the shown branch when the reply is its last
        message, else a fork after the reply (shown). Returns the branch continued."""
        self._check_idle()
        messages = list(self._branch.messages)
        offered = open_truncated(messages)
        if index is None:
            index = next(
                (j for j in range(len(messages) - 1, -1, -1) if messages[j].id in offered), -1
            )
        if index < 0 or messages[index].id not in offered:
            if index >= 0 and truncated(messages[index]):
                raise ValueError(f"reply {index} was continued already")
            raise ValueError("there is no reply cut off by the token limit to continue")
        branch = self._branch
        if index != len(messages) - 1:
            branch = self._adopt(branch.fork(at=index))
        ins = Instruction(
            instruction=CONTINUE_PROMPT,
            sender=branch.user or "user",
            recipient=str(branch.id),
            metadata={"continues": str(messages[index].id)},
        )
        await self._turn(branch, ins)
        return branch

    async def afork_at_token(
        self, message: int | uuid.UUID | str, index: int, text: str, **kwargs: Any
    ) -> Branch:
        """A fork whose reply ``message`` (its position in the shown branch, or its id) takes
        ``text`` at token ``index`` and is continued by the model (``Branch.fork_at_token``);
        the fork is shown before the model is asked, so a view streams it, and it joins the
        reply's alternatives (``‹ n/of ›``, Compare). ``kwargs`` are request options; a
        chat view's ``on_stop`` applies. A failure leaves nothing behind."""
        self._check_idle()
        before = self._branch
        if "on_stop" in self.verb_kwargs and "on_stop" not in kwargs:
            kwargs["on_stop"] = self.verb_kwargs["on_stop"]
        made: list[Branch] = []

        def adopt(fork: Branch) -> None:
            made.append(fork)
            self._adopt(fork)

        self._running = True
        try:
            return await before.fork_at_token(message, index, text, on_fork=adopt, **kwargs)
        except asyncio.CancelledError:
            raise
        except BaseException:
            if made:
                self._drop(made[0], before)
            raise
        finally:
            self._running = False

    async def asample(
        self,
        n: int = 5,
        *,
        index: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        **kwargs: Any,
    ) -> Samples:
        """``n`` replies to the last turn (or to the turn of the reply at ``index``), run
        concurrently, each on its own fork of the instruction (like ``aregenerate``), sampled
        with ``temperature`` / ``top_p`` (None: the model's own). Each fork is named by its
        place and settings (``"sample 2/5 · temperature 0.8"``) and is asked with its own
        ``seed`` (the given one, or 0, plus its place: distinct samples that replay alike)
        where the model's API takes one (OpenAI's Responses API and Anthropic's do not), and
        joins the reply's alternatives; the first is shown before the runs start, so a view streams it. Returns
        ``Samples``: the replies and where they agree. ``kwargs`` are more request options
        (``logprobs=K``: the agreement is then counted in tokens). A sample that failed (a
        stream the server cut is a ``ProviderError``, never an empty reply) leaves no fork
        and is counted in ``Samples.errors`` ("2 of 5 failed: ..."); when all fail, the first
        failure is raised."""
        self._check_idle()
        if not 1 <= n <= 20:
            raise ValueError(f"n={n}: sample 1 to 20 replies")
        i, ins = self._turn_of(index)
        options = {**self.verb_kwargs, **kwargs}
        for name, value in (("temperature", temperature), ("top_p", top_p)):
            if value is not None:
                options[name] = value
        label = sampling_label(temperature, top_p)
        before = self._branch
        forks = []
        for j in range(n):
            fork = self._fork_before(before, i)
            fork.name = f"sample {j + 1}/{n} · {label}"
            fork.metadata["sample"] = {"n": j + 1, "of": n, "temperature": temperature}
            fork.metadata["sample"]["top_p"] = top_p
            self._family.append(fork)
            forks.append(fork)
        self.show(forks[0])
        self._running = True
        try:
            base = _base_seed(options.get("seed"))
            seeded = _takes_seed(options.get("chat_model") or before.chat_model_or_none)
            asked = []
            for j, fork in enumerate(forks):  # each its own seed: distinct and reproducible
                if seeded:
                    fork.metadata["sample"]["seed"] = base + j
                asked.append({**options, "seed": base + j} if seeded else options)
            results = await asyncio.gather(
                *(self._sample_one(fork, ins, o) for fork, o in zip(forks, asked, strict=True)),
                return_exceptions=True,
            )
        finally:
            self._running = False
        return self._samples(Samples, forks, results, before, i, temperature, top_p)

    async def _sample_one(self, fork: Branch, ins: Instruction, options: dict[str, Any]) -> Any:
        name = self.verb if isinstance(self.verb, str) else None
        verb = VERBS[name] if name is not None else self.verb
        assert callable(verb)
        return await verb(fork, self._argument(name, ins), **options)

    def _samples(
        self,
        samples: type[Samples],
        forks: list[Branch],
        results: list[Any],
        before: Branch,
        i: int,
        temperature: float | None,
        top_p: float | None,
    ) -> Samples:
        kept, replies, errors = [], [], []
        for fork, result in zip(forks, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException) and len(fork.messages) <= i + 1:
                errors.append(result)
                self._family = [b for b in self._family if b is not fork]
                if fork.session is not None:
                    fork.session.remove_branch(fork)
                continue
            last = fork.messages[-1] if len(fork.messages) > i + 1 else None
            if len(fork.messages) > i:  # names the shared instruction, as a regenerate does
                fork.metadata["forked_from"].update(at=str(fork.messages[i].id), index=i)
            kept.append(fork)
            replies.append(last)
        if not kept:
            self.show(before)
            raise errors[0]
        if self._branch not in kept:
            self.show(kept[0])
        return samples(kept, replies, temperature, top_p, errors, asked=len(forks))

    def _turn_of(self, index: int | None) -> tuple[int, Instruction]:
        """The position and instruction of the last turn, or of the reply at ``index``."""
        messages = list(self._branch.messages)
        end = len(messages) if index is None else index % len(messages)
        if index is not None and not isinstance(messages[end], AssistantResponse):
            raise ValueError(f"message {index} is not an assistant reply")
        i = next((j for j in range(end - 1, -1, -1) if isinstance(messages[j], Instruction)), None)
        if i is None:
            raise ValueError("there is no instruction to answer again")
        ins = messages[i]
        assert isinstance(ins, Instruction)
        return i, ins

    sample = asample  # ``await conversation.sample(n=5, temperature=0.8)``

    def clear(self) -> Branch:
        """Show a fresh branch with the same system message, models and tools (a fork of the
        system message); the old one stays among ``alternatives(1)``. Returns the branch
        shown (the same one when there is nothing to clear)."""
        self._check_idle()
        branch = self._branch
        first = 1 if branch.system is not None else 0
        if len(branch.messages) <= first:
            return branch
        return self._adopt(self._fork_before(branch, first))

    # ----- the machinery --------------------------------------------------------------------
    def _check_idle(self) -> None:
        if self._running:
            raise RuntimeError("a turn of this conversation is running; stop it or wait")

    def _adopt(self, branch: Branch) -> Branch:
        self._family.append(branch)
        return self.show(branch)

    @staticmethod
    def _fork_before(branch: Branch, index: int) -> Branch:
        """A fork holding ``branch``'s messages before ``index``."""
        if index > 0:
            return branch.fork(at=index - 1)
        fork = branch.fork(at=0)
        fork.clear_messages()  # message 0 is not a system message here: nothing is kept
        fork.metadata["forked_from"] = {"branch_id": str(branch.id), "at": None, "index": -1}
        return fork

    async def _on_fork(
        self,
        index: int,
        instruction: Instruction | str,
        sampling: dict[str, Any] | None = None,
    ) -> Branch:
        before = self._branch
        fork = self._fork_before(before, index)
        if sampling:
            fork.metadata["regenerated"] = dict(sampling)
        self._adopt(fork)
        try:
            await self._turn(fork, instruction, sampling)
        except asyncio.CancelledError:
            raise  # stopped: the fork keeps what its verb kept (on_stop)
        except BaseException:
            if len(fork.messages) <= index:
                self._drop(fork, before)
            raise
        if isinstance(instruction, Instruction) and instruction.id in fork.messages.progression:
            at = fork.progression.index(instruction.id)
            fork.metadata["forked_from"].update(at=str(instruction.id), index=at)
        return fork

    def _drop(self, fork: Branch, shown: Branch) -> None:
        self._family = [b for b in self._family if b is not fork]
        if fork.session is not None:
            fork.session.remove_branch(fork)
        self.show(shown)

    def _argument(self, name: str | None, instruction: Instruction | str) -> Any:
        """What the verb is given: a recorded instruction as is when it takes one, else the
        text that was sent for it."""
        if not isinstance(instruction, Instruction) or name in TAKES_INSTRUCTION:
            return instruction
        typed = self._typed.get(instruction.id)
        if typed is not None:
            return typed
        value = instruction.instruction
        return value if isinstance(value, str) else instruction.text

    async def _turn(
        self,
        branch: Branch,
        instruction: Instruction | str,
        options: dict[str, Any] | None = None,
    ) -> Any:
        self._check_idle()
        name = self.verb if isinstance(self.verb, str) else None
        verb = VERBS[name] if name is not None else self.verb
        assert callable(verb)
        argument = self._argument(name, instruction)
        first: list[Instruction] = []

        def note(signal: Signal) -> None:  # the turn's first instruction: what was typed for it
            if isinstance(signal, MessageAdded) and not first:
                if isinstance(signal.message, Instruction):
                    first.append(signal.message)

        unsubscribe = branch.subscribe((MessageAdded,), note)
        self._running = True
        try:
            return await verb(branch, argument, **{**self.verb_kwargs, **(options or {})})
        finally:
            self._running = False
            unsubscribe()
            if first and isinstance(argument, str):
                self._typed[first[0].id] = argument

    def __repr__(self) -> str:
        return f"<Conversation showing {self._branch!r} of {len(self._family)} branches>"


def _base_seed(given: Any) -> int:
    """The seed numbered forks count from: the one given, else 0."""
    return given if isinstance(given, int) and not isinstance(given, bool) else 0


def _takes_seed(model: Any) -> bool:
    """Whether ``model``'s wire API takes a ``seed`` option (its registry entry says; a model
    without an entry, or an entry that passes any option through, is given one)."""
    spec = getattr(model, "spec", None)
    if spec is None:
        return True
    accepted = spec.api(getattr(model, "api", None)).options
    return accepted is None or "seed" in accepted
