// The host fast path's native helpers (kernel/native_probe.py): the fast path's identity probe in
// one pass (probe, kernel/fast_path.py), the seen-shape first call's per-tensor work in one pass
// (seen_state/seen_tables, kernel/seen_shapes.py and kernel/host_pipeline.py; see below), the
// shape-template key (sizes_key), the fast-path entry's weak references (refs) and the metadata
// a fast-path entry is checked against after an in-place write (metadata).
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

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <vector>

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


// ---- the seen-shape first call (kernel/seen_shapes.py, kernel/host_pipeline.py) ----------------
//
// seen_state(...) keeps what one ShapeTemplate fixes (its signature, its address-check arrays and
// its TableLayout) in a capsule; seen_tables(state, data, tensors) then does a first call's
// per-tensor work in one pass: ShapeTemplate.accept (structure, signature, pointers, alignment,
// aliasing) and HostPipeline.seen_tables (the block of pointer table and patched fourth table
// written into one host staging buffer, one copy to the device, two views). It returns
// (pointer table view, fourth table view or None) when the problem is accepted, and None for
// anything else: a rule broken, anything outside the plain shape (exact lists/tuples, exact
// tensors), a torch function mode, any exception while reading a tensor. On None the caller runs
// the Python accept, which decides (so this can only accept what the Python path accepts).
//
// Upload, for a CUDA device: the driver copy below where it is available and on, else the torch
// copy (the same copy the Python seen-shape path makes):
//
// * driver copy (default; NVFP4_DRIVER_COPY=0 or native_probe.driver_copy(False) turns it off):
//   the device block from at::empty on the device (torch's caching allocator, the device's
//   current stream, as the torch copy's host.to(device) allocates it), the words written into a
//   pageable thread_local host buffer that is reused, one cuMemcpyHtoDAsync_v2 on the device's
//   current stream (the allocator's stream: the block is freed in that stream's order; the
//   launch follows on it). The buffer may be rewritten as soon as the call returns because the
//   source is pageable memory: the driver stages it before returning. CUDA Driver API, "API
//   synchronization behavior", Asynchronous: "For transfers between device memory and pageable
//   host memory, the function might be synchronous with respect to host." and "If pageable
//   memory must first be staged to pinned memory, the driver may synchronize with the stream
//   and stage the copy into pinned memory." (a pageable source is never read by a later DMA:
//   it is copied into the driver's own memory inside the call). torch relies on the same rule:
//   its non-blocking copy_ from a pageable CPU tensor is a bare cudaMemcpyAsync with no event
//   recorded (aten/src/ATen/native/cuda/Copy.cu), after which the CPU tensor may be freed.
//   Nothing of torch's is bypassed but the host staging: the device block is the caching
//   allocator's, on the stream it records.
//   libcuda is resolved once (dlopen libcuda.so.1, RTLD_NOLOAD first: torch has loaded it;
//   dlsym cuMemcpyHtoDAsync_v2, cuCtxGetCurrent, cuCtxGetDevice, cuStreamIsCapturing; no CUDA
//   headers here). Not
//   taken (torch copy instead) where it does not resolve, where this thread's current context
//   is not the block's device's (a thread that has made no CUDA runtime call yet), or where the
//   current stream is being captured into a CUDA graph (cuStreamIsCapturing: a pageable copy is
//   not capturable, and its error would invalidate the capture).
//   A copy that returns non-zero turns the driver copy off for the process (upload_status()
//   says why) and raises: no block whose copy failed is ever returned; the caller's fallback
//   (the Python path) decides that call, later calls take the torch copy.
// * torch copy: a fresh host tensor per call from at::empty(pinned_memory=true), what the Python
//   path's torch.empty(..., pin_memory=True) does: torch's caching host allocator records an
//   event on the stream of every non-blocking copy that reads a pinned block and hands the block
//   out again only once that event has completed, so a buffer is never rewritten while an
//   earlier copy may still read it (no ring of our own to get wrong).


