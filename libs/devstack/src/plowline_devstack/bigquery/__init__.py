"""bqemulator 1.4.0 launched in-process, offline, with BigQuery fidelity corrections.

Run ``python -m plowline_devstack.bigquery --host 127.0.0.1 --port P --grpc-port G
--project PROJECT [--data-dir DIR] [--no-corrections | --disable-correction NAME]``.
The corrections are listed in :mod:`plowline_devstack.bigquery.corrections`; the offline
start is in :mod:`plowline_devstack.bigquery.offline`.
"""
