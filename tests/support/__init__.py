"""What the test tiers share: config builders, free ports (``support.configs``, ``support.net``).

Importable from every tier as ``support`` (pytest's ``pythonpath`` holds ``tests``). A
builder here replaces a dict written by hand in each test file: a test names only what it
is about and takes the rest from the defaults.
"""
