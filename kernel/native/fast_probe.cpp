// The fast path's identity probe in one pass (kernel/fast_path.py, kernel/native_probe.py).
//
// probe(data, config) walks data = (abc, sfs, blocked, sizes) and returns
//   (key, versions, tensors)
// where key is the bytes kernel.fast_path.identity_key returns for the same data (native-endian
// uint64 words: id(config), len(abc), len(sfs), len(blocked), the length of every group entry, the
// id of every tensor in flatten() order, the id of every size tuple), versions is the sum of
// the tensors' version counters and tensors is flatten(data) (a new list).
//
// It returns None, never a guess, for anything but the plain shape: data, abc, sfs, blocked and
// sizes exact lists or tuples, group entries exact lists or tuples, every flat item an exact
// torch.Tensor (or Parameter), sizes non-empty and every size an exact tuple (the Python key of
// other sizes is a tuple of values, not bytes), every version counter readable (inference
// tensors have none). The caller then takes the Python probe, which decides such problems.
//
// No Python code runs during the walk (no iteration protocol, no attribute access), so the
// containers cannot change under it; the GIL is held throughout.

#include <Python.h>

#include <cstdint>
#include <cstring>

#include <torch/csrc/autograd/python_variable.h>

namespace {

inline bool seq(PyObject* o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }

PyObject* probe(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "probe(data, config) takes 2 arguments");
    return nullptr;
  }
  PyObject* data = args[0];
  PyObject* config = args[1];
  if (!seq(data) || PySequence_Fast_GET_SIZE(data) != 4) Py_RETURN_NONE;
  PyObject** parts = PySequence_Fast_ITEMS(data);
  Py_ssize_t entries = 0, ntensors = 0;
  for (int p = 0; p < 3; ++p) {
    PyObject* part = parts[p];
    if (!seq(part)) Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(part);
    PyObject** items = PySequence_Fast_ITEMS(part);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!seq(items[i])) Py_RETURN_NONE;
      ntensors += PySequence_Fast_GET_SIZE(items[i]);
    }
    entries += n;
  }
  PyObject* sizes = parts[3];
  if (!seq(sizes)) Py_RETURN_NONE;
  Py_ssize_t nsizes = PySequence_Fast_GET_SIZE(sizes);
  if (nsizes == 0) Py_RETURN_NONE;
  PyObject** size_items = PySequence_Fast_ITEMS(sizes);
  for (Py_ssize_t i = 0; i < nsizes; ++i)
    if (!PyTuple_CheckExact(size_items[i])) Py_RETURN_NONE;

  const Py_ssize_t words = 4 + entries + ntensors + nsizes;
  // these allocations may run the cyclic GC, hence finalizers and weakref callbacks (Python
  // code that could edit the containers): the pass below checks everything again, against the
  // counts it allocated for, and runs no Python code itself
  PyObject* key = PyBytes_FromStringAndSize(nullptr, words * (Py_ssize_t)sizeof(uint64_t));
  if (key == nullptr) return nullptr;
  PyObject* tensors = PyList_New(ntensors);
  if (tensors == nullptr) {
    Py_DECREF(key);
    return nullptr;
  }
  uint64_t* w = reinterpret_cast<uint64_t*>(PyBytes_AS_STRING(key));
  uint64_t* const lens_end = w + 4 + entries;
  uint64_t* ids = lens_end;
  uint64_t versions = 0;
  Py_ssize_t t = 0;
  bool ok = seq(data) && PySequence_Fast_GET_SIZE(data) == 4 && PySequence_Fast_ITEMS(data) == parts &&
            parts[3] == sizes && seq(sizes) && PySequence_Fast_GET_SIZE(sizes) == nsizes &&
            PySequence_Fast_ITEMS(sizes) == size_items;
  if (ok) {
    *w++ = (uint64_t)(uintptr_t)config;
    for (int p = 0; p < 3; ++p) *w++ = (uint64_t)PySequence_Fast_GET_SIZE(parts[p]);
  }
  for (int p = 0; p < 3 && ok; ++p) {
    PyObject* part = parts[p];
    if (!seq(part)) {
      ok = false;
      break;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(part);
    PyObject** items = PySequence_Fast_ITEMS(part);
    for (Py_ssize_t i = 0; i < n && ok; ++i) {
      PyObject* entry = items[i];
      if (!seq(entry) || w >= lens_end) {
        ok = false;
        break;
      }
      Py_ssize_t m = PySequence_Fast_GET_SIZE(entry);
      PyObject** objs = PySequence_Fast_ITEMS(entry);
      if (m > ntensors - t) {
        ok = false;
        break;
      }
      *w++ = (uint64_t)m;
      for (Py_ssize_t j = 0; j < m; ++j) {
        PyObject* o = objs[j];
        if (!THPVariable_CheckExact(o)) {
          ok = false;
          break;
        }
        try {
          versions += (uint64_t)THPVariable_Unpack(o)._version();
        } catch (...) {  // no version counter (inference tensors): the Python probe decides
          ok = false;
          break;
        }
        Py_INCREF(o);
        PyList_SET_ITEM(tensors, t, o);
        ids[t++] = (uint64_t)(uintptr_t)o;
      }
    }
  }
  for (Py_ssize_t i = 0; i < nsizes && ok; ++i) ok = PyTuple_CheckExact(size_items[i]);
  if (!ok || w != lens_end || t != ntensors) {  // the list's unset slots are NULL, which list_dealloc skips
    Py_DECREF(tensors);
    Py_DECREF(key);
    Py_RETURN_NONE;
  }
  w = ids + ntensors;
  for (Py_ssize_t i = 0; i < nsizes; ++i) *w++ = (uint64_t)(uintptr_t)size_items[i];
  PyObject* v = PyLong_FromUnsignedLongLong(versions);
  if (v == nullptr) {
    Py_DECREF(tensors);
    Py_DECREF(key);
    return nullptr;
  }
  PyObject* result = PyTuple_New(3);
  if (result == nullptr) {
    Py_DECREF(v);
    Py_DECREF(tensors);
    Py_DECREF(key);
    return nullptr;
  }
  PyTuple_SET_ITEM(result, 0, key);
  PyTuple_SET_ITEM(result, 1, v);
  PyTuple_SET_ITEM(result, 2, tensors);
  return result;
}

PyMethodDef methods[] = {
    {"probe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(probe)), METH_FASTCALL,
     "probe(data, config) -> (key bytes, sum of version counters, flat tensors) or None"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "fast_probe", "The fast path's native identity probe.", -1,
                          methods};

}  // namespace

#define NVFP4_CAT2(a, b) a##b
#define NVFP4_CAT(a, b) NVFP4_CAT2(a, b)
PyMODINIT_FUNC NVFP4_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  module_def.m_name = Py_STRINGIFY(TORCH_EXTENSION_NAME);
  return PyModule_Create(&module_def);
}
