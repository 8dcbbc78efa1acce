"""Correction: insertAll refuses a request over BigQuery's size and row limits.

Real BigQuery (``tabledata.insertAll``, the streaming-insert quotas): a request body
over 10 MB is refused with HTTP 413 and nothing is inserted; a request of more than
50,000 rows is refused as ``invalid`` (HTTP 400), nothing inserted. It advises 500 rows
a request; plowline's loader sends up to 2,000 (``plowline_loader.batch.sizes``).

bqemulator 1.4.0 takes any request, however large: a sink that sent more than BigQuery
takes would pass every local test and fail in production.
"""

from __future__ import annotations

from plowline_devstack.bigquery.interception import Correction, Exchange, Reply

MAX_REQUEST_BYTES = 10 * 1024 * 1024
MAX_ROWS = 50_000
_INSERT_ALL = "/bigquery/v2/projects/{project}/datasets/{dataset}/tables/{table}/insertAll"


async def refuse_oversized(exchange: Exchange) -> Reply:
    """Answer 413 over ``MAX_REQUEST_BYTES``, 400 ``invalid`` over ``MAX_ROWS``; else go on."""
    if len(exchange.body) > MAX_REQUEST_BYTES:
        message = (
            f"Request payload size exceeds the limit: {MAX_REQUEST_BYTES} bytes "
            f"(got {len(exchange.body)})."
        )
        error = {"message": message, "domain": "global", "reason": "invalid"}
        body = {"code": 413, "message": message, "errors": [error], "status": "INVALID_ARGUMENT"}
        return Reply.of_json(413, {"error": body})
    # Every row has a "json" key: a body with fewer of them is under the limit, unparsed.
    if exchange.body.count(b'"json"') <= MAX_ROWS:
        return await exchange.forward(exchange.body)
    rows = exchange.json().get("rows")
    if isinstance(rows, list) and len(rows) > MAX_ROWS:
        return Reply.invalid(
            f"too many rows present in the request, limit: {MAX_ROWS} row count: {len(rows)}."
        )
    return await exchange.forward(exchange.body)


INSERT_LIMITS = Correction(
    name="insert-limits",
    summary="insertAll refuses a body over 10 MB (413) and over 50,000 rows (400 invalid)",
    methods=("POST",),
    paths=(_INSERT_ALL,),
    handler=refuse_oversized,
)
