"""The Spark operator's main application file: run ``plowline-loader`` with the app's arguments.

``spark-submit`` runs a Python file, not a console script; this file is that file
(``local:///opt/plowline/driver.py`` in the SparkApplication), so the driver runs exactly
what ``plowline-loader ARGS`` runs anywhere else.
"""

from __future__ import annotations

import sys

from plowline_loader.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
