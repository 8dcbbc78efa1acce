/*
 * plowline_core.schema._row_check: the common case of ``widening.missing_fields``, in C.
 *
 * ``all_known(checker, row)`` returns True only when ``missing_fields`` would return no
 * path for ``row``: every key, at every level the Python walk visits, is a name of the
 * compiled table schema (``widening._Checker``: a tuple whose item 0 is the dict of
 * lower-case field names to the sub-checker of a RECORD field, or None).
 *
 * False means "an unknown key, or a case this does not decide": the Python walk, the
 * reference, then answers. Undecided here: a key found only after folding its case, a
 * mapping that is not a dict, a list subclass, any value of a RECORD field that is not a
 * dict, a list, None, a str, an int, a float or a bool, and nesting deeper than
 * ``MAX_DEPTH``. So True is always the Python walk's answer, and False costs one walk.
 *
 * Pure: no I/O, no global state; never raises for a row. A key that is not exactly a str
 * is undecided too: looking up an exact str runs no Python code, so nothing can change
 * the dicts and lists while they are walked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_DEPTH 64

/* 1: every key known; 0: unknown or undecided; the checker's names dict is borrowed. */
static int walk_dict(PyObject *names, PyObject *row, int depth);

/* The names dict of a checker (item 0 of the tuple), or NULL when it is not one. */
static PyObject *
names_of(PyObject *checker)
{
    if (!PyTuple_Check(checker) || PyTuple_GET_SIZE(checker) < 1) {
        return NULL;
    }
    PyObject *names = PyTuple_GET_ITEM(checker, 0);
    return PyDict_CheckExact(names) ? names : NULL;
}

/* A value the Python walk never descends into: neither a Mapping nor a list. */
static int
is_leaf(PyObject *value)
{
    PyTypeObject *type = Py_TYPE(value);
    return value == Py_None || type == &PyUnicode_Type || type == &PyLong_Type
           || type == &PyFloat_Type || type == &PyBool_Type;
}

static int
walk_items(PyObject *names, PyObject *items, int depth)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (PyDict_CheckExact(item)) {
            if (!walk_dict(names, item, depth + 1)) {
                return 0;
            }
        }
        else if (!is_leaf(item) && !PyList_CheckExact(item)) {
            return 0; /* maybe a Mapping: the Python walk decides */
        }
    }
    return 1;
}

static int
walk_value(PyObject *sub, PyObject *value, int depth)
{
    if (sub == Py_None || value == Py_None) {
        return 1;
    }
    PyObject *names = names_of(sub);
    if (names == NULL) {
        return 0;
    }
    if (PyDict_CheckExact(value)) {
        return walk_dict(names, value, depth + 1);
    }
    if (PyList_CheckExact(value)) {
        return walk_items(names, value, depth);
    }
    return is_leaf(value);
}

static int
walk_dict(PyObject *names, PyObject *row, int depth)
{
    if (depth > MAX_DEPTH) {
        return 0;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(row, &pos, &key, &value)) {
        /* Exact str keys only: looking one up runs no Python code, so nothing can
           change the dicts and lists being walked (no references need holding). */
        if (!PyUnicode_CheckExact(key)) {
            return 0;
        }
        PyObject *sub = PyDict_GetItemWithError(names, key);
        if (sub == NULL) {
            PyErr_Clear(); /* not a name (or case folded): the Python walk decides */
            return 0;
        }
        if (!walk_value(sub, value, depth)) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
all_known(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "all_known(checker, row) takes 2 arguments");
        return NULL;
    }
    PyObject *names = names_of(args[0]);
    if (names == NULL) {
        PyErr_SetString(PyExc_TypeError, "all_known: checker must be a widening._Checker");
        return NULL;
    }
    if (!PyDict_CheckExact(args[1])) {
        Py_RETURN_FALSE;
    }
    return PyBool_FromLong(walk_dict(names, args[1], 0));
}

static PyMethodDef row_check_methods[] = {
    {"all_known", _PyCFunction_CAST(all_known), METH_FASTCALL,
     "all_known(checker, row)\n--\n\n"
     "Return True only when missing_fields would find no unknown key in row."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot row_check_slots[] = {
    {0, NULL},
};

static struct PyModuleDef row_check_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "plowline_core.schema._row_check",
    .m_doc = "The common case of widening.missing_fields, in C.",
    .m_size = 0,
    .m_methods = row_check_methods,
    .m_slots = row_check_slots,
};

PyMODINIT_FUNC
PyInit__row_check(void)
{
    return PyModuleDef_Init(&row_check_module);
}
