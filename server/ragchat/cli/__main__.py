"""`python -m ragchat.cli …` is the `ragchat` command."""

import sys

from ragchat.cli import main

sys.exit(main())
