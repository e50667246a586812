"""``lion_nb.view(value)``: the live view of a value — a branch's chat view, a grid's view.

    lion_nb.view(branch)        # BranchView (a new Branch when None)
    lion_nb.view(grid)          # GridView

A module of its own, not ``chat_view.view``: the grid view opens a cell in a chat view, so
``chat_view`` importing the grid view would make the two a cycle. ``chat_view.view`` stays
what it was (a chat view); the grid module is looked at only when it is loaded (a value
cannot be a ``Grid`` before), and the grid view imported only for a grid.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, overload

from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.chat_view import view as chat_view

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.viewmodels.grid import Grid
    from lion_nb.widgets.grid_view import GridView

__all__ = ["view"]


@overload
def view(branch: Grid, **kwargs: Any) -> GridView: ...


@overload
def view(branch: Branch | None = None, **kwargs: Any) -> BranchView: ...


def view(branch: Any = None, **kwargs: Any) -> Any:
    """The live view of a value: a branch's chat view, or a grid's view.

    Args:
        branch: A ``Branch`` (None: a new one) or a ``lion_nb.Grid``.
        **kwargs: Go to the view: ``BranchView``'s (``verb``, ``height``, ``title``,
            ``verb_kwargs``, ``history``, ``context_window``, ``tokens``) or ``GridView``'s.

    Returns:
        A ``BranchView``, or a ``GridView`` for a grid. The last line of a cell shows it.

    Example:
        ```python
        lion_nb.view(branch)  # type below it, Enter sends, Esc stops
        lion_nb.view(grid)  # then: await grid.run()
        ```
    """
    grids = sys.modules.get("lion_nb.flow.grid")
    if grids is not None and isinstance(branch, grids.Grid):
        # lazy: a chat needs no grid view
        from lion_nb.widgets.grid_view import GridView

        return GridView(branch, **kwargs)
    return chat_view(branch, **kwargs)