using CuMemcpyHtoDAsync = int (*)(unsigned long long dst, const void* src, size_t bytes, void* stream);
using CuCtxGetCurrent = int (*)(void** context);
using CuCtxGetDevice = int (*)(int* device);
using CuStreamIsCapturing = int (*)(void* stream, int* status);

struct DriverCopy {  // read and written with the GIL held only
  bool enabled = true;  // NVFP4_DRIVER_COPY (kernel/native_probe.py sets it at load) / set_driver_copy
  int resolved = 0;     // 0: not tried yet, 1: resolved, -1: unavailable (reason in why)
  std::string why;
  CuMemcpyHtoDAsync copy = nullptr;
  CuCtxGetCurrent context = nullptr;
  CuCtxGetDevice device = nullptr;
  CuStreamIsCapturing capturing = nullptr;
  int failed = 0;  // the CUresult that turned the driver copy off (0: none)
  unsigned long long driver_copies = 0, torch_copies = 0, no_context = 0, capturing_streams = 0;
};
DriverCopy g_driver;

const char* driver_library() {  // NVFP4_LIBCUDA: another library for the CPU tests (a fake libcuda)
  const char* name = std::getenv("NVFP4_LIBCUDA");
  return name != nullptr && *name ? name : "libcuda.so.1";
}

bool resolve_driver() {
  if (g_driver.resolved != 0) return g_driver.resolved > 0;
  const char* name = driver_library();
  void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);  // torch loaded it already
  if (lib == nullptr) lib = dlopen(name, RTLD_NOW);
  if (lib == nullptr) {
    const char* err = dlerror();
    g_driver.why = std::string("dlopen ") + name + " failed: " + (err != nullptr ? err : "?");
    g_driver.resolved = -1;
    return false;
  }
  void* copy = dlsym(lib, "cuMemcpyHtoDAsync_v2");
  void* context = dlsym(lib, "cuCtxGetCurrent");
  void* device = dlsym(lib, "cuCtxGetDevice");
  void* capturing = dlsym(lib, "cuStreamIsCapturing");
  if (copy == nullptr || context == nullptr || device == nullptr || capturing == nullptr) {
    g_driver.why = std::string("dlsym in ") + name + " failed: no " +
                   (copy == nullptr      ? "cuMemcpyHtoDAsync_v2"
                    : context == nullptr ? "cuCtxGetCurrent"
                    : device == nullptr  ? "cuCtxGetDevice"
                                         : "cuStreamIsCapturing");
    g_driver.resolved = -1;
    return false;  // the library stays loaded (it is libcuda, which torch holds anyway)
  }
  g_driver.copy = reinterpret_cast<CuMemcpyHtoDAsync>(copy);
  g_driver.context = reinterpret_cast<CuCtxGetCurrent>(context);
  g_driver.device = reinterpret_cast<CuCtxGetDevice>(device);
  g_driver.capturing = reinterpret_cast<CuStreamIsCapturing>(capturing);
  g_driver.resolved = 1;
  return true;
}

// the copy itself; false with a Python error set when the driver refused it (the driver copy is
// then off for the process)
bool driver_copy_bytes(unsigned long long dst, const void* src, size_t bytes, void* stream) {
  const int rc = g_driver.copy(dst, src, bytes, stream);
  if (rc != 0) {
    g_driver.failed = rc;
    g_driver.enabled = false;
    g_driver.why = "cuMemcpyHtoDAsync_v2 returned CUresult " + std::to_string(rc);
    PyErr_Format(PyExc_RuntimeError,
                 "seen-shape table upload: cuMemcpyHtoDAsync_v2 returned CUresult %d; the driver copy is off "
                 "from now on (the torch copy is used)", rc);
    return false;
  }
  ++g_driver.driver_copies;
  return true;
}

