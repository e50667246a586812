"""``Session``: a set of branches sharing one named-operation registry and observers (ADR D2)."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

from lion_nb.port.bus import SignalBus
from lion_nb.session.branch import Branch
from lion_nb.session.manager import OperationManager
from lion_nb.signals import Observers, Signal


class Session:
    """A set of branches that share one registry of named operations and one set of observers.

    Use a session when a notebook holds more than one conversation: forks of a branch,
    alternatives, a fan-out with ``map``. Its branches reach your ``session.observe(...)``
    handlers with every signal they emit, and an operation registered once
    (``register_operation``, ``@session.operation()``) can be run on any of them by name,
    from a cell (``run_operation``) or from a flow's ``Operation`` node. A facade verb always
    wins over a registered name, so a registration never changes what ``communicate`` means.

    Args:
        name: A label for reprs.
        user: The user new and included branches get when they name none.
        default_branch: A branch to include at once; it becomes the default.

    Example:
        ```python
        session = Session()
        branch = session.new_branch(system="You are terse.", name="main")

        @session.operation()
        async def summarize(branch, text):
            return await branch.communicate(f"Summarize: {text}")

        await session.run_operation("summarize", branch="main", text="...")
        ```
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        user: str | None = None,
        default_branch: Branch | None = None,
    ) -> None:
        self.id = uuid.uuid4()
        self.name = name
        self.user = user
        self.branches: dict[uuid.UUID, Branch] = {}
        self.default_branch: Branch | None = None
        self._operation_manager = OperationManager()
        self._observers = Observers()
        self.signals = SignalBus(self._observers)
        """The session's handlers: every included branch's signals reach them."""
        if default_branch is not None:
            self.include_branches(default_branch)

    # ----- branches -----------------------------------------------------------------------
    def include_branches(self, *branches: Branch) -> None:
        """Adopt branches: they share this session's registry and reach its observers. The
        first included branch becomes the default when there is none."""
        for branch in branches:
            if isinstance(branch, list | tuple):
                self.include_branches(*branch)
                continue
            if branch.session is not None and branch.session is not self:
                raise ValueError(f"{branch!r} already belongs to another session")
            branch.session = self
            if branch.user is None:
                branch.user = self.user
            branch._operation_manager = self._operation_manager
            self.branches[branch.id] = branch
            if self.default_branch is None:
                self.default_branch = branch

    def new_branch(
        self,
        system: Any = None,
        chat_model: Any = None,
        parse_model: Any = None,
        tools: Any = None,
        name: str | None = None,
        *,
        as_default: bool = False,
        **kwargs: Any,
    ) -> Branch:
        """Make a ``Branch`` with these arguments and include it in the session.

        The branch's ``user`` defaults to the session's. ``as_default=True`` makes it the
        default branch even when there is one already (the first branch is the default
        anyway). Other keyword arguments go to ``Branch``. Returns the branch."""
        branch = Branch(
            system=system,
            chat_model=chat_model,
            parse_model=parse_model,
            tools=tools,
            name=name,
            user=kwargs.pop("user", self.user),
            **kwargs,
        )
        self.include_branches(branch)
        if as_default:
            self.default_branch = branch
        return branch

    def get_branch(self, ref: Branch | uuid.UUID | str | None = None) -> Branch:
        """By object, id (UUID or its string) or name; None -> the default branch."""
        if ref is None:
            if self.default_branch is None:
                raise ValueError("the session has no branches")
            return self.default_branch
        if isinstance(ref, Branch):
            if ref.id not in self.branches:
                raise ValueError(f"{ref!r} is not in this session")
            return ref
        if isinstance(ref, uuid.UUID):
            if ref in self.branches:
                return self.branches[ref]
            raise ValueError(f"no branch with id {ref}")
        try:
            as_id = uuid.UUID(ref)
        except ValueError:
            as_id = None
        if as_id is not None and as_id in self.branches:
            return self.branches[as_id]
        named = [b for b in self.branches.values() if b.name == ref]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise ValueError(f"{len(named)} branches are named {ref!r}; use the id")
        raise ValueError(f"no branch named or identified by {ref!r}")

    def remove_branch(self, branch: Branch | uuid.UUID | str) -> Branch:
        """Take a branch out of the session (a fork whose turn failed): it leaves
        ``branches``, stops reaching the session's observers and gets a registry of its own
        (a copy: what it could call stays callable). The default moves to another branch.
        Returns the branch."""
        found = self.get_branch(branch)
        del self.branches[found.id]
        found.session = None
        own = type(self._operation_manager)()
        own.registry.update(self._operation_manager.registry)
        found._operation_manager = own
        if self.default_branch is found:
            self.default_branch = next(iter(self.branches.values()), None)
        return found

    def fork(
        self,
        branch: Branch | uuid.UUID | str,
        at: int | uuid.UUID | None = None,
        *,
        name: str | None = None,
    ) -> Branch:
        """``Branch.fork`` of one of the session's branches (by object, id or name); the fork
        is included in the session."""
        return self.get_branch(branch).fork(at, name=name)

    # ----- named operations ---------------------------------------------------------------
    def register_operation(
        self, operation: str, func: Callable[..., Any], *, update: bool = False
    ) -> None:
        """Give ``func`` a name every branch of the session can run (``run_operation``, a
        flow's ``Operation`` node). ``func`` is an ``async def`` that receives ``branch=``
        plus the call's keyword arguments. A facade verb of the same name still wins.

        Raises:
            ValueError: The name is empty or already registered (pass ``update=True`` to
                replace it), or ``func`` is not asynchronous (it is not wrapped).
        """
        self._operation_manager.register(operation, func, update=update)

    def operation(self, name: str | None = None, *, update: bool = False):
        """Decorator: ``@session.operation()`` registers ``func.__name__``."""

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            self.register_operation(name or func.__name__, func, update=update)
            return func

        return decorator

    def get_operation(self, operation: str) -> Callable[..., Any] | None:
        """What ``operation`` names for the branches of this session (ADR D2): a facade verb
        first (returned unbound, ``Branch.<verb>``), else the registered function; None when
        it is neither. Lets a graph reject an unknown name before any branch exists."""
        if hasattr(Branch, operation):
            return getattr(Branch, operation)
        return self._operation_manager.registry.get(operation)

    async def run_operation(
        self, operation: str, *, branch: Branch | uuid.UUID | str | None = None, **kwargs: Any
    ) -> Any:
        """Resolve ``operation`` on a branch (built-ins first) and await it. Registered
        operations receive ``branch=`` plus the keyword arguments. A streaming verb
        (run, ReActStream) is drained into a list."""
        target = self.get_branch(branch)
        func = target.get_operation(operation)
        if func is None:
            raise ValueError(f"Unknown operation: {operation}")
        return await call_operation(target, operation, func, kwargs)

    async def map(
        self,
        operation: str,
        inputs: Any,
        *,
        template: Branch | None = None,
        max_concurrent: int = 16,
        engine: str = "local",
        return_nodes: bool = False,
        ray_options: dict[str, Any] | None = None,
    ) -> list[Any]:
        """Run ``operation`` once per input (a mapping of its arguments), each on its own fork
        of ``template`` (or a new branch), at most ``max_concurrent`` at once, in this kernel
        (``engine="local"``) or on Ray (``"ray"``). Responses come back in input order,
        ``None`` where a node failed; ``return_nodes=True`` gives the ``Operation`` nodes."""
        from lion_nb.flow.mapping import map_operation

        return await map_operation(
            self,
            operation,
            inputs,
            template=template,
            max_concurrent=max_concurrent,
            engine=engine,
            return_nodes=return_nodes,
            ray_options=ray_options,
        )

    # ----- observing ----------------------------------------------------------------------
    def observe(self, *signal_types: type[Signal], handler: Callable[[Signal], Any] | None = None):
        """Like ``Branch.observe``, for every branch in the session."""
        return self.signals.observe(*signal_types, handler=handler)

    def unobserve(self, handler: Callable[[Signal], Any]) -> bool:
        """Stop calling ``handler``; False if it was not observing this session."""
        return self.signals.unobserve(handler)

    def unobserve_all(self) -> None:
        """Remove every ``observe`` handler; subscriptions held by open views stay."""
        self.signals.unobserve_all()

    def subscribe(
        self, types: tuple[type[Signal], ...], handler: Callable[[Signal], Any]
    ) -> Callable[[], None]:
        """A held subscription (see ``Branch.subscribe``); call the result to end it."""
        return self.signals.subscribe(types, handler)

    def __repr__(self) -> str:
        return f"<Session {self.name or str(self.id)[:8]} branches={len(self.branches)}>"


async def call_operation(
    branch: Branch, name: str, func: Callable[..., Any], kwargs: dict[str, Any]
) -> Any:
    """Shared by ``Session.run_operation`` and ``Operation.execute`` (one lookup, one call
    convention): facade methods are bound; registered functions get ``branch=``."""
    if getattr(func, "__self__", None) is not branch:
        kwargs = {"branch": branch, **kwargs}
    result = func(**kwargs)
    if inspect.isasyncgen(result):
        items = []
        try:
            async for item in result:
                items.append(item)
        finally:
            await result.aclose()
        return items
    return await result
