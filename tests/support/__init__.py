"""Helpers, test doubles and child-process scripts the tests share (map: tests/README.md)."""
