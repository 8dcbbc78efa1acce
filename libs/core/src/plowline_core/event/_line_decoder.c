/*
 * plowline_core.event._line_decoder: decode the atomic values of an enriched TSV line in one pass.
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

#include "_typed_values.h"

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

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;
    Py_ssize_t entity_count;
    PyObject *names[MAX_FIELDS]; /* interned; NULL at entity positions */
    unsigned char kinds[MAX_FIELDS];
    unsigned char required[MAX_FIELDS];
} LineDecoder;

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
        if (value == NULL) {
            if (PyErr_Occurred()) {
                goto error;
            }
            goto invalid; /* out of shape */
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
    .name = "plowline_core.event._line_decoder.LineDecoder",
    .basicsize = sizeof(LineDecoder),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = LineDecoder_slots,
};

static int
line_decoder_exec(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &LineDecoder_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    int failed = PyModule_AddObjectRef(module, "LineDecoder", type);
    Py_DECREF(type);
    return failed;
}

static PyModuleDef_Slot line_decoder_slots[] = {
    {Py_mod_exec, line_decoder_exec},
    {0, NULL},
};

static struct PyModuleDef line_decoder_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "plowline_core.event._line_decoder",
    .m_doc = "Decode the atomic values of enriched TSV lines in one pass (see atomic.py).",
    .m_size = 0,
    .m_slots = line_decoder_slots,
};

PyMODINIT_FUNC
PyInit__line_decoder(void)
{
    return PyModuleDef_Init(&line_decoder_module);
}
