"""`python -m classifier` runs the CLI."""

import sys

from classifier.cli import main

sys.exit(main())
