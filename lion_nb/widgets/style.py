"""The views' stylesheet as an HTML fragment.

Stock ipywidgets have no way to load a stylesheet, so each view carries one small HTML widget
holding ``<style>`` (an HTML widget's value is inserted as markup, and ``<style>`` applies).
The rules are scoped to ``lion-*`` classes, so several views on a page do not interfere. The
file itself is found by ``render.html.lion_css``: ``lion_nb/widgets/static/lion_nb.css`` in an
installed wheel, ``widgets/lion_nb.css`` in a source checkout.
"""

from __future__ import annotations

from lion_nb.render.html import css_style_tag, lion_css

__all__ = ["lion_css", "stylesheet_html"]

# Widget chrome the shared stylesheet does not know about (it also styles exports).
_VIEW_CSS = (
    ".lion-view .widget-html-content{white-space:normal;line-height:1.45;width:100%}"
    ".lion-view .widget-html{width:100%;margin:0}"
    ".lion-view .lion-scroll{border:1px solid var(--lion-border,#d1d9e0);border-radius:6px;"
    "padding:0.4rem}"
    ".lion-view-status{font-size:0.85em;color:var(--lion-fg-muted,#59636e)}"
    ".lion-view-failed,.lion-view-stopped{color:var(--lion-accent-error,#cf222e)}"
    ".lion-pending{opacity:0.8}"
)


def stylesheet_html() -> str:
    """``<style>`` with the shared stylesheet plus the view-only rules."""
    return css_style_tag() + f'<style data-lion-view-css="1">{_VIEW_CSS}</style>'
