"""How lion_nb's exceptions read in IPython and Jupyter: a few lines for a person.

IPython (so ipykernel, JupyterLab, Notebook, VS Code) shows an exception through its
``_render_traceback_()`` when it has one (``InteractiveShell.showtraceback``: ``hasattr(value,
"_render_traceback_")``) and prints the lines it returns. That is the seam; nothing else is
patched, and plain Python (``python script.py``, ``sys.excepthook``) never looks at it, so
scripts keep their ordinary tracebacks.

* **A lion_nb error** (the ``LionError`` tree) renders as ``block(exc)``: its class and message,
  the fix when the error knows one (``LionError.hint``), the cause in one line ("caused by:
  ConnectionError: …"), the line of the user's own code that raised it (the innermost frame
  outside lion_nb and outside the installed libraries and the standard library: asyncio,
  IPython, ipykernel, nest_asyncio, httpx…) and where the full traceback is.
* **A stop** (Stop, Escape, Kernel -> Interrupt, FlowView's Stop) is an outcome, not a crash:
  the ``CancelledError`` (or ``KeyboardInterrupt``) that ends a lion_nb run gets one line,
  ``"stopped — nothing recorded"`` / ``"stopped — the partial reply is kept"``
  (``mark_stopped``, called where the run ends: ``port/lifecycle.py``, ``Flow.run``).

  The stop stays the very exception asyncio delivered, with a ``_render_traceback_`` attribute
  set on that instance: no new type. A ``Stopped`` subclass of ``CancelledError`` *and*
  ``LionError`` would be an ``Exception``, caught by every ``except Exception`` between the stop
  and the task's edge (retry loops, observers, user code), so a stopped task could end as
  not cancelled; a subclass of ``CancelledError`` alone would change ``ename`` and break code
  that looks for the kernel's ``KeyboardInterrupt``. Marking the instance keeps every
  cancellation semantic exactly (``Task.cancelled()``, ``asyncio.timeout``, ``TaskGroup``,
  ``uncancel``) and changes only what IPython prints.

The full traceback stays one step away: ``%xmode Verbose`` or ``lion_nb.debug()`` (undone by
``%xmode Context`` / ``lion_nb.debug(False)``) make ``_render_traceback_`` absent, so IPython
prints its own. Importing this module imports nothing of IPython: it asks ``sys.modules``.
"""

from __future__ import annotations

import linecache
import sys
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "block",
    "carry_stop",
    "debug",
    "flow_stop_line",
    "full_tracebacks",
    "mark_stopped",
    "stop_line",
    "user_line",
]

