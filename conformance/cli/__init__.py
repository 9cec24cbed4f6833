"""``dmlconf``: each command's module imported only when that command runs, so that reading results stays light.

May import: anything; nothing imports it.
"""
