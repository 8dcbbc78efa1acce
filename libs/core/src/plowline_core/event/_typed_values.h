/*
 * The typed atomic texts of an enriched line, in C (see _line_decoder.c).
 *
 * Each decoder reads ``size`` characters at ``start`` of a str's data (``kind``, ``data``
 * as ``PyUnicode_KIND``/``PyUnicode_DATA`` give them) and returns the new value of a text
 * of its kind's shape in ``plowline_core.event.values`` (``*_SHAPE``) as the Python
 * reference converts it; NULL with no exception set for any other text; NULL with an
 * exception only when Python itself fails (no memory).
 */
#ifndef PLOWLINE_TYPED_VALUES_H
#define PLOWLINE_TYPED_VALUES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A canonical UUID, in lower case. */
PyObject *decode_uuid(int kind, const void *data, Py_ssize_t start, Py_ssize_t size);
/* "YYYY-MM-DD hh:mm:ss[.fff]", a real calendar time, as Instant.toString prints it. */
PyObject *decode_timestamp(int kind, const void *data, Py_ssize_t start, Py_ssize_t size);
/* An int32 of at most nine characters. */
PyObject *decode_int(int kind, const void *data, Py_ssize_t start, Py_ssize_t size);
/* A decimal double of at most 200 mantissa characters and exponent 99 (always finite). */
PyObject *decode_double(int kind, const void *data, Py_ssize_t start, Py_ssize_t size);
/* "0" or "1". */
PyObject *decode_boolean(int kind, const void *data, Py_ssize_t start, Py_ssize_t size);

#endif
