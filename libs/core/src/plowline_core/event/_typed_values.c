/*
 * The typed atomic texts of an enriched line, in C: see _typed_values.h.
 *
 * Each shape is the regex of ``plowline_core.event.values`` written out by hand, and each
 * conversion is the one the Python reference applies (``str.lower``, ``int``, ``float``,
 * ``iso_timestamps``); tests/unit/core/test_event_line_decoder.py holds them to agree.
 */
#include "_typed_values.h"

#define MAX_DOUBLE 205 /* 200 mantissa characters, "e", a sign and three digits */

static inline int
is_digit(Py_UCS4 c)
{
    return c >= '0' && c <= '9';
}

static inline int
is_hex(Py_UCS4 c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

PyObject *
decode_uuid(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* UUID_SHAPE: 8-4-4-4-12 hex digits; the value is the text in lower case. */
    if (size != 36) {
        return NULL;
    }
    char out[36];
    for (Py_ssize_t i = 0; i < 36; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') {
                return NULL;
            }
        }
        else if (!is_hex(c)) {
            return NULL;
        }
        out[i] = (char)((c >= 'A' && c <= 'F') ? c + ('a' - 'A') : c);
    }
    return PyUnicode_FromStringAndSize(out, 36);
}

static inline int
two_digits(const char *text, int *value)
{
    if (!is_digit((Py_UCS4)text[0]) || !is_digit((Py_UCS4)text[1])) {
        return 0;
    }
    *value = (text[0] - '0') * 10 + (text[1] - '0');
    return 1;
}

static int
days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) {
        return 29;
    }
    return days[month - 1];
}

PyObject *
decode_timestamp(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* TIMESTAMP_SHAPE: "YYYY-MM-DD hh:mm:ss" and maybe ".fff", a real calendar time.
     * The value is ISO 8601 as Instant.toString prints it: T, no ".000", Z. */
    if (size != 19 && size != 23) {
        return NULL;
    }
    char text[24];
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (c > 127) {
            return NULL;
        }
        text[i] = (char)c;
    }
    int century, year_low, month, day, hour, minute, second;
    if (!two_digits(text, &century) || !two_digits(text + 2, &year_low) || text[4] != '-'
        || !two_digits(text + 5, &month) || text[7] != '-' || !two_digits(text + 8, &day)
        || text[10] != ' ' || !two_digits(text + 11, &hour) || text[13] != ':'
        || !two_digits(text + 14, &minute) || text[16] != ':'
        || !two_digits(text + 17, &second)) {
        return NULL;
    }
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(century * 100 + year_low, month)
        || hour > 23 || minute > 59 || second > 59) {
        return NULL;
    }
    Py_ssize_t kept = 19;
    if (size == 23) {
        if (text[19] != '.' || !is_digit((Py_UCS4)text[20]) || !is_digit((Py_UCS4)text[21])
            || !is_digit((Py_UCS4)text[22])) {
            return NULL;
        }
        if (text[20] != '0' || text[21] != '0' || text[22] != '0') {
            kept = 23;
        }
    }
    text[10] = 'T';
    text[kept] = 'Z';
    return PyUnicode_FromStringAndSize(text, kept + 1);
}

PyObject *
decode_int(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* INT_SHAPE then int(): at most nine characters, a sign maybe, then digits only. */
    if (size < 1 || size > 9) {
        return NULL;
    }
    Py_ssize_t i = 0;
    long sign = 1;
    Py_UCS4 first = PyUnicode_READ(kind, data, start);
    if (first == '+' || first == '-') {
        sign = first == '-' ? -1 : 1;
        i = 1;
        if (size == 1) {
            return NULL;
        }
    }
    long number = 0;
    for (; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (!is_digit(c)) {
            return NULL;
        }
        number = number * 10 + (long)(c - '0');
    }
    return PyLong_FromLong(sign * number);
}

PyObject *
decode_double(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* DOUBLE_SHAPE, i.e. [0-9.+-]{1,200} then maybe e/E and (+?[0-9]{1,2} | -[0-9]{1,3}),
     * then float(): it must read the whole text. */
    if (size < 1 || size > MAX_DOUBLE) {
        return NULL;
    }
    char text[MAX_DOUBLE + 1];
    Py_ssize_t mantissa = size;
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (c == 'e' || c == 'E') {
            if (mantissa == size) {
                mantissa = i;
            }
            else {
                return NULL;
            }
        }
        else if (c > 127) {
            return NULL;
        }
        text[i] = (char)c;
    }
    text[size] = '\0';
    if (mantissa < 1 || mantissa > 200) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < mantissa; i++) {
        char c = text[i];
        if (!is_digit((Py_UCS4)c) && c != '.' && c != '+' && c != '-') {
            return NULL;
        }
    }
    if (mantissa < size) {
        Py_ssize_t at = mantissa + 1;
        Py_ssize_t most = 2;
        if (at < size && (text[at] == '+' || text[at] == '-')) {
            most = text[at] == '-' ? 3 : 2;
            at++;
        }
        Py_ssize_t digits = size - at;
        if (digits < 1 || digits > most) {
            return NULL;
        }
        for (; at < size; at++) {
            if (!is_digit((Py_UCS4)text[at])) {
                return NULL;
            }
        }
    }
    char *end = NULL;
    double value = PyOS_string_to_double(text, &end, NULL);
    if (value == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
            return NULL;
        }
        PyErr_Clear();
        return NULL;
    }
    if (end != text + size) {
        return NULL;
    }
    return PyFloat_FromDouble(value);
}

PyObject *
decode_boolean(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    if (size != 1) {
        return NULL;
    }
    Py_UCS4 c = PyUnicode_READ(kind, data, start);
    if (c == '1') {
        Py_RETURN_TRUE;
    }
    if (c == '0') {
        Py_RETURN_FALSE;
    }
    return NULL;
}
