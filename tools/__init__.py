"""Maintainers' tools, run by path from the repository's root (`.venv/bin/python tools/update_build.py`); a package
so that the tests import the ones they check (`from tools import update_build`)."""
