#!/usr/bin/env python3
"""tests/bench-power.py and tests/bench-fork-thread.py (a link to this file): the same as
`./pandemonium.py bench-power` / `bench-fork-thread`, chosen by the name this was run as (issue #7
names both scripts). tests/bench/commands.py says what they measure; --help lists the options.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandemonium  # noqa: E402

if __name__ == "__main__":
    sys.exit(pandemonium.main([Path(sys.argv[0]).stem, *sys.argv[1:]]))
