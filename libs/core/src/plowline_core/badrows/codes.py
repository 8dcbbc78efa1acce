"""The closed catalogue of failure codes carried by plowline's bad rows.

Each bad row has exactly one code, derived from its kind and failure; codes are stable
(metrics labels, dead-letter partitions, alerts) and never renamed.

=============================== ======================= =========================================
code                            bad row schema          meaning
=============================== ======================= =========================================
parsing.not_tsv                 loader_parsing_error    the message has no tab at all
parsing.field_number_mismatch   loader_parsing_error    the line has a field count other than 131
parsing.row_decoding            loader_parsing_error    some fields have values the SDK rejects
parsing.invalid_utf8            loader_parsing_error    the message bytes are not valid UTF-8
parsing.compressed_batch        loader_parsing_error    a compressed batch of an unknown format
                                                        version, or corrupt or truncated
iglu.resolution                 loader_iglu_error       a schema could not be fetched or read
iglu.cast                       loader_iglu_error       entity data does not fit its schema's columns
runtime                         loader_runtime_error    an unexpected error while handling a good event
recovery.parsing                loader_recovery_error   the repeater could not read a failed insert
recovery.runtime                loader_recovery_error   the repeater gave up inserting a failed insert
size.row                        size_violation          the message (or a compressed batch's
                                                        record) is over the size limit
=============================== ======================= =========================================
"""

from __future__ import annotations

from enum import StrEnum


class FailureCode(StrEnum):
    """A stable failure code (see the module docstring for the catalogue)."""

    PARSING_NOT_TSV = "parsing.not_tsv"
    PARSING_FIELD_NUMBER_MISMATCH = "parsing.field_number_mismatch"
    PARSING_ROW_DECODING = "parsing.row_decoding"
    PARSING_INVALID_UTF8 = "parsing.invalid_utf8"
    PARSING_COMPRESSED_BATCH = "parsing.compressed_batch"
    IGLU_RESOLUTION = "iglu.resolution"
    IGLU_CAST = "iglu.cast"
    RUNTIME = "runtime"
    RECOVERY_PARSING = "recovery.parsing"
    RECOVERY_RUNTIME = "recovery.runtime"
    SIZE_ROW = "size.row"
