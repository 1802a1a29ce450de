#!/usr/bin/env python3
"""scx_pandemonium developer tool: build, run, test, install and benchmark the scheduler.

The code is the tools.pandemonium package (the command line: tools/pandemonium/cli.py), found
from here because Python puts this file's directory, the repository root, on sys.path.
"""

import sys

from tools.pandemonium.cli import main

if __name__ == "__main__":
    sys.exit(main())
