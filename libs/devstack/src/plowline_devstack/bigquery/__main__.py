"""Entry point: ``python -m plowline_devstack.bigquery``."""

from plowline_devstack.bigquery.launcher import main

if __name__ == "__main__":
    main()
