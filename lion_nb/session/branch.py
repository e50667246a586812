"""``Branch``: the public facade of one conversation (ADR-0021 D1).

A branch owns its messages, models, tools, observers and (until a Session includes it) a private
operation registry. Each verb builds frozen parameter objects, imports its implementation inside
the method and delegates; no algorithm lives here. Importing this module loads no operation,
provider, widget or rich module.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, Literal, overload

from lion_nb.port.branch_port import BranchPort
from lion_nb.port.bus import SignalBus
from lion_nb.port.lifecycle import observed_run, observed_stream
from lion_nb.progression import Messages, Progression
from lion_nb.session.manager import OperationManager
from lion_nb.signals import MessageAdded, MessageRetracted, Observers, Signal, StreamDelta

if TYPE_CHECKING:
    from pydantic import BaseModel

    from lion_nb.messages import AssistantResponse, Instruction, RoledMessage, System
    from lion_nb.models.imodel import iModel
    from lion_nb.operations.types import ChatParam, Middle
    from lion_nb.port.tools import ToolRegistry
    from lion_nb.session.session import Session


_RUN_AND_COLLECT_FIELDS = (
    "guidance",
    "context",
    "sender",
    "recipient",
    "images",
    "image_detail",
    "stream_persist",
    "persist_dir",
    "snapshot_dir",
)


class Branch:
    """One conversation: its messages, its models and tools, and the verbs that talk to a model.

    A branch records messages in order (``messages``, ``progression``) and emits signals
    (``observe``) as it does; views, persistence and your own handlers follow those signals.
    Each verb builds its parameters and delegates to its module in ``lion_nb.operations``.
    The verbs differ in what they record and which lifecycle signals they emit, which is why
    there are several:

    | verb | records | lifecycle signals |
    | --- | --- | --- |
    | `chat` | nothing | none (`CallStart`, `StreamDelta`, `CallEnd` for the call) |
    | `chat_and_record` | instruction, response | none (the call's, then `MessageAdded` ×2) |
    | `communicate` | instruction, response | `RunStart` → `RunEnd` / `RunFailed` |
    | `run` (CLI agents) | instruction, then each streamed message | `RunStart` → `RunEnd` / `RunFailed` |
    | `run_and_collect` | as `run` | as `run` |
    | `operate` | its `Middle`'s exchange, plus actions | `RunStart` → `RunEnd` / `RunFailed` |
    | `parse` | nothing | `ParseAttempt` per attempt |
    | `act` | `ActionRequest`, `ActionResponse` per call | none |
    | `interpret` | nothing | none (the call's) |
    | `ReAct`, `ReActStream` | every round's exchange and actions | one run; `RoundStart`/`RoundEnd` per round |
    | `fork_at_token` | a new reply, on a fork | `RunStart` → `RunEnd` / `RunFailed` |

    Args:
        system: The system message (text or a ``System``), recorded first.
        chat_model: The model the verbs use; when None, one is resolved from the environment
            on first use (see ``chat_model``).
        parse_model: The model that repairs a reply that does not parse; defaults to
            ``chat_model``.
        tools: Python functions (sync or async) offered to the model; see ``register_tools``.
        name: A label shown in views and reprs; ``Session.get_branch`` finds a branch by it.
        user: Who the conversation is with (a session's branches default to its user).
        id: The branch's id; a new one when None (``from_dict`` passes the saved one).

    Example:
        ```python
        model = iModel(provider="scripted", replies=["7.", "11."])
        branch = Branch(system="You are terse.", chat_model=model)
        await branch.communicate("Name a prime.")  # "7.", recorded with its instruction
        await branch.chat("And another?")  # "11.", not recorded
        ```
    """

    def __init__(
        self,
        system: str | System | None = None,
        chat_model: iModel | None = None,
        parse_model: iModel | None = None,
        tools: Any = None,
        name: str | None = None,
        user: str | None = None,
        *,
        id: uuid.UUID | None = None,
    ) -> None:
        self.id = id or uuid.uuid4()
        self.name = name
        self.user = user
        self._messages = Messages()
        self._chat_model = chat_model
        self._parse_model = parse_model
        self._tools: ToolRegistry | None = None
        self._observers = Observers()
        self.signals = SignalBus(self._observers)
        """Where this branch's signals go (and on to its session's): emit, drain, observe."""
        self._operation_manager = OperationManager()
        self._session: Session | None = None
        self.context_providers: list[Callable[..., Any]] = []
        self.metadata: dict[str, Any] = {}
        if system is not None:
            if isinstance(system, str):
                # lazy: lion_nb.messages loads pydantic (~90 ms); a branch without a system
                # message, and `import lion_nb`, need neither
                from lion_nb.messages import System

                system = System(system=system)
            self.add_message(system)
        if tools:
            self.register_tools(tools)

    # ----- state --------------------------------------------------------------------------
    @property
    def session(self) -> Session | None:
        """The session that included this branch (its signals go on to the session's)."""
        return self._session

    @session.setter
    def session(self, session: Session | None) -> None:
        self._session = session
        self.signals.upstream = session.signals if session is not None else None

    @property
    def messages(self) -> Messages:
        """The recorded messages in order: iterable, ``len()``-able, indexable by position or id."""
        return self._messages

    @property
    def progression(self) -> Progression:
        """The ids of ``messages`` in order (read it; the branch's verbs change it)."""
        return self._messages.progression

    @property
    def system(self) -> System | None:
        """The system message, when the conversation starts with one, else None."""
        return self._messages.system

    @property
    def chat_model(self) -> iModel:
        """The branch's model; resolved from the environment on first use when none was given."""
        if self._chat_model is None:
            # lazy: the model layer (~17 ms) loads only when a branch needs its model
            from lion_nb.models.imodel import resolve_default_model

            self._chat_model = resolve_default_model()
        return self._chat_model

    @chat_model.setter
    def chat_model(self, model: iModel) -> None:
        self._chat_model = model

    @property
    def chat_model_or_none(self) -> iModel | None:
        """The model given or resolved so far, without resolving one from the environment."""
        return self._chat_model

    @property
    def parse_model(self) -> iModel:
        """The model that repairs replies that do not parse; ``chat_model`` unless one was set."""
        return self._parse_model if self._parse_model is not None else self.chat_model

    @parse_model.setter
    def parse_model(self, model: iModel | None) -> None:
        self._parse_model = model

    @property
    def tools(self) -> ToolRegistry:
        """The tools offered to the model (a ``ToolRegistry``, empty until ``register_tools``)."""
        if self._tools is None:
            # lazy: tools build pydantic models; a branch without tools loads no pydantic
            from lion_nb.port.tools import ToolRegistry

            self._tools = ToolRegistry()
        return self._tools

    def register_tools(self, tools: Any, *, update: bool = False) -> None:
        """Offer Python functions (sync or async) to the model as tools."""
        self.tools.register(tools, update=update)

    def add_message(self, message: RoledMessage) -> RoledMessage:
        """Record ``message`` at the end of the progression and emit ``MessageAdded``."""
        if message.role == "system" and len(self._messages):
            raise ValueError("a system message can only be the first message of a branch")
        self._messages._append(message)
        self.signals.emit(MessageAdded(branch_id=self.id, message=message))
        return message

    def retract_message(self, message_id: uuid.UUID, *, reason: str) -> RoledMessage:
        """Take back a recorded message: it leaves the messages and the progression and
        ``MessageRetracted`` says why. For what turned out not to have happened (a Ray
        attempt whose worker died, run again by Ray); returns the message taken back."""
        message = self._messages.get(message_id)
        if message is None:
            raise ValueError(f"message {message_id} is not recorded on this branch")
        if message.role == "system":
            raise ValueError(f"message {message_id} is the system message; it cannot be retracted")
        self._messages._remove(message_id)
        self.signals.emit(MessageRetracted(branch_id=self.id, message_id=message_id, reason=reason))
        return message

    def restore_message(self, message: RoledMessage) -> None:
        """Put back a message recorded before (a snapshot, an export, a recovered stream):
        appended without ``MessageAdded``, since nothing new happened."""
        self._messages._append(message)

    def clear_messages(self) -> None:
        """Forget the conversation; the system message (if any) stays."""
        self._messages._clear(keep_system=True)

    # ----- observing ----------------------------------------------------------------------
    def observe(self, *signal_types: type[Signal], handler: Callable[[Signal], Any] | None = None):
        """Subscribe ``handler`` (sync or async) to signals of this branch. Works as a call,
        ``branch.observe(RunEnd, handler=fn)``, or a decorator, ``@branch.observe(RunEnd)``.
        With no types, every signal. Returns the handler."""
        return self.signals.observe(*signal_types, handler=handler)

    def unobserve(self, handler: Callable[[Signal], Any]) -> bool:
        """Stop calling ``handler`` (every subscription it has here); False if it had none."""
        return self.signals.unobserve(handler)

    def unobserve_all(self) -> None:
        """Remove every handler added with ``observe``. Subscriptions held by open views
        (``subscribe``) stay: a view detaches itself when it closes."""
        self.signals.unobserve_all()

    def subscribe(
        self, types: tuple[type[Signal], ...], handler: Callable[[Signal], Any]
    ) -> Callable[[], None]:
        """A subscription its holder ends by calling the returned function (what views use);
        ``unobserve_all()`` leaves it in place."""
        return self.signals.subscribe(types, handler)

    def _emit(self, signal: Signal) -> None:
        self.signals.emit(signal)

    async def _drain(self) -> None:
        await self.signals.drain()

    def _observed(self) -> bool:
        """Whether any handler would receive a signal of this branch (checked per token)."""
        return self.signals.observed()

    def streams_watched(self) -> bool:
        """Whether a handler of this branch or of its session receives its ``StreamDelta``
        (a view showing a reply as it is written, an ``observe()`` of every signal). The Ray
        engine relays a node's per-token deltas only while this holds."""
        return self.signals.wants(StreamDelta)

    def port(self) -> BranchPort:
        """What an operation may do with this branch (see ``lion_nb.port.branch_port``)."""
        return BranchPort(self)

    # ----- operations registry (ADR D2) ---------------------------------------------------
    def get_operation(self, operation: str) -> Callable[..., Any] | None:
        """Built-in attributes first; a registered name can never shadow a facade method."""
        if hasattr(self, operation):
            return getattr(self, operation)
        return self._operation_manager.registry.get(operation)

    async def _observed_run(self, operation: str, coro: Any) -> Any:
        """The verbs' one lifecycle mechanism (``port/lifecycle.py``) around ``coro``."""
        return await observed_run(self.port(), operation, coro)

    # ----- verbs --------------------------------------------------------------------------
    def _chat_param(self, **kw: Any) -> ChatParam:
        from lion_nb.operations.types import ChatParam

        return ChatParam(**kw)

    @overload
    async def chat(
        self, instruction: Any = ..., *, return_ins_res_message: Literal[False] = ..., **kwargs: Any
    ) -> str: ...
    @overload
    async def chat(
        self, instruction: Any = ..., *, return_ins_res_message: Literal[True], **kwargs: Any
    ) -> tuple[Instruction, AssistantResponse]: ...

    async def chat(
        self,
        instruction: Instruction | Any = None,
        guidance: Any = None,
        context: Any = None,
        sender: str | None = None,
        recipient: str | None = None,
        request_fields: list[str] | dict[str, Any] | None = None,
        response_format: type[BaseModel] | BaseModel | None = None,
        progression: Progression | list[uuid.UUID] | None = None,
        imodel: iModel | None = None,
        tool_schemas: list[dict] | None = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        plain_content: str | None = None,
        return_ins_res_message: bool = False,
        include_token_usage_to_model: bool = False,
        **kwargs: Any,
    ) -> str | tuple[Instruction, AssistantResponse]:
        """One request to the model, sent with the branch's history; nothing is recorded.

        Records nothing; emits ``CallStart``, ``StreamDelta`` while the reply streams, and
        ``CallEnd``, but no run lifecycle. Use it to ask something on the side of the
        conversation; ``chat_and_record`` or ``communicate`` keep the exchange.

        Args:
            instruction: What to ask (text, an ``Instruction``, or JSON-able data).
            guidance: Extra direction sent with the instruction.
            context: Data the model should consider, sent with the instruction.
            progression: The messages to send as history (ids or a ``Progression``);
                default: the whole branch.
            imodel: The model for this call only; default: ``chat_model``.
            return_ins_res_message: Return the messages the call would have recorded.
            **kwargs: Request options for the provider (``temperature=``, ...), and
                ``fit_context=`` / ``context_window=`` as for ``communicate``.

        Returns:
            The reply text, or the ``(Instruction, AssistantResponse)`` pair with
            ``return_ins_res_message=True``.

        Raises:
            ContextWindowError: The request is known not to fit the model's window (and
                ``fit_context`` was not given).
        """
        from lion_nb.operations.chat import chat

        param = self._chat_param(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            request_fields=request_fields,
            response_format=response_format,
            progression=progression,
            imodel=imodel,
            tool_schemas=tool_schemas,
            tool_choice=kwargs.pop("tool_choice", None),
            images=images,
            image_detail=image_detail,
            plain_content=plain_content,
            include_token_usage_to_model=include_token_usage_to_model,
            fit_context=bool(kwargs.pop("fit_context", False)),
            context_window=kwargs.pop("context_window", None),
            imodel_kw=kwargs or None,
        )
        if return_ins_res_message:
            return await chat(self.port(), instruction, param, return_ins_res_message=True)
        return await chat(self.port(), instruction, param)

    async def chat_and_record(self, instruction: Instruction | Any = None, **kwargs: Any) -> str:
        """``chat``, then record the instruction and the reply; returns the reply text.

        Records the instruction and the response (one ``MessageAdded`` each, after the call's
        ``CallStart``/``CallEnd``); no run lifecycle, so no ``RunEnd`` handler sees it. Takes
        ``chat``'s arguments."""
        kwargs.pop("return_ins_res_message", None)
        ins, res = await self.chat(instruction, return_ins_res_message=True, **kwargs)
        self.add_message(ins)
        self.add_message(res)
        return res.response

    async def communicate(
        self,
        instruction: Instruction | Any = None,
        *,
        guidance: Any = None,
        context: Any = None,
        plain_content: str | None = None,
        sender: str | None = None,
        recipient: str | None = None,
        progression: Any = None,
        response_format: type[BaseModel] | None = None,
        request_fields: dict | list[str] | None = None,
        chat_model: iModel | None = None,
        parse_model: iModel | None = None,
        skip_validation: bool = False,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] | None = None,
        num_parse_retries: int = 3,
        clear_messages: bool = False,
        include_token_usage_to_model: bool = False,
        on_stop: Literal["discard", "record"] = "discard",
        fit_context: bool = False,
        **kwargs: Any,
    ) -> BaseModel | dict | str | None:
        """A recorded exchange: the instruction and the reply, optionally parsed.

        Records the instruction and the response; emits ``RunStart``, then ``RunEnd`` (with
        duration and usage) or ``RunFailed``. This is the verb for a conversation turn.

        Args:
            instruction: What to say (text, an ``Instruction``, or JSON-able data).
            response_format: A pydantic model to parse the reply into (repaired by
                ``parse_model`` up to ``num_parse_retries`` times, at most 5).
            request_fields: Field names (or a name -> default mapping) to read from the reply.
            chat_model: The model for this exchange only; default: ``chat_model``.
            parse_model: The model that repairs a reply that does not parse.
            skip_validation: Return the raw reply text even with ``response_format``.
            clear_messages: Forget the conversation (keeping the system message) first.
            on_stop: What a stopped (cancelled) exchange keeps: nothing (``"discard"``) or
                the instruction and the partial reply marked ``metadata["stopped"] = True``
                (``"record"``, what the chat view passes).
            fit_context: Send the system message and the most recent whole turns that fit
                the model's context window (``context_window=N`` overrides the window for
                this call); the recorded instruction says what was left out.
            **kwargs: Request options for the provider (``temperature=``, ``max_tokens=``, ...).

        Returns:
            The reply text, the parsed ``response_format`` object, or the ``request_fields``
            mapping.

        Raises:
            ContextWindowError: Without ``fit_context``, a request known not to fit the
                window; raised before anything is sent or recorded.
        """
        from lion_nb.operations.communicate import communicate
        from lion_nb.operations.types import ParseParam, check_on_stop

        if num_parse_retries > 5:
            warnings.warn(
                f"num_parse_retries={num_parse_retries} is high; clamped to 5 "
                "(fewer than 3 is recommended)",
                UserWarning,
                stacklevel=2,
            )
            num_parse_retries = 5
        param = self._chat_param(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            response_format=response_format,
            request_fields=request_fields,
            progression=progression,
            imodel=chat_model,
            images=images,
            image_detail=image_detail,
            plain_content=plain_content,
            tool_choice=kwargs.pop("tool_choice", None),
            tool_schemas=kwargs.pop("tool_schemas", None),
            include_token_usage_to_model=include_token_usage_to_model,
            on_stop=check_on_stop(on_stop),
            fit_context=fit_context,
            context_window=kwargs.pop("context_window", None),
            imodel_kw=kwargs or None,
        )
        parse_param = None
        if response_format is not None:
            parse_param = ParseParam(
                response_format=response_format,
                imodel=parse_model,
                max_retries=num_parse_retries,
                handle_validation="raise",
            )
        fields = (
            request_fields
            if isinstance(request_fields, dict) or request_fields is None
            else {f: None for f in request_fields}
        )
        return await self._observed_run(
            "communicate",
            communicate(
                self.port(),
                instruction,
                param,
                parse_param,
                clear_messages=clear_messages,
                skip_validation=skip_validation,
                request_fields=fields,
            ),
        )

    async def parse(
        self,
        text: str,
        response_format: type[BaseModel] | dict | None = None,
        *,
        handle_validation: Literal["raise", "return_value", "return_none"] = "return_value",
        max_retries: int = 3,
        fuzzy_match: bool = True,
        similarity_threshold: float = 0.85,
        parse_model: iModel | None = None,
        request_type: type[BaseModel] | None = None,
    ) -> Any:
        """Turn ``text`` into ``response_format`` without recording anything.

        Tries local extraction first (JSON in the text, fuzzy key matching), then up to
        ``max_retries`` unrecorded repair turns with ``parse_model``. Records nothing;
        emits a ``ParseAttempt`` per attempt.

        Args:
            text: The text to parse (usually a reply).
            response_format: A pydantic model, or a dict describing the wanted keys.
            handle_validation: What a text that never parses gives: raise
                (``"raise"``), the text itself (``"return_value"``), or None
                (``"return_none"``).
            max_retries: How many repair turns to try after local extraction fails.
            fuzzy_match: Match keys that are spelled nearly like the model's fields.
            similarity_threshold: How near a key must be (0 to 1) to match.
            parse_model: The model for the repair turns; default: ``parse_model``.
            request_type: An older name for ``response_format`` (used when that is None).

        Returns:
            The parsed value, or what ``handle_validation`` says for a text that never parses.
        """
        from lion_nb.operations.parse import parse
        from lion_nb.operations.types import ParseParam

        param = ParseParam(
            response_format=response_format or request_type,
            handle_validation=handle_validation,
            max_retries=max_retries,
            fuzzy_match=fuzzy_match,
            similarity_threshold=similarity_threshold,
            imodel=parse_model,
        )
        return await parse(self.port(), text, param)

    async def interpret(
        self,
        text: str,
        domain: str | None = None,
        style: str | None = None,
        *,
        interpret_model: iModel | None = None,
        **kwargs: Any,
    ) -> str:
        """Rewrite a raw request into a clearer prompt for a model (one unrecorded turn).

        Records nothing; emits only the call's ``CallStart``/``CallEnd``. ``domain`` and
        ``style`` are added to the rewriting guidance; returns the rewritten prompt."""
        from lion_nb.operations.interpret import interpret

        param = self._chat_param(imodel=interpret_model, imodel_kw=kwargs or None)
        return await interpret(self.port(), text, param, domain=domain, style=style)

    async def run(
        self,
        instruction: str | Any = "",
        *,
        chat_model: iModel | None = None,
        guidance: Any = None,
        context: Any = None,
        sender: str | None = None,
        recipient: str | None = None,
        images: list | None = None,
        image_detail: Literal["low", "high", "auto"] = "auto",
        stream_persist: bool = False,
        persist_dir: str | None = None,
        snapshot_dir: str | None = None,
        response_format: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[RoledMessage, None]:
        """Stream a CLI agent's turn (Claude Code, Codex, ...) as recorded messages.

        Records and yields the instruction, then assistant text, tool calls and tool results
        as they arrive; emits ``RunStart``, then ``RunEnd`` or ``RunFailed``. Breaking out of
        the loop (or ``await gen.aclose()``) ends the CLI's process group before ``aclose()``
        returns, records the partial text, and is a clean ``RunEnd``. A model given here
        becomes the branch's ``chat_model`` (the one verb that adopts a model).

        Args:
            instruction: What to ask the agent.
            chat_model: A CLI model; default: ``chat_model``.
            stream_persist: Write the stream to disk as it arrives, so ``recover_branch`` can
                rebuild the branch after a crash (``persist_dir``, ``snapshot_dir``: where).
            response_format: A pydantic model the agent is asked to answer in.

        Yields:
            Each recorded message, instruction first.

        Example:
            ```python
            async for message in branch.run("Read hello.txt and say what it says."):
                print(message.role, message.text[:80])
            ```
        """
        from lion_nb.operations.run import run
        from lion_nb.operations.types import RunParam

        param = RunParam(
            guidance=guidance,
            context=context,
            sender=sender,
            recipient=recipient,
            images=images,
            image_detail=image_detail,
            response_format=response_format,
            imodel=chat_model,
            imodel_kw=kwargs or None,
            stream_persist=stream_persist,
            persist_dir=persist_dir,
            snapshot_dir=snapshot_dir,
        )
        stream = run(self.port(), instruction, param)
        try:
            async for message in stream:
                yield message
        finally:  # close the inner stream inside *this* generator's aclose(), not at GC
            await stream.aclose()

    async def run_and_collect(
        self,
        instruction: Any = "",
        *,
        chat_model: iModel | None = None,
        response_format: type[BaseModel] | None = None,
        clear_messages: bool = False,
        skip_validation: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Consume ``run`` and return the joined assistant text (or its parse).

        Records and emits what ``run`` does. With ``response_format`` the joined text is
        parsed into it (unless ``skip_validation``); other keyword arguments go to ``run``."""
        from lion_nb.operations.run import run_and_collect
        from lion_nb.operations.types import ParseParam, RunParam

        # A RunParam is a ChatParam: it carries run()'s own options (persistence) through.
        param = RunParam(
            imodel=chat_model,
            response_format=response_format,
            **{k: kwargs.pop(k) for k in list(kwargs) if k in _RUN_AND_COLLECT_FIELDS},
        )
        parse_param = ParseParam(response_format=response_format) if response_format else None
        if kwargs:
            param = param.with_(imodel_kw=kwargs)
        return await run_and_collect(
            self.port(),
            instruction,
            param,
            parse_param,
            clear_messages=clear_messages,
            skip_validation=skip_validation,
        )

    async def operate(
        self,
        *,
        instruction: Any = None,
        guidance: Any = None,
        context: Any = None,
        chat_model: iModel | None = None,
        parse_model: iModel | None = None,
        response_format: type[BaseModel] | None = None,
        actions: bool = False,
        reason: bool = False,
        tools: Any = None,
        invoke_actions: bool = True,
        skip_validation: bool = False,
        handle_validation: Literal["raise", "return_value", "return_none"] = "return_value",
        middle: Middle | None = None,
        stream_persist: bool = False,
        persist_dir: str | None = None,
        clear_messages: bool = False,
        on_stop: Literal["discard", "record"] = "discard",
        fit_context: bool = False,
        **kwargs: Any,
    ) -> Any:
        """A structured turn with optional tool calls, through one ``Middle`` exchange.

        Records what its ``Middle`` records (``communicate``'s exchange by default, or
        ``run_and_collect``'s for a CLI model) plus an ``ActionRequest``/``ActionResponse``
        per tool call; emits one ``RunStart`` → ``RunEnd`` / ``RunFailed``.

        Args:
            instruction: What to ask.
            response_format: A pydantic model the reply is validated into.
            actions: Let the model request tool calls (the reply schema gains an
                ``action_requests`` field).
            reason: Ask the model for its reasoning too (a ``reason`` field).
            tools: Tools for this turn (names, functions or ``Tool``s; implies ``actions``;
                functions are registered on the branch).
            invoke_actions: Run the requested tools and merge their results into the answer.
            handle_validation: What a reply that never validates gives, as for ``parse``.
            middle: The exchange to use instead of the default (see
                ``lion_nb.operations.types.Middle``).
            on_stop: As for ``communicate``; it reaches the exchange.
            fit_context: As for ``communicate``; it reaches the exchange.

        Returns:
            The reply validated against ``response_format`` (plus ``reason`` and
            ``action_requests`` when asked), with the tools' results in
            ``action_responses``; what ``handle_validation`` says for a reply that never
            validates.
        """
        from lion_nb.operations.operate import operate
        from lion_nb.operations.types import check_on_stop

        return await self._observed_run(
            "operate",
            operate(
                self.port(),
                instruction=instruction,
                guidance=guidance,
                context=context,
                chat_model=chat_model,
                parse_model=parse_model,
                response_format=response_format,
                actions=actions,
                reason=reason,
                tools=tools,
                invoke_actions=invoke_actions,
                skip_validation=skip_validation,
                handle_validation=handle_validation,
                middle=middle,
                stream_persist=stream_persist,
                persist_dir=persist_dir,
                clear_messages=clear_messages,
                on_stop=check_on_stop(on_stop),
                fit_context=fit_context,
                **kwargs,
            ),
        )

    async def act(
        self,
        action_request: Any,
        *,
        strategy: Literal["concurrent", "sequential"] = "concurrent",
        suppress_errors: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Run the tool calls the model asked for.

        Records an ``ActionRequest`` then an ``ActionResponse`` for each call; emits no run
        lifecycle of its own.

        Args:
            action_request: One request or a list of them: an ``ActionRequest``, a
                ``ToolCall``, or a dict such as ``{"function": ..., "arguments": ...}``.
            strategy: Run the calls together (``"concurrent"``: every request is recorded
                first) or one at a time (``"sequential"``: request, call, response).
            suppress_errors: Record an unknown tool, bad arguments or a tool's exception as
                an error response the model can read, instead of raising.
            **kwargs: ``action_timeout=`` (seconds each call may take).

        Returns:
            One ``ActionResponseModel`` per request, in the order given.

        Raises:
            ValueError: Without ``suppress_errors``, an unknown tool or arguments that do not
                fit it, before anything is recorded.
        """
        from lion_nb.operations.act import act

        return await act(
            self.port(),
            action_request,
            strategy=strategy,
            suppress_errors=suppress_errors,
            **kwargs,
        )

    async def ReAct(
        self,
        instruction: Any = None,
        *,
        tools: Any = None,
        response_format: type[BaseModel] | None = None,
        extension_allowed: bool = True,
        max_extensions: int | None = 3,
        return_analysis: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Reason, act and observe over rounds, then answer.

        Records every round's exchange and tool calls; emits one ``RunStart`` → ``RunEnd`` /
        ``RunFailed`` for the whole run and ``RoundStart``/``RoundEnd`` per round.

        Args:
            instruction: The task.
            tools: Tools for the run (default: the branch's).
            response_format: A pydantic model for the final answer.
            extension_allowed: Let the model ask for more rounds.
            max_extensions: How many more rounds it may ask for (capped at 100).
            return_analysis: Return every round's analysis as well as the answer.

        Returns:
            The answer text, the ``response_format`` object, or every round with
            ``return_analysis``; never None.

        Raises:
            ReActError: A round that should have answered did not (no answer, a cut reply, the
                schema echoed back), or a forced tool call was not made. Every round stays
                recorded.
        """
        from lion_nb.operations.react import ReAct

        return await self._observed_run(
            "ReAct",
            ReAct(
                self.port(),
                instruction,
                tools=tools,
                response_format=response_format,
                extension_allowed=extension_allowed,
                max_extensions=max_extensions,
                return_analysis=return_analysis,
                **kwargs,
            ),
        )

    async def ReActStream(
        self,
        instruction: Any = None,
        *,
        tools: Any = None,
        response_format: type[BaseModel] | None = None,
        extension_allowed: bool = True,
        max_extensions: int | None = 3,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Like ``ReAct``, yielding each round's analysis and then the final answer object.

        Records and emits what ``ReAct`` does, with one run lifecycle for the whole stream:
        stopping early is a ``RunEnd(stopped=True)``."""
        from lion_nb.operations.react import ReActStream

        port = self.port()
        stream = observed_stream(
            port,
            "ReActStream",
            ReActStream(
                port,
                instruction,
                tools=tools,
                response_format=response_format,
                extension_allowed=extension_allowed,
                max_extensions=max_extensions,
                **kwargs,
            ),
        )
        try:
            async for item in stream:
                yield item
        finally:  # close the inner stream inside *this* generator's aclose(), not at GC
            await stream.aclose()

    async def fork_at_token(
        self,
        message_id: uuid.UUID | str | int,
        index: int,
        text: str,
        *,
        chat_model: iModel | None = None,
        on_stop: Literal["discard", "record"] = "discard",
        on_fork: Callable[[Branch], Any] | None = None,
        **kwargs: Any,
    ) -> Branch:
        """A fork whose last reply takes ``text`` at token ``index`` of a reply, continued by
        the model; this branch is untouched.

        The fork holds the messages before reply ``message_id`` and a new reply that starts
        with its first ``index`` tokens followed by ``text``. It records that reply on the
        fork and emits ``RunStart`` → ``RunEnd`` / ``RunFailed``. The fork's
        ``metadata["forked_from"]`` names the reply and the token position.

        Args:
            message_id: The reply: its id (a UUID or its string) or its position in ``messages``.
            index: How many of its tokens to keep.
            text: What comes instead of token ``index``.
            on_fork: Called with the fork before the model is asked (a view shows it).
            **kwargs: Request options (``logprobs`` defaults to the reply's own K).

        Returns:
            The fork (in this branch's session, if it has one).

        Raises:
            ConfigurationError: The provider cannot continue a given prefix (see
                ``lion_nb.operations.fork_at_token``).
        """
        from lion_nb.operations.fork_at_token import fork_at_token

        return await fork_at_token(
            self,
            message_id,
            index,
            text,
            chat_model=chat_model,
            on_stop=on_stop,
            on_fork=on_fork,
            **kwargs,
        )

    # ----- copies and snapshots -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild the branch (messages, models' settings); never keys."""
        # lazy: snapshot.py loads lion_nb.messages (pydantic, ~90 ms)
        from lion_nb.session.snapshot import branch_to_dict

        return branch_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> Branch:
        """Rebuild a branch from ``to_dict()``'s output, with its id, name and messages.

        Restoring emits no ``MessageAdded``: nothing new happened. Models are rebuilt from
        their settings with keys from the environment; a scripted model (its replies are
        code, not data) and tools (functions) are not restored: pass ``chat_model=`` and call
        ``register_tools`` again.

        Args:
            data: A dict from ``to_dict()`` (format ``"lion_nb.branch/1"``).
            **overrides: Constructor arguments that replace the saved ones (``chat_model=``,
                ``name=``, ...).

        Raises:
            ValueError: ``data`` names another format.
        """
        # lazy: snapshot.py loads lion_nb.messages (pydantic, ~90 ms)
        from lion_nb.session.snapshot import branch_from_dict

        return branch_from_dict(cls, data, **overrides)

    def fork(self, at: int | uuid.UUID | None = None, *, name: str | None = None) -> Branch:
        """A new branch with this one's messages up to and including ``at`` (an index or a
        message id; default: all), the same models and tools, linked to its origin."""
        # lazy: snapshot.py loads lion_nb.messages (pydantic, ~90 ms)
        from lion_nb.session.snapshot import fork_branch

        return fork_branch(self, at, name=name)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Branch{label} {str(self.id)[:8]} messages={len(self._messages)}>"

    def _repr_html_(self) -> str:
        from lion_nb.render.html import transcript_html

        return transcript_html(list(self._messages), title=self.name)

    def _repr_markdown_(self) -> str:
        from lion_nb.render.text import transcript_markdown

        return transcript_markdown(list(self._messages))

    def __rich__(self) -> Any:
        from lion_nb.render.rich import TranscriptRenderable

        return TranscriptRenderable(list(self._messages), title=self.name)
