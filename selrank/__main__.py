"""``python -m selrank`` runs the command line (:mod:`selrank.cli`)."""

import sys

from .cli import main

sys.exit(main())
