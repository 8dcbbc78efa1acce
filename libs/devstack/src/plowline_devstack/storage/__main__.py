"""Entry point: ``python -m plowline_devstack.storage`` (gcp-storage-emulator's own arguments, plus --faults FILE)."""

from plowline_devstack.storage.launcher import main

if __name__ == "__main__":
    main()
