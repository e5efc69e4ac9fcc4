"""`python -m server.cli …` is the `ragchat` command."""

import sys

from server.cli import main

sys.exit(main())