struct SeenState {
  Py_ssize_t groups = 0;
  std::vector<at::ScalarType> dtypes;
  std::vector<c10::Device> devices;
  std::vector<Py_ssize_t> dim_at;  // tensor i's sizes/strides: dims[dim_at[i] .. dim_at[i + 1])
  std::vector<int64_t> sizes, strides;
  std::vector<int64_t> nonempty, extents, outputs, limits;  // OverlapCheck's arrays
  uint64_t align_mask = 0;
  std::vector<int64_t> base;  // the block's fixed words (TableLayout.base)
  std::vector<int64_t> words, sources;
  std::vector<int64_t> pointer_shape, pointer_strides, aux_shape, aux_strides;
  bool has_aux = false;
  int64_t aux_at = 0;
  c10::Device device = c10::Device(c10::kCPU);
};

const char* const kStateName = "nvfp4_seen_state";

void free_state(PyObject* capsule) {
  delete static_cast<SeenState*>(PyCapsule_GetPointer(capsule, kStateName));
}

bool int64s(PyObject* o, std::vector<int64_t>& out) {  // bytes of native int64 words
  if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) % 8) {
    PyErr_SetString(PyExc_TypeError, "seen_state: expected bytes of int64 words");
    return false;
  }
  out.resize(PyBytes_GET_SIZE(o) / 8);
  std::memcpy(out.data(), PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o));
  return true;
}

bool ints(PyObject* o, std::vector<int64_t>& out) {  // a sequence of Python ints
  PyObject* fast = PySequence_Fast(o, "seen_state: expected a sequence of ints");
  if (fast == nullptr) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (out[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return false;
    }
  }
  Py_DECREF(fast);
  return true;
}

// seen_state(groups, dtypes, shapes, strides, devices, nonempty, extents, outputs, limits, align_mask,
//            base, words, sources, pointer_shape, pointer_strides, aux_at, aux_shape, aux_strides, device)
// dtypes/devices: torch.dtype/torch.device objects; shapes/strides: sequences of int sequences;
// nonempty .. limits, base, words, sources: bytes of int64 words; aux_shape None: no fourth table.
PyObject* seen_state(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 19) {
    PyErr_SetString(PyExc_TypeError, "seen_state takes 19 arguments");
    return nullptr;
  }
  auto state = std::make_unique<SeenState>();
  state->groups = PyLong_AsSsize_t(args[0]);
  if (state->groups == -1 && PyErr_Occurred()) return nullptr;
  PyObject* dtypes = PySequence_Fast(args[1], "dtypes");
  if (dtypes == nullptr) return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(dtypes);
  bool ok = n == 7 * state->groups;
  for (Py_ssize_t i = 0; i < n && ok; ++i) {
    PyObject* d = PySequence_Fast_GET_ITEM(dtypes, i);
    ok = THPDtype_Check(d);
    if (ok) state->dtypes.push_back(reinterpret_cast<THPDtype*>(d)->scalar_type);
  }
  Py_DECREF(dtypes);
  PyObject* devices = ok ? PySequence_Fast(args[4], "devices") : nullptr;
  ok = devices != nullptr && PySequence_Fast_GET_SIZE(devices) == n;
  for (Py_ssize_t i = 0; i < n && ok; ++i) {
    PyObject* d = PySequence_Fast_GET_ITEM(devices, i);
    ok = THPDevice_Check(d);
    if (ok) state->devices.push_back(reinterpret_cast<THPDevice*>(d)->device);
  }
  Py_XDECREF(devices);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "seen_state: bad dtypes or devices");
    return nullptr;
  }
  PyObject* shapes = PySequence_Fast(args[2], "shapes");
  if (shapes == nullptr) return nullptr;
  PyObject* strides = PySequence_Fast(args[3], "strides");
  if (strides == nullptr) {
    Py_DECREF(shapes);
    return nullptr;
  }
  ok = PySequence_Fast_GET_SIZE(shapes) == n && PySequence_Fast_GET_SIZE(strides) == n;
  state->dim_at.push_back(0);
  std::vector<int64_t> one, other;
  for (Py_ssize_t i = 0; i < n && ok; ++i) {
    ok = ints(PySequence_Fast_GET_ITEM(shapes, i), one) && ints(PySequence_Fast_GET_ITEM(strides, i), other) &&
         one.size() == other.size();
    if (ok) {
      state->sizes.insert(state->sizes.end(), one.begin(), one.end());
      state->strides.insert(state->strides.end(), other.begin(), other.end());
      state->dim_at.push_back((Py_ssize_t)state->sizes.size());
    }
  }
  Py_DECREF(shapes);
  Py_DECREF(strides);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "seen_state: bad shapes or strides");
    return nullptr;
  }
  if (!int64s(args[5], state->nonempty) || !int64s(args[6], state->extents) || !int64s(args[7], state->outputs) ||
      !int64s(args[8], state->limits))
    return nullptr;
  state->align_mask = PyLong_AsUnsignedLongLong(args[9]);
  if (PyErr_Occurred()) return nullptr;
  if (!int64s(args[10], state->base) || !int64s(args[11], state->words) || !int64s(args[12], state->sources) ||
      !ints(args[13], state->pointer_shape) || !ints(args[14], state->pointer_strides))
    return nullptr;
  state->aux_at = PyLong_AsLongLong(args[15]);
  if (PyErr_Occurred()) return nullptr;
  state->has_aux = args[16] != Py_None;
  if (state->has_aux && (!ints(args[16], state->aux_shape) || !ints(args[17], state->aux_strides))) return nullptr;
  if (!THPDevice_Check(args[18])) {
    PyErr_SetString(PyExc_TypeError, "seen_state: device must be a torch.device");
    return nullptr;
  }
  state->device = reinterpret_cast<THPDevice*>(args[18])->device;
  // every index in range, once, here: the hot path then trusts them
  const int64_t nwords = (int64_t)state->base.size();
  const size_t nonempty = state->nonempty.size();
  ok = state->extents.size() == nonempty && state->limits.size() == state->outputs.size() * nonempty &&
       state->words.size() == state->sources.size();
  for (int64_t i : state->nonempty) ok = ok && 0 <= i && i < n;
  for (int64_t i : state->outputs) ok = ok && 0 <= i && i < (int64_t)nonempty;
  for (int64_t i : state->words) ok = ok && 0 <= i && i < nwords;
  for (int64_t i : state->sources) ok = ok && 0 <= i && i < n;
  if (!ok) {
    PyErr_SetString(PyExc_ValueError, "seen_state: inconsistent template arrays");
    return nullptr;
  }
  PyObject* capsule = PyCapsule_New(state.get(), kStateName, free_state);
  if (capsule != nullptr) state.release();
  return capsule;
}

