"""The ``irtool`` command line: the one layer that prints and chooses exit codes.

:mod:`.console` is the program's entry (the console script and ``python -m irtool``): it
catches Ctrl-C from the first moment.  :mod:`.program` builds the parser and runs a command,
turning errors into lines and exit codes; each sub-command is a module ``<name>_cmd`` that
parses, calls the library lazily inside its handler (``irtool validate`` never loads
openvino) and renders.  :mod:`.options` and :mod:`.common` hold what several share.

May import every other package of irtool; nothing imports it.  This file imports nothing, so
that the console entry starts with only ``sys`` and ``signal`` loaded.
"""
