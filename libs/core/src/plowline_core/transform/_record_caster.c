/*
 * plowline_core.transform._record_caster: the common case of a RECORD caster, in C.
 *
 * ``RecordCaster(raw_names, names, casters, keep, required, general)`` is called as
 * ``caster(value, errors)`` and answers exactly as the straight-line Python that
 * ``codegen.specialised_record`` generates from the same plan: for a dict whose keys are
 * all raw sub-field names, every REQUIRED one present and every cast clean, the dict of
 * normalised names to values in field order; anything else goes to ``general(value,
 * errors)`` (errors appended meanwhile removed first). A value whose type its sub-field
 * keeps (``keep`` flags) is stored as it is; any other goes through the sub-field's caster.
 *
 * Pure: no I/O, no global state. Exceptions raised by the casters propagate.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>

/* Keep flags: the value types a sub-field stores as they are (``codegen._keep_flags``). */
enum {
    KEEP_NONE = 1,
    KEEP_BOOL = 2,
    KEEP_STR = 4,
    KEEP_INT64 = 8,  /* an int within +-(2**63 - 1) */
    KEEP_FINITE = 16, /* a finite float */
    KEEP_ALL = 31,
};

#define MAX_SUBS 4096

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t count;
    PyObject *raw_names; /* tuple of str */
    PyObject *names;     /* tuple of str */
    PyObject *casters;   /* tuple of callables */
    PyObject *general;
    unsigned char *keep;
    unsigned char *required;
} RecordCaster;

static int
is_kept(PyObject *item, unsigned char keep)
{
    PyTypeObject *type = Py_TYPE(item);
    if (item == Py_None) {
        return keep & KEEP_NONE;
    }
    if (type == &PyUnicode_Type) {
        return keep & KEEP_STR;
    }
    if (type == &PyBool_Type) {
        return keep & KEEP_BOOL;
    }
    if (type == &PyLong_Type) {
        if (!(keep & KEEP_INT64)) {
            return 0;
        }
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            PyErr_Clear(); /* cannot happen for an exact int; answer "not kept" */
            return 0;
        }
        return overflow == 0 && number != LLONG_MIN;
    }
    if (type == &PyFloat_Type) {
        return (keep & KEEP_FINITE) && isfinite(PyFloat_AS_DOUBLE(item));
    }
    return 0;
}

static PyObject *
call_general(RecordCaster *self, PyObject *value, PyObject *errors)
{
    PyObject *args[2] = {value, errors};
    return PyObject_Vectorcall(self->general, args, 2, NULL);
}

static PyObject *
RecordCaster_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    RecordCaster *self = (RecordCaster *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "a record caster takes (value, errors)");
        return NULL;
    }
    PyObject *value = args[0];
    PyObject *errors = args[1];
    if (!PyDict_CheckExact(value) || !PyList_CheckExact(errors)
        || PyDict_GET_SIZE(value) > self->count) {
        return call_general(self, value, errors);
    }
    /* Look every sub-field up first: the keys must all be raw names before anything is
     * cast (raw names are distinct, so that is: as many found as the dict has keys). */
    PyObject *stack_items[64];
    PyObject **items = stack_items;
    if (self->count > 64) {
        items = PyMem_Malloc(sizeof(PyObject *) * (size_t)self->count);
        if (items == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *result = NULL;
    Py_ssize_t found = 0;
    Py_ssize_t held = 0; /* items[:held] are strong references (a caster may run any code) */
    for (Py_ssize_t i = 0; i < self->count; i++) {
        PyObject *item = PyDict_GetItemWithError(value, PyTuple_GET_ITEM(self->raw_names, i));
        items[held++] = Py_XNewRef(item);
        if (item == NULL) {
            if (PyErr_Occurred()) {
                goto done;
            }
            if (self->required[i]) {
                result = call_general(self, value, errors);
                goto done;
            }
        }
        else {
            found++;
        }
    }
    if (found != PyDict_GET_SIZE(value)) {
        result = call_general(self, value, errors);
        goto done;
    }
    Py_ssize_t mark = PyList_GET_SIZE(errors);
    PyObject *out = PyDict_New();
    if (out == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < self->count; i++) {
        PyObject *item = items[i];
        PyObject *cast;
        if (item == NULL) {
            cast = Py_NewRef(Py_None);
        }
        else if (is_kept(item, self->keep[i])) {
            cast = Py_NewRef(item);
        }
        else {
            PyObject *call_args[2] = {item, errors};
            cast = PyObject_Vectorcall(PyTuple_GET_ITEM(self->casters, i), call_args, 2, NULL);
            if (cast == NULL) {
                Py_DECREF(out);
                goto done;
            }
        }
        int failed = PyDict_SetItem(out, PyTuple_GET_ITEM(self->names, i), cast);
        Py_DECREF(cast);
        if (failed) {
            Py_DECREF(out);
            goto done;
        }
    }
    if (PyList_GET_SIZE(errors) != mark) {
        Py_DECREF(out);
        if (PyList_SetSlice(errors, mark, PyList_GET_SIZE(errors), NULL) < 0) {
            goto done;
        }
        result = call_general(self, value, errors);
        goto done;
    }
    result = out;

done:
    for (Py_ssize_t i = 0; i < held; i++) {
        Py_XDECREF(items[i]);
    }
    if (items != stack_items) {
        PyMem_Free(items);
    }
    return result;
}

static PyObject *
RecordCaster_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static int
check_tuple(PyObject *tuple, Py_ssize_t count, const char *what, int strings)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != count) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of %zd items", what, count);
        return 0;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (strings ? !PyUnicode_CheckExact(item) : !PyCallable_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] is not a %s", what, i,
                         strings ? "str" : "callable");
            return 0;
        }
    }
    return 1;
}

