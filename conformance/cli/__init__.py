"""``dmlconf``: each command's module is imported only when that command runs, so reading results stays light.

``main`` parses (options from ``run/options.py``) and dispatches; ``run`` is ``dmlconf run``; ``reports`` is report,
diff and merge; ``commands`` is validate and coverage; ``fuzz`` is ``dmlconf fuzz``; ``schema`` prints the case
files' JSON Schema; ``shared`` holds the usage error and exit codes; ``progress`` draws the progress line.

May import: anything; nothing imports it.
"""