// data: (abc, sfs, blocked, sizes) exact lists/tuples, each of the three holding `groups` exact
// list/tuple entries of 3, 2 and 2 items (what ShapeTemplate.accept checks of the structure)
bool seen_structure(PyObject* data, Py_ssize_t groups) {
  if (!seq(data) || PySequence_Fast_GET_SIZE(data) != 4) return false;
  PyObject** parts = PySequence_Fast_ITEMS(data);
  for (int p = 0; p < 3; ++p) {
    if (!seq(parts[p]) || PySequence_Fast_GET_SIZE(parts[p]) != groups) return false;
    PyObject** entries = PySequence_Fast_ITEMS(parts[p]);
    for (Py_ssize_t j = 0; j < groups; ++j)
      if (!seq(entries[j]) || PySequence_Fast_GET_SIZE(entries[j]) != (p == 0 ? 3 : 2)) return false;
  }
  return true;
}

PyObject* seen_tables(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "seen_tables(state, data, tensors) takes 3 arguments");
    return nullptr;
  }
  auto* s = static_cast<SeenState*>(PyCapsule_GetPointer(args[0], kStateName));
  if (s == nullptr) return nullptr;
  PyObject* list = args[2];
  const Py_ssize_t n = (Py_ssize_t)s->dtypes.size();
  // a torch function mode would see the Python path's tensor reads and ops, not these
  if (at::impl::torch_function_mode_enabled() || !seen_structure(args[1], s->groups) || !PyList_CheckExact(list) ||
      PyList_GET_SIZE(list) != n)
    Py_RETURN_NONE;
  PyObject** items = PySequence_Fast_ITEMS(list);
  std::vector<uint64_t> ptrs(n);
  try {
    // the signature first (ShapeTemplate.signature_matches), then every data pointer (the
    // Python path reads them in that order too: data_ptr may materialize a lazy copy)
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!THPVariable_CheckExact(items[i])) Py_RETURN_NONE;
      const at::Tensor& t = THPVariable_Unpack(items[i]);
      if (t.scalar_type() != s->dtypes[i] || t.device() != s->devices[i]) Py_RETURN_NONE;
      const Py_ssize_t lo = s->dim_at[i], dims = s->dim_at[i + 1] - lo;
      if (t.dim() != dims) Py_RETURN_NONE;
      c10::IntArrayRef sizes = t.sizes(), strides = t.strides();
      for (Py_ssize_t d = 0; d < dims; ++d)
        if (sizes[d] != s->sizes[lo + d] || strides[d] != s->strides[lo + d]) Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      ptrs[i] = (uint64_t)(uintptr_t)THPVariable_Unpack(items[i]).data_ptr();
      if (ptrs[i] >> 63) Py_RETURN_NONE;  // not an int64 (the Python path's array refuses it)
    }
  } catch (...) {  // a tensor without sizes, strides or storage: the Python path decides
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  // the alignment rule, and no start at or above 2^61 (ShapeTemplate.accept)
  uint64_t all = 0;
  for (int64_t i : s->nonempty) all |= ptrs[i];
  if (all & (s->align_mask | (~uint64_t(0) << 61))) Py_RETURN_NONE;
  // the aliasing rule as OverlapCheck.ok computes it (int64 arithmetic that wraps like numpy's)
  const size_t m = s->nonempty.size();
  if (!s->outputs.empty()) {
    std::vector<uint64_t> centers(m);
    for (size_t j = 0; j < m; ++j) centers[j] = ptrs[s->nonempty[j]] * 2 + (uint64_t)s->extents[j];
    for (size_t o = 0; o < s->outputs.size(); ++o) {
      const uint64_t c = centers[s->outputs[o]];
      const int64_t* limit = s->limits.data() + o * m;
      for (size_t j = 0; j < m; ++j) {
        const int64_t d = (int64_t)(c - centers[j]);
        const int64_t dist = (int64_t)(d < 0 ? uint64_t(0) - (uint64_t)d : (uint64_t)d);
        if (dist < limit[j]) Py_RETURN_NONE;
      }
    }
  }
  HANDLE_TH_ERRORS
  const bool cuda = s->device.is_cuda();
  const int64_t nbytes = (int64_t)s->base.size() * 8;
  at::Tensor stored;
  if (cuda && nbytes > 0 && g_driver.enabled && resolve_driver()) {  // the driver copy ("Upload" above)
    void* context = nullptr;
    int ordinal = -1;
    const c10::impl::DeviceGuardImplInterface* impl = nullptr;
    void* stream = nullptr;
    int capture = -1;
    if (g_driver.context(&context) == 0 && context != nullptr && g_driver.device(&ordinal) == 0 &&
        ordinal == s->device.index()) {
      impl = c10::impl::getDeviceGuardImpl(c10::kCUDA);
      stream = impl->getStreamNativeHandle(impl->getStream(s->device));  // the device's current stream
      // a stream being captured into a CUDA graph (or one the capture forbids touching) takes the
      // torch copy: a pageable copy there is an error that would invalidate the capture
      if (g_driver.capturing(stream, &capture) != 0 || capture != 0) {
        ++g_driver.capturing_streams;
        impl = nullptr;
      }
    } else {
      ++g_driver.no_context;
    }
    if (impl != nullptr) {
      // the device block first: no at:: call (nothing a dispatch mode could run Python in)
      // between filling the reused buffer and the copy that consumes it
      stored = at::empty({nbytes}, at::TensorOptions().dtype(at::kByte).device(s->device));
      thread_local std::vector<int64_t> staging;
      staging.assign(s->base.begin(), s->base.end());
      int64_t* w = staging.data();
      for (size_t k = 0; k < s->words.size(); ++k) w[s->words[k]] = (int64_t)ptrs[s->sources[k]];
      if (!driver_copy_bytes((unsigned long long)(uintptr_t)stored.data_ptr(), w, (size_t)nbytes, stream))
        return nullptr;
    }
  }
  if (!stored.defined()) {  // the torch copy (and the CPU device's blocking copy)
    at::Tensor host = at::empty({nbytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(cuda));
    int64_t* w = reinterpret_cast<int64_t*>(host.data_ptr());
    std::memcpy(w, s->base.data(), (size_t)nbytes);
    for (size_t k = 0; k < s->words.size(); ++k) w[s->words[k]] = (int64_t)ptrs[s->sources[k]];
    stored = cuda ? host.to(s->device, at::kByte, /*non_blocking=*/true, /*copy=*/false)
                  : host.to(s->device, at::kByte, /*non_blocking=*/false, /*copy=*/true);
    if (cuda) ++g_driver.torch_copies;
  }
  if ((uintptr_t)stored.data_ptr() % 64) {
    PyErr_SetString(PyExc_RuntimeError, "seen-shape table block is not 64-byte aligned");
    return nullptr;
  }
  const int64_t at0 = stored.storage_offset();
  PyObject* pointers = THPVariable_Wrap(stored.view(at::kLong).as_strided(s->pointer_shape, s->pointer_strides, at0 / 8));
  if (pointers == nullptr) return nullptr;
  PyObject* aux = Py_None;
  if (s->has_aux) {
    aux = THPVariable_Wrap(stored.as_strided(s->aux_shape, s->aux_strides, at0 + s->aux_at));
    if (aux == nullptr) {
      Py_DECREF(pointers);
      return nullptr;
    }
  } else {
    Py_INCREF(aux);
  }
  PyObject* result = PyTuple_New(2);
  if (result == nullptr) {
    Py_DECREF(pointers);
    Py_DECREF(aux);
    return nullptr;
  }
  PyTuple_SET_ITEM(result, 0, pointers);
  PyTuple_SET_ITEM(result, 1, aux);
  return result;
  END_HANDLE_TH_ERRORS
}

// sizes_key(sizes): the size tuples themselves, as a tuple, when sizes is an exact list or tuple
// of exact tuples of exact ints (what kernel.seen_shapes.signature_key keys them by); else None
// (the Python function decides).
PyObject* sizes_key(PyObject*, PyObject* sizes) {
  if (!seq(sizes)) Py_RETURN_NONE;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(sizes);
  PyObject** items = PySequence_Fast_ITEMS(sizes);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyTuple_CheckExact(items[i])) Py_RETURN_NONE;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(items[i]); ++j)
      if (!PyLong_CheckExact(PyTuple_GET_ITEM(items[i], j))) Py_RETURN_NONE;
  }
  if (PyTuple_CheckExact(sizes)) {
    Py_INCREF(sizes);
    return sizes;
  }
  return PyList_AsTuple(sizes);
}

