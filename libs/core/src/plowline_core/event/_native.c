/*
 * plowline_core.event._native: decode the atomic values of an enriched TSV line in one pass.
 *
 * ``LineDecoder(fields).decode(line)`` answers exactly as the pure-Python reference
 * ``plowline_core.event.atomic.decode_valid_line`` does: the line's atomic values by field
 * name (TSV order, empty fields omitted) and the texts of its entity fields, or None when
 * the line needs the parser's closer look (another field count, an empty required field,
 * a typed text outside the shapes of ``plowline_core.event.values``).
 *
 * The field table is data handed in by Python (``fields.ENRICHED_FIELDS``); nothing here
 * knows a field by name. Pure: no I/O, no global state, never raises on any ``str``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Kind codes: the order of ``atomic.NATIVE_KINDS``. */
enum {
    KIND_STRING = 0,
    KIND_UUID = 1,
    KIND_TIMESTAMP = 2,
    KIND_INT = 3,
    KIND_DOUBLE = 4,
    KIND_BOOLEAN = 5,
    KIND_ENTITY = 6,
    KIND_COUNT = 7,
};

#define MAX_FIELDS 256
#define MAX_DOUBLE 205 /* 200 mantissa characters, "e", a sign and three digits */
#define INVALID ((PyObject *)&invalid_marker)

static int invalid_marker;

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;
    Py_ssize_t entity_count;
    PyObject *names[MAX_FIELDS]; /* interned; NULL at entity positions */
    unsigned char kinds[MAX_FIELDS];
    unsigned char required[MAX_FIELDS];
} LineDecoder;

/* ---- one typed text: a new value, INVALID when out of shape, NULL on a Python error ---- */

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

static PyObject *
decode_uuid(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* UUID_SHAPE: 8-4-4-4-12 hex digits; the value is the text in lower case. */
    if (size != 36) {
        return INVALID;
    }
    char out[36];
    for (Py_ssize_t i = 0; i < 36; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') {
                return INVALID;
            }
        }
        else if (!is_hex(c)) {
            return INVALID;
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

static PyObject *
decode_timestamp(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* TIMESTAMP_SHAPE: "YYYY-MM-DD hh:mm:ss" and maybe ".fff", a real calendar time.
     * The value is ISO 8601 as Instant.toString prints it: T, no ".000", Z. */
    if (size != 19 && size != 23) {
        return INVALID;
    }
    char text[24];
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (c > 127) {
            return INVALID;
        }
        text[i] = (char)c;
    }
    int century, year_low, month, day, hour, minute, second;
    if (!two_digits(text, &century) || !two_digits(text + 2, &year_low) || text[4] != '-'
        || !two_digits(text + 5, &month) || text[7] != '-' || !two_digits(text + 8, &day)
        || text[10] != ' ' || !two_digits(text + 11, &hour) || text[13] != ':'
        || !two_digits(text + 14, &minute) || text[16] != ':'
        || !two_digits(text + 17, &second)) {
        return INVALID;
    }
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(century * 100 + year_low, month)
        || hour > 23 || minute > 59 || second > 59) {
        return INVALID;
    }
    Py_ssize_t kept = 19;
    if (size == 23) {
        if (text[19] != '.' || !is_digit((Py_UCS4)text[20]) || !is_digit((Py_UCS4)text[21])
            || !is_digit((Py_UCS4)text[22])) {
            return INVALID;
        }
        if (text[20] != '0' || text[21] != '0' || text[22] != '0') {
            kept = 23;
        }
    }
    text[10] = 'T';
    text[kept] = 'Z';
    return PyUnicode_FromStringAndSize(text, kept + 1);
}

static PyObject *
decode_int(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* INT_SHAPE then int(): at most nine characters, a sign maybe, then digits only. */
    if (size < 1 || size > 9) {
        return INVALID;
    }
    Py_ssize_t i = 0;
    long sign = 1;
    Py_UCS4 first = PyUnicode_READ(kind, data, start);
    if (first == '+' || first == '-') {
        sign = first == '-' ? -1 : 1;
        i = 1;
        if (size == 1) {
            return INVALID;
        }
    }
    long number = 0;
    for (; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, start + i);
        if (!is_digit(c)) {
            return INVALID;
        }
        number = number * 10 + (long)(c - '0');
    }
    return PyLong_FromLong(sign * number);
}

