/* A C extension built against a symbol that the loaded libraries do not provide,
   as happens when an extension is built for one torch/CUDA and imported under another. */
#include <Python.h>

extern int ds_fused_adam_step_v2(int n); /* defined nowhere */

static PyObject *step(PyObject *self, PyObject *args) {
    return PyLong_FromLong(ds_fused_adam_step_v2(1));
}

static PyMethodDef methods[] = {{"step", step, METH_NOARGS, "step"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "fused_adam_ext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_fused_adam_ext(void) { return PyModule_Create(&mod); }
