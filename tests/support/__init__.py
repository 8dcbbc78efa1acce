"""What the test tiers share: config builders (``support.configs``) and stack rigs (``support.stack``).

Importable from every tier as ``support`` (pytest's ``pythonpath`` holds ``tests``). A
builder here replaces a dict written by hand in each test file: a test names only what it
is about and takes the rest from the defaults. Free ports come from the stack's own
``plowline_devstack.stack.servers.free_port``.
"""