static PyObject *
decode_double(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    /* DOUBLE_SHAPE, i.e. [0-9.+-]{1,200} then maybe e/E and (+?[0-9]{1,2} | -[0-9]{1,3}),
     * then float(): it must read the whole text. */
    if (size < 1 || size > MAX_DOUBLE) {
        return INVALID;
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
                return INVALID;
            }
        }
        else if (c > 127) {
            return INVALID;
        }
        text[i] = (char)c;
    }
    text[size] = '\0';
    if (mantissa < 1 || mantissa > 200) {
        return INVALID;
    }
    for (Py_ssize_t i = 0; i < mantissa; i++) {
        char c = text[i];
        if (!is_digit((Py_UCS4)c) && c != '.' && c != '+' && c != '-') {
            return INVALID;
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
            return INVALID;
        }
        for (; at < size; at++) {
            if (!is_digit((Py_UCS4)text[at])) {
                return INVALID;
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
        return INVALID;
    }
    if (end != text + size) {
        return INVALID;
    }
    return PyFloat_FromDouble(value);
}

static PyObject *
decode_boolean(int kind, const void *data, Py_ssize_t start, Py_ssize_t size)
{
    if (size != 1) {
        return INVALID;
    }
    Py_UCS4 c = PyUnicode_READ(kind, data, start);
    if (c == '1') {
        Py_RETURN_TRUE;
    }
    if (c == '0') {
        Py_RETURN_FALSE;
    }
    return INVALID;
}

/* ---- the line ---- */

/* Write the start of each field into ``starts`` (``starts[count]`` is one past the end,
 * as if the line ended with a TAB). Return 0 when the line has another number of fields. */
static int
find_fields(int kind, const void *data, Py_ssize_t length, Py_ssize_t count, Py_ssize_t *starts)
{
    Py_ssize_t found = 0;
    starts[0] = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const char *text = (const char *)data;
        const char *at = text;
        const char *end = text + length;
        while ((at = memchr(at, '\t', (size_t)(end - at))) != NULL) {
            if (++found >= count) {
                return 0;
            }
            starts[found] = (at - text) + 1;
            at++;
        }
    }
    else {
        for (Py_ssize_t i = 0; i < length; i++) {
            if (PyUnicode_READ(kind, data, i) == '\t') {
                if (++found >= count) {
                    return 0;
                }
                starts[found] = i + 1;
            }
        }
    }
    if (found != count - 1) {
        return 0;
    }
    starts[count] = length + 1;
    return 1;
}

static PyObject *
LineDecoder_decode(LineDecoder *self, PyObject *line)
{
    if (!PyUnicode_Check(line)) {
        PyErr_Format(PyExc_TypeError, "decode() takes a str, not %.100s", Py_TYPE(line)->tp_name);
        return NULL;
    }
    Py_ssize_t starts[MAX_FIELDS + 1];
    int kind = PyUnicode_KIND(line);
    const void *data = PyUnicode_DATA(line);
    if (!find_fields(kind, data, PyUnicode_GET_LENGTH(line), self->count, starts)) {
        Py_RETURN_NONE;
    }
    PyObject *result = PyTuple_New(1 + self->entity_count);
    if (result == NULL) {
        return NULL;
    }
    PyObject *atomic = PyDict_New();
    if (atomic == NULL) {
        goto error;
    }
    PyTuple_SET_ITEM(result, 0, atomic);
    Py_ssize_t entity = 0;
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_ssize_t start = starts[i];
        Py_ssize_t size = starts[i + 1] - 1 - start;
        unsigned char field_kind = self->kinds[i];
        PyObject *value;
        if (field_kind == KIND_ENTITY) {
            value = PyUnicode_Substring(line, start, start + size);
            if (value == NULL) {
                goto error;
            }
            PyTuple_SET_ITEM(result, 1 + entity++, value);
            continue;
        }
        if (size == 0) {
            if (self->required[i]) {
                goto invalid;
            }
            continue;
        }
        switch (field_kind) {
        case KIND_STRING:
            value = PyUnicode_Substring(line, start, start + size);
            break;
        case KIND_UUID:
            value = decode_uuid(kind, data, start, size);
            break;
        case KIND_TIMESTAMP:
            value = decode_timestamp(kind, data, start, size);
            break;
        case KIND_INT:
            value = decode_int(kind, data, start, size);
            break;
        case KIND_DOUBLE:
            value = decode_double(kind, data, start, size);
            break;
        default:
            value = decode_boolean(kind, data, start, size);
            break;
        }
        if (value == INVALID) {
            goto invalid;
        }
        if (value == NULL) {
            goto error;
        }
        int failed = PyDict_SetItem(atomic, self->names[i], value);
        Py_DECREF(value);
        if (failed) {
            goto error;
        }
    }
    return result;

