"""Entry point: ``python -m plowline_devstack.storage`` (gcp-storage-emulator's own arguments)."""

from plowline_devstack.storage.preconditions import main

if __name__ == "__main__":
    main()
