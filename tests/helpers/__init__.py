"""Test-only providers and child-process scripts."""