static PyObject *
RecordCaster_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"raw_names", "names", "casters", "keep", "required", "general",
                               NULL};
    PyObject *raw_names, *names, *casters, *keep, *required, *general;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO:RecordCaster", keywords, &raw_names,
                                     &names, &casters, &keep, &required, &general)) {
        return NULL;
    }
    if (!PyTuple_Check(raw_names)) {
        PyErr_SetString(PyExc_TypeError, "raw_names must be a tuple of str");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(raw_names);
    if (count > MAX_SUBS) {
        PyErr_Format(PyExc_ValueError, "a record has at most %d sub-fields, not %zd", MAX_SUBS,
                     count);
        return NULL;
    }
    if (!check_tuple(raw_names, count, "raw_names", 1) || !check_tuple(names, count, "names", 1)
        || !check_tuple(casters, count, "casters", 0)) {
        return NULL;
    }
    if (!PyTuple_Check(keep) || PyTuple_GET_SIZE(keep) != count || !PyTuple_Check(required)
        || PyTuple_GET_SIZE(required) != count) {
        PyErr_Format(PyExc_ValueError, "keep and required must be tuples of %zd items", count);
        return NULL;
    }
    if (!PyCallable_Check(general)) {
        PyErr_SetString(PyExc_TypeError, "general must be callable");
        return NULL;
    }
    RecordCaster *self = (RecordCaster *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = RecordCaster_vectorcall;
    self->keep = PyMem_Calloc((size_t)count + 1, 1);
    self->required = PyMem_Calloc((size_t)count + 1, 1);
    if (self->keep == NULL || self->required == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        long flags = PyLong_AsLong(PyTuple_GET_ITEM(keep, i));
        if (flags == -1 && PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
        if (flags < 0 || flags > KEEP_ALL) {
            PyErr_Format(PyExc_ValueError, "keep[%zd] has unknown flags %ld", i, flags);
            Py_DECREF(self);
            return NULL;
        }
        int strict = PyObject_IsTrue(PyTuple_GET_ITEM(required, i));
        if (strict < 0) {
            Py_DECREF(self);
            return NULL;
        }
        self->keep[i] = (unsigned char)flags;
        self->required[i] = (unsigned char)strict;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *raw = PyTuple_GET_ITEM(raw_names, i);
        for (Py_ssize_t j = 0; j < i; j++) {
            int same = PyUnicode_Compare(raw, PyTuple_GET_ITEM(raw_names, j));
            if (same == 0) {
                PyErr_Format(PyExc_ValueError, "raw name %R is given twice", raw);
                Py_DECREF(self);
                return NULL;
            }
        }
    }
    self->count = count;
    self->raw_names = Py_NewRef(raw_names);
    self->names = Py_NewRef(names);
    self->casters = Py_NewRef(casters);
    self->general = Py_NewRef(general);
    return (PyObject *)self;
}

static int
RecordCaster_traverse(RecordCaster *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->casters);
    Py_VISIT(self->general);
    return 0;
}

static int
RecordCaster_clear(RecordCaster *self)
{
    Py_CLEAR(self->raw_names);
    Py_CLEAR(self->names);
    Py_CLEAR(self->casters);
    Py_CLEAR(self->general);
    return 0;
}

static void
RecordCaster_dealloc(RecordCaster *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    RecordCaster_clear(self);
    PyMem_Free(self->keep);
    PyMem_Free(self->required);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef RecordCaster_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(RecordCaster, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot RecordCaster_slots[] = {
    {Py_tp_new, RecordCaster_new},
    {Py_tp_call, RecordCaster_call},
    {Py_tp_dealloc, RecordCaster_dealloc},
    {Py_tp_traverse, RecordCaster_traverse},
    {Py_tp_clear, RecordCaster_clear},
    {Py_tp_members, RecordCaster_members},
    {Py_tp_doc, "RecordCaster(raw_names, names, casters, keep, required, general)\n--\n\n"
                "A RECORD caster for objects keyed by raw names; anything else goes to general."},
    {0, NULL},
};

static PyType_Spec RecordCaster_spec = {
    .name = "plowline_core.transform._record_caster.RecordCaster",
    .basicsize = sizeof(RecordCaster),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC
             | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = RecordCaster_slots,
};

static int
record_exec(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &RecordCaster_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    int failed = PyModule_AddObjectRef(module, "RecordCaster", type);
    Py_DECREF(type);
    if (failed) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "KEEP_NONE", KEEP_NONE)
        || PyModule_AddIntConstant(module, "KEEP_BOOL", KEEP_BOOL)
        || PyModule_AddIntConstant(module, "KEEP_STR", KEEP_STR)
        || PyModule_AddIntConstant(module, "KEEP_INT64", KEEP_INT64)
        || PyModule_AddIntConstant(module, "KEEP_FINITE", KEEP_FINITE)) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot record_slots[] = {
    {Py_mod_exec, record_exec},
    {0, NULL},
};

static struct PyModuleDef record_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "plowline_core.transform._record_caster",
    .m_doc = "The common case of RECORD casters, in C (see codegen.specialised_record).",
    .m_size = 0,
    .m_slots = record_slots,
};

PyMODINIT_FUNC
PyInit__record_caster(void)
{
    return PyModuleDef_Init(&record_module);
}