// refs(tensors, callback): (sum of the version counters, [weakref.ref(t, callback) for t in tensors])
// for an exact list of exact tensors whose counters are readable, else None (FastPath.store's
// Python code then decides: inference tensors have no counter).
PyObject* refs(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "refs(tensors, callback) takes 2 arguments");
    return nullptr;
  }
  PyObject* list = args[0];
  if (!PyList_CheckExact(list)) Py_RETURN_NONE;
  Py_ssize_t n = PyList_GET_SIZE(list);
  std::vector<PyObject*> tensors(PySequence_Fast_ITEMS(list), PySequence_Fast_ITEMS(list) + n);
  uint64_t versions = 0;
  for (PyObject* o : tensors) {
    if (!THPVariable_CheckExact(o)) Py_RETURN_NONE;
    try {
      versions += (uint64_t)THPVariable_Unpack(o)._version();
    } catch (...) {
      Py_RETURN_NONE;
    }
  }
  for (PyObject* o : tensors) Py_INCREF(o);  // held while weakrefs are made (they may run the GC)
  PyObject* out = PyList_New(n);
  for (Py_ssize_t i = 0; i < n && out != nullptr; ++i) {
    PyObject* r = PyWeakref_NewRef(tensors[i], args[1]);
    if (r == nullptr) {
      Py_CLEAR(out);
      break;
    }
    PyList_SET_ITEM(out, i, r);
  }
  for (PyObject* o : tensors) Py_DECREF(o);
  if (out == nullptr) return nullptr;
  PyObject* v = PyLong_FromUnsignedLongLong(versions);
  if (v == nullptr) {
    Py_DECREF(out);
    return nullptr;
  }
  PyObject* result = PyTuple_Pack(2, v, out);
  Py_DECREF(v);
  Py_DECREF(out);
  return result;
}

