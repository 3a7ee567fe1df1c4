"""Investigate by hand: the logic behind ``advisor ops``, ``node``, ``tensor`` and ``diff``.

Pure functions returning dataclasses (each with ``to_dict()`` for ``--json``); the CLI modules in
``advisor/cli`` only parse arguments and render. One module per command, shared helpers in
:mod:`advisor.inspect.common`.
"""
