"""``python -m coursekit.grading``: the course's grading command line."""

import sys

from .cli import main

sys.exit(main())
