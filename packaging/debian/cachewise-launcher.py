#!/usr/bin/python3 -I
"""cachewise, as installed by the Debian package.

Its private library directory comes first on the path: Textual, Rich, NumPy and Numba at the
versions cachewise is tested with, which Debian 12 does not have. -I keeps PYTHONPATH and the
user's site-packages out, as a tool run as root must.
"""

import sys

sys.path.insert(0, "/usr/lib/cachewise")

from cachewise.cli import main  # noqa: E402

sys.exit(main())