// metadata(tensors): the bytes kernel.fast_path.metadata returns for an exact list of exact
// tensors (or Parameters), when no torch function mode is active: native-endian int64 words,
// every tensor's data pointer, then every id(tensor.dtype) (the dtype singleton torch's
// getTHPDtype hands Python), every hash(tensor.device) (THPDevice's hash: std::hash<c10::Device>
// modulo PY_SSIZE_T_MAX), every number of dimensions, then all sizes and all strides. None for
// anything else (a subclass, a mode: Python code could answer differently there; no storage; a
// pointer at or past 2^63, which the Python array refuses): the Python function decides. No
// Python code runs during the pass (data_ptr may materialize a lazy copy, as Python's does).
PyObject* metadata(PyObject*, PyObject* list) {
  if (!PyList_CheckExact(list) || at::impl::torch_function_mode_enabled()) Py_RETURN_NONE;
  const Py_ssize_t n = PyList_GET_SIZE(list);
  std::vector<int64_t> head(4 * (size_t)n), sizes, strides;
  try {
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* o = PyList_GET_ITEM(list, i);
      if (!THPVariable_CheckExact(o)) Py_RETURN_NONE;
      const at::Tensor& t = THPVariable_Unpack(o);
      const uint64_t pointer = (uint64_t)(uintptr_t)t.data_ptr();
      if (pointer >> 63) Py_RETURN_NONE;
      head[i] = (int64_t)pointer;
      head[n + i] = (int64_t)(uintptr_t)torch::getTHPDtype(t.scalar_type());
      head[2 * n + i] =
          (int64_t)(std::hash<c10::Device>{}(t.device()) % (size_t)std::numeric_limits<Py_ssize_t>::max());
      head[3 * n + i] = t.dim();
      c10::IntArrayRef s = t.sizes(), st = t.strides();
      sizes.insert(sizes.end(), s.begin(), s.end());
      strides.insert(strides.end(), st.begin(), st.end());
    }
  } catch (...) {  // no storage, no strides (a sparse tensor): the Python function decides
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  const size_t words = head.size() + sizes.size() + strides.size();
  PyObject* out = PyBytes_FromStringAndSize(nullptr, (Py_ssize_t)(words * sizeof(int64_t)));
  if (out == nullptr) return nullptr;
  char* w = PyBytes_AS_STRING(out);
  std::memcpy(w, head.data(), head.size() * sizeof(int64_t));
  w += head.size() * sizeof(int64_t);
  if (!sizes.empty()) std::memcpy(w, sizes.data(), sizes.size() * sizeof(int64_t));
  w += sizes.size() * sizeof(int64_t);
  if (!strides.empty()) std::memcpy(w, strides.data(), strides.size() * sizeof(int64_t));
  return out;
}

