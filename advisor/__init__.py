"""The cachewise domain: devices, measurements, analysis, recommendations, history.

Nothing in this package imports the UI (textual); tests/unit/test_import_hygiene.py and the
import-linter contract in pyproject.toml enforce it.
"""
