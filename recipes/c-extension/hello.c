/* A tiny CPython extension, compiled by a [[step]] of c-extension.toml: hello.greet(name). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *greet(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    return PyUnicode_FromFormat("hello, %s, from C", name);
}

static PyMethodDef methods[] = {
    {"greet", greet, METH_VARARGS, "Greet someone, from C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hello", NULL, -1, methods};

PyMODINIT_FUNC PyInit_hello(void) { return PyModule_Create(&module); }
