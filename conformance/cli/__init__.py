"""``dmlconf``: each command's module is imported only when that command runs, so reading results stays light.

``main`` parses (the command named, with the options its module lists) and dispatches; ``run`` is ``dmlconf run``,
and ``run_start`` what it checks and makes ready before its first case; ``reports`` is report, diff and merge;
``commands`` is validate and coverage; ``selection`` is list, and the selection run shares; ``fuzz`` is ``dmlconf
fuzz``; ``schema`` prints the case files' JSON Schema; ``shared`` holds the usage error and exit codes; ``progress``
draws the progress line.

May import: anything; nothing imports it.
"""