invalid:
    Py_DECREF(result);
    Py_RETURN_NONE;
error:
    Py_DECREF(result);
    return NULL;
}

/* ---- the type ---- */

static PyObject *
LineDecoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"fields", NULL};
    PyObject *fields;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:LineDecoder", keywords, &fields)) {
        return NULL;
    }
    PyObject *items = PySequence_Fast(fields, "fields must be a sequence of (name, kind, required)");
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    if (count < 1 || count > MAX_FIELDS) {
        PyErr_Format(PyExc_ValueError, "a line has 1 to %d fields, not %zd", MAX_FIELDS, count);
        Py_DECREF(items);
        return NULL;
    }
    LineDecoder *self = (LineDecoder *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(items);
        return NULL;
    }
    self->count = count;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name;
        int kind, required;
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        if (!PyTuple_Check(item)
            || !PyArg_ParseTuple(item, "Uip:field", &name, &kind, &required)) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "field %zd is not a (name, kind, required) tuple", i);
            }
            goto error;
        }
        if (kind < 0 || kind >= KIND_COUNT) {
            PyErr_Format(PyExc_ValueError, "field %zd (%U) has unknown kind %d", i, name, kind);
            goto error;
        }
        self->kinds[i] = (unsigned char)kind;
        self->required[i] = (unsigned char)required;
        if (kind == KIND_ENTITY) {
            self->entity_count++;
            continue;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        self->names[i] = name;
    }
    Py_DECREF(items);
    return (PyObject *)self;

error:
    Py_DECREF(items);
    Py_DECREF(self);
    return NULL;
}

static void
LineDecoder_dealloc(LineDecoder *self)
{
    PyTypeObject *type = Py_TYPE(self);
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_CLEAR(self->names[i]);
    }
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef LineDecoder_methods[] = {
    {"decode", (PyCFunction)LineDecoder_decode, METH_O,
     "decode(line, /)\n--\n\n"
     "Return (atomic values, *entity texts) of a valid line, or None to look closer."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot LineDecoder_slots[] = {
    {Py_tp_new, LineDecoder_new},
    {Py_tp_dealloc, LineDecoder_dealloc},
    {Py_tp_methods, LineDecoder_methods},
    {Py_tp_doc, "LineDecoder(fields)\n--\n\n"
                "A decoder of lines whose fields are (name, kind code, required) in TSV order."},
    {0, NULL},
};

static PyType_Spec LineDecoder_spec = {
    .name = "plowline_core.event._native.LineDecoder",
    .basicsize = sizeof(LineDecoder),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = LineDecoder_slots,
};

static int
native_exec(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &LineDecoder_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    int failed = PyModule_AddObjectRef(module, "LineDecoder", type);
    Py_DECREF(type);
    return failed;
}

static PyModuleDef_Slot native_slots[] = {
    {Py_mod_exec, native_exec},
    {0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "plowline_core.event._native",
    .m_doc = "Decode the atomic values of enriched TSV lines in one pass (see atomic.py).",
    .m_size = 0,
    .m_slots = native_slots,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModuleDef_Init(&native_module);
}