// set_driver_copy(on): the seen-shape pass's driver copy on or off (kernel/native_probe.py: from
// NVFP4_DRIVER_COPY at load, and native_probe.driver_copy(on)); returns the previous setting.
PyObject* set_driver_copy(PyObject*, PyObject* on) {
  const int flag = PyObject_IsTrue(on);
  if (flag < 0) return nullptr;
  const bool before = g_driver.enabled;
  g_driver.enabled = flag != 0;
  return PyBool_FromLong(before);
}

// upload_status(resolve=False): the upload's state as a dict (enabled, resolved: None before the
// first CUDA upload tried libcuda, then True/False, reason, failed CUresult, and the counts of
// driver copies, torch copies, and driver copies not taken: no_context (not the device's context
// current), capturing (the stream under CUDA-graph capture)); resolve=True resolves libcuda now.
PyObject* upload_status(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "upload_status(resolve=False) takes at most 1 argument");
    return nullptr;
  }
  if (nargs == 1) {
    const int flag = PyObject_IsTrue(args[0]);
    if (flag < 0) return nullptr;
    if (flag) resolve_driver();
  }
  PyObject* resolved = g_driver.resolved == 0 ? Py_None : g_driver.resolved > 0 ? Py_True : Py_False;
  return Py_BuildValue("{s:O,s:O,s:s,s:i,s:K,s:K,s:K,s:K,s:s}", "enabled", g_driver.enabled ? Py_True : Py_False,
                       "resolved", resolved, "reason", g_driver.why.c_str(), "failed", g_driver.failed,
                       "driver_copies", g_driver.driver_copies, "torch_copies", g_driver.torch_copies,
                       "no_context", g_driver.no_context, "capturing", g_driver.capturing_streams,
                       "library", driver_library());
}

