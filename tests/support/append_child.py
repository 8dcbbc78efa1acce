"""A Write API client to be killed: AppendRows streams that send large requests until stopped.

Run ``python tests/support/append_child.py GRPC_TARGET TABLE_PATH STREAMS ROWS``: it opens
``STREAMS`` PENDING streams of ``TABLE_PATH`` (``projects/p/datasets/d/tables/t``, columns
``event_id`` STRING, ``n`` INTEGER, ``payload`` STRING), one AppendRows connection each
(the official client, as ``plowline_cloud.write_api`` calls it), and sends requests of
``ROWS`` rows on every connection without end. It prints ``answered STREAM N`` after each
response, so the parent knows the connections are busy before it SIGKILLs or SIGSTOPs it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

from google.cloud.bigquery_storage_v1 import types
from plowline_cloud.write_api import write_client
from plowline_cloud.write_api_proto import RowEncoder
from plowline_core.schema.field import Field, FieldType, Mode

FIELDS = (
    Field("event_id", FieldType.STRING, Mode.REQUIRED),
    Field("n", FieldType.INTEGER),
    Field("payload", FieldType.STRING),
)
_PRINT = threading.Lock()


def _requests(stream: str, encoder: RowEncoder, rows: int) -> Iterator[types.AppendRowsRequest]:
    payload = "x" * 200
    sent = 0
    while True:
        serialized = [
            encoder.encode({"event_id": f"e{sent + i}", "n": sent + i, "payload": payload})
            for i in range(rows)
        ]
        data = types.AppendRowsRequest.ProtoData(rows=types.ProtoRows(serialized_rows=serialized))
        fields: dict[str, object] = {"proto_rows": data}
        if sent == 0:
            data.writer_schema = types.ProtoSchema(proto_descriptor=encoder.descriptor)
            fields["write_stream"] = stream
        sent += rows
        yield types.AppendRowsRequest(**fields)


def _append(client: object, stream: str, rows: int) -> None:
    encoder = RowEncoder(FIELDS)
    routing = (("x-goog-request-params", f"write_stream={stream}"),)
    responses = client.append_rows(  # type: ignore[attr-defined]  # BigQueryWriteClient
        _requests(stream, encoder, rows), retry=None, timeout=600.0, metadata=routing
    )
    for count, _ in enumerate(responses, start=1):
        with _PRINT:
            print(f"answered {stream} {count}", flush=True)


def main(argv: list[str]) -> None:
    """Open the streams and append until killed."""
    target, table, streams, rows = argv[0], argv[1], int(argv[2]), int(argv[3])
    client = write_client(target)
    pending = types.WriteStream(type_=types.WriteStream.Type.PENDING)
    names = [
        client.create_write_stream(parent=table, write_stream=pending, timeout=30.0).name
        for _ in range(streams)
    ]
    workers = [threading.Thread(target=_append, args=(client, name, rows)) for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main(sys.argv[1:])