_PACKAGE = str(Path(__file__).resolve().parent)
_LIBRARIES = tuple(
    {
        str(Path(p).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
)
_MORE = "(full traceback: %xmode Verbose, or lion_nb.debug())"
_CAUSE_CHARS = 200

_debug = False


def debug(on: bool = True) -> None:
    """Show lion_nb's errors and stops with IPython's full traceback (``on=False``: the short
    block again). ``%xmode Verbose`` does the same for as long as it is set."""
    global _debug
    _debug = bool(on)


def full_tracebacks() -> bool:
    """True when a full traceback is wanted: ``lion_nb.debug()`` or ``%xmode Verbose``."""
    if _debug:
        return True
    shell = _shell()
    mode = getattr(getattr(shell, "InteractiveTB", None), "mode", None)
    return mode == "Verbose"


def renderer(exc: BaseException) -> Callable[[], list[str]]:
    """``exc``'s ``_render_traceback_``; AttributeError (IPython then prints its own full
    traceback) when a full one is wanted."""
    if full_tracebacks():
        raise AttributeError("_render_traceback_")
    return lambda: block(exc)


def block(exc: BaseException) -> list[str]:
    """The few lines that say what happened, what to do and where in the user's code."""
    lines = [f"{_red(type(exc).__name__)}: {exc}"]
    hint = getattr(exc, "hint", None)
    if hint:
        lines.append(f"  fix: {hint}")
    cause = _cause(exc)
    said = str(cause) if cause is not None else ""
    if cause is not None and not (said and said in str(exc)):  # not when the message quotes it
        lines.append(f"  caused by: {_one_line(cause)}")
    where = user_line(exc.__traceback__)
    if where:
        lines.append(f"  at {where}")
    lines.append(f"  {_MORE}")
    return lines


def user_line(tb: TracebackType | None) -> str | None:
    """``"Cell In[3], line 2: await branch.communicate(...)"``: the innermost frame of ``tb``
    in the user's own code (a cell, a script, the user's modules), or None."""
    found = None
    for frame in traceback.extract_tb(tb):
        if _is_users(frame.filename):
            found = frame
    if found is None:
        return None
    where = f"{_label(found.filename)}, line {found.lineno}"
    text = (found.line or linecache.getline(found.filename, found.lineno or 0)).strip()
    return f"{where}: {text}" if text else where


# ----- stops ---------------------------------------------------------------------------------
class StopLine:
    """The ``_render_traceback_`` set on a stop's exception: one line. A plain class, so the
    exception still pickles (Ray) and prints its repr plainly."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self) -> list[str]:
        return [self.text]

    def __repr__(self) -> str:
        return f"StopLine({self.text!r})"


def stop_line(recorded: list[Any]) -> str:
    """What a stopped run kept, from the messages it recorded (oldest first)."""
    if not recorded:
        return "stopped — nothing recorded"
    last = recorded[-1]
    if (getattr(last, "metadata", None) or {}).get("stopped"):
        more = f" ({len(recorded)} messages recorded)" if len(recorded) > 2 else ""
        return f"stopped — the partial reply is kept{more}"
    n = len(recorded)
    return f"stopped — {n} message{'s' if n != 1 else ''} recorded before the stop are kept"


def flow_stop_line(statuses: list[str]) -> str:
    """What a stopped flow kept, from its nodes' statuses: the nodes stopped mid-run keep
    what their verb kept (``on_stop``; a flow's verbs record by default)."""
    counts = {s: statuses.count(s) for s in ("completed", "stopped", "cancelled")}
    parts = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    return f"stopped — nodes: {parts}; each keeps what it recorded" if parts else "stopped"


def mark_stopped(exc: BaseException, line: str) -> None:
    """Make ``exc`` (the ``CancelledError`` or ``KeyboardInterrupt`` ending a lion_nb run)
    print ``line`` alone in IPython. The first mark wins: the innermost run knows best. Not
    while full tracebacks are wanted (``debug()``, ``%xmode Verbose``)."""
    if full_tracebacks() or isinstance(exc.__dict__.get("_render_traceback_"), StopLine):
        return
    try:
        exc._render_traceback_ = StopLine(line)  # type: ignore[attr-defined]  # IPython reads this hook off any exception
    except AttributeError:  # an exception type without a __dict__: its ordinary traceback
        pass


def carry_stop(source: BaseException | None, stop: BaseException) -> None:
    """Give ``stop`` (a ``KeyboardInterrupt`` that ended a blocking wait) the one line of
    ``source`` (the cancellation of the run it waited for), when that has one."""
    line = getattr(source, "__dict__", {}).get("_render_traceback_")
    if isinstance(line, StopLine):
        mark_stopped(stop, line.text)


# ----- helpers -------------------------------------------------------------------------------
def _shell() -> Any:
    """The running IPython shell, only if IPython is imported already (never imported here)."""
    if "IPython" not in sys.modules:
        return None
    get = getattr(sys.modules["IPython"], "get_ipython", None)
    return get() if get is not None else None


def _is_users(filename: str) -> bool:
    if not filename or filename.startswith("<frozen"):
        return False
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return True  # "<ipython-input-…>", "<stdin>": typed by the user
    return not path.startswith(_PACKAGE) and not path.startswith(_LIBRARIES)


def _label(filename: str) -> str:
    """A cell's file as IPython names it ("Cell In[3]"), else the file's path."""
    shell = _shell()
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if name is not None:
        try:
            data = name(filename)
        except Exception:
            data = None
        if data is not None:
            return " ".join(data)
    return filename


def _cause(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > _CAUSE_CHARS:
        text = text[: _CAUSE_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _red(text: str) -> str:
    colors = str(getattr(_shell(), "colors", "nocolor")).lower()
    return text if colors == "nocolor" else f"\x1b[1;31m{text}\x1b[0m"
