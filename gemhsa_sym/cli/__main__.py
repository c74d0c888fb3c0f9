"""``python -m gemhsa_sym.cli``: the ``gemhsa-sym`` command."""

from gemhsa_sym.cli import entry

entry()