// _driver_copy_raw(dst, src, stream): the resolved cuMemcpyHtoDAsync_v2 on (dst address, the bytes
// of src, stream handle), through the seen pass's own call and error handling; for the tests
// (a fake libcuda on the CPU machines, a device buffer on a GPU). Returns True, or raises.
PyObject* driver_copy_raw(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyBytes_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_driver_copy_raw(dst: int, src: bytes, stream: int)");
    return nullptr;
  }
  const unsigned long long dst = PyLong_AsUnsignedLongLong(args[0]);
  if (PyErr_Occurred()) return nullptr;
  void* stream = PyLong_AsVoidPtr(args[2]);
  if (PyErr_Occurred()) return nullptr;
  if (!resolve_driver()) {
    PyErr_Format(PyExc_RuntimeError, "the driver copy is unavailable: %s", g_driver.why.c_str());
    return nullptr;
  }
  if (!driver_copy_bytes(dst, PyBytes_AS_STRING(args[1]), (size_t)PyBytes_GET_SIZE(args[1]), stream)) return nullptr;
  Py_RETURN_TRUE;
}

PyMethodDef methods[] = {
    {"probe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(probe)), METH_FASTCALL,
     "probe(data, config) -> (key bytes, sum of version counters, flat tensors) or None"},
    {"seen_state", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(seen_state)), METH_FASTCALL,
     "seen_state(...) -> capsule: one shape template's signature, address checks and table layout"},
    {"seen_tables", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(seen_tables)), METH_FASTCALL,
     "seen_tables(state, data, tensors) -> (pointer table, fourth table or None) or None"},
    {"sizes_key", sizes_key, METH_O, "sizes_key(sizes) -> tuple of the size tuples, or None"},
    {"refs", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(refs)), METH_FASTCALL,
     "refs(tensors, callback) -> (sum of version counters, weak references) or None"},
    {"metadata", metadata, METH_O, "metadata(tensors) -> bytes of pointers, dtypes, devices, sizes, strides, or None"},
    {"set_driver_copy", set_driver_copy, METH_O, "set_driver_copy(on) -> the previous setting"},
    {"upload_status", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(upload_status)), METH_FASTCALL,
     "upload_status(resolve=False) -> dict: the seen-shape upload's driver copy, its state and counts"},
    {"_driver_copy_raw", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(driver_copy_raw)),
     METH_FASTCALL, "_driver_copy_raw(dst, src, stream) -> True: the driver copy alone (tests)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "fast_probe", "The host fast path's native helpers.", -1,
                          methods};

}  // namespace

#define NVFP4_CAT2(a, b) a##b
#define NVFP4_CAT(a, b) NVFP4_CAT2(a, b)
PyMODINIT_FUNC NVFP4_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  module_def.m_name = Py_STRINGIFY(TORCH_EXTENSION_NAME);
  return PyModule_Create(&module_def);
}
