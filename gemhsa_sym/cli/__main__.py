"""``python -m gemhsa_sym.cli``: the ``gemhsa-sym`` command."""

import sys

from gemhsa_sym.cli import main

sys.exit(main())
