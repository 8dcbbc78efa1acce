"""Scripted fakes of Google's side of the clients plowline's sinks call (for tests).

``google_write``: the Storage Write API (``BigQueryWriteClient``'s methods, gRPC);
``google_http``: BigQuery's REST API and Cloud Storage's JSON API (a ``requests``
transport adapter mounted on the official clients' sessions). Both keep a model of the
tables they write to and answer from scripts of faults, so every line of the sinks runs.
"""
