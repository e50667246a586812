"""View models: the state of the notebook views that is not widget state, as plain objects
tested without ipywidgets. Each folds signals (or recorded messages) into what its view shows;
the widgets in ``lion_nb.widgets`` only map that state to widgets, through the HTML of
``lion_nb.render``.

- ``stream.StreamText``: one streamed message part, read from ``StreamDelta.snapshot``
- ``chat.ChatRuns`` / ``chat.RunSlots``: which run a chat view drives, and one driver per branch
- ``transcript.TranscriptModel``: which messages a chat view shows, in what order
- ``rounds.RoundsModel``: ReAct runs -> rounds -> steps
- ``parse.ParseModel``: the reply and parse a parse view follows, its attempts and outcome
- ``parse_tree.tree_rows``: a structured value as rows
- ``timeline``: the inspector's pages, rows and totals
- ``compare``: two branches aligned, with per-side figures
- ``flow.FlowViewModel``: a flow's rows, totals and the open node's transcript (``FlowView``)
"""
