"""Incremental parsers of streamed text: ``partial_json.PartialJSON`` (JSON read as it
arrives, reporting each value as it completes) and ``live_parse.LiveParse`` (those values
validated against a pydantic model one at a time). Sans-I/O: no clock, no signals, no HTML."""
