"""DLPack interop between dlbridge and real frameworks (NumPy, PyTorch), through the frameworks'
own DLPack entry points, with dlbridge loaded by ctypes: no compiled Python extension.

  framework -> dlbridge: x.__dlpack__() gives a capsule; dlbridge imports the DLManagedTensor in
      it (dlb_tensor_import_legacy), zero copy; freeing it in dlbridge runs the framework's deleter
      exactly once.
  dlbridge -> framework: a dlbridge tensor (or view) exported as a legacy DLManagedTensor in a
      "dltensor" capsule; numpy.from_dlpack / torch.utils.dlpack.from_dlpack take it, zero copy;
      dropping the framework's array runs dlbridge's deleter exactly once.

For every dtype both sides support: contiguous, strided, 0-d and empty tensors. Debian 12 has
NumPy 1.24 and PyTorch 1.13, which speak the legacy protocol only; where a framework accepts
max_version (DLPack >= 1.0 protocol), the versioned exchange runs too.

Usage: test_frameworks.py LIBDLBRIDGE_SO. Exits 77 when no framework is importable. The last line
is "N passed, N failed, N skipped".
"""
import ctypes
import gc
import sys
import traceback

# The DLPack structs, the capsule API and the capsule helpers (Exported, DeleterSpy) live in
# dlpack_capsules.py beside this file, shared with the conformance kit's Python subject.
from dlpack_capsules import (
    DLDataType, DLDevice, DLManagedTensor, DeleterSpy, Exported, K_DL_CPU, LEGACY_DELETER, LegacyP,
    NAME_LEGACY, NAME_USED, NAME_USED_VERSIONED, NAME_VERSIONED, VERSIONED_DELETER, VersionedP, api)


class DlbError(ctypes.Structure):
    _fields_ = [("message", ctypes.c_char * 512)]


# ---- dlbridge through ctypes ----------------------------------------------------------------

lib = ctypes.CDLL(sys.argv[1])
lib.dlb_tensor_allocate.argtypes = [DLDevice, DLDataType, ctypes.c_int32,
                                    ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                                    ctypes.c_uint64, ctypes.POINTER(VersionedP),
                                    ctypes.POINTER(DlbError)]
lib.dlb_tensor_import_legacy.argtypes = [LegacyP, ctypes.POINTER(VersionedP), ctypes.POINTER(DlbError)]
lib.dlb_tensor_import.argtypes = [VersionedP, ctypes.POINTER(VersionedP), ctypes.POINTER(DlbError)]
lib.dlb_tensor_export_legacy.argtypes = [VersionedP, ctypes.POINTER(LegacyP), ctypes.POINTER(DlbError)]
lib.dlb_tensor_free.argtypes = [VersionedP]
lib.dlb_tensor_free.restype = None
lib.dlb_tensor_live_count.restype = ctypes.c_int64
lib.dlb_tensor_copy.argtypes = [VersionedP, DLDevice, ctypes.POINTER(VersionedP), ctypes.POINTER(DlbError)]
lib.dlb_tensor_slice.argtypes = [VersionedP, ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(VersionedP),
                                 ctypes.POINTER(DlbError)]
lib.dlb_tensor_select.argtypes = [VersionedP, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(VersionedP),
                                  ctypes.POINTER(DlbError)]
lib.dlb_tensor_transpose.argtypes = [VersionedP, ctypes.POINTER(VersionedP), ctypes.POINTER(DlbError)]
lib.dlb_tensor_host_data.argtypes = [VersionedP, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(DlbError)]
lib.dlb_tensor_share.argtypes = [VersionedP, ctypes.c_uint64, ctypes.POINTER(VersionedP),
                                 ctypes.POINTER(DlbError)]


class DlbFailure(Exception):
    pass


def check(status, err):
    if status != 0:
        raise DlbFailure(f"status {status}: {err.message.decode()}")


class Slice(ctypes.Structure):
    _fields_ = [("start", ctypes.c_int64), ("stop", ctypes.c_int64), ("step", ctypes.c_int64)]


SLICE_NONE = -(2 ** 63)

# The Python C API for capsules.
# ---- the test runner ------------------------------------------------------------------------

results = {"passed": 0, "failed": 0, "skipped": 0}


def run(name, fn):
    try:
        outcome = fn()
    except Exception:  # noqa: BLE001 - report every failure, keep going
        results["failed"] += 1
        print(f"FAILED  {name}")
        traceback.print_exc()
        return
    if outcome == "skip":
        results["skipped"] += 1
        print(f"skipped {name}")
    else:
        results["passed"] += 1
        print(f"ok      {name}")


def shape_of(t):
    return tuple(t.shape[i] for i in range(t.ndim))


def strides_of(t):
    return tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None


def first_element(managed):
    t = managed.contents.dl_tensor
    return (t.data or 0) + t.byte_offset


# ---- NumPy and PyTorch adapters ---------------------------------------------------------------

frameworks = {}
try:
    import numpy as np

    frameworks["numpy"] = np
except ImportError:
    np = None
try:
    import torch
    import torch.utils.dlpack

    frameworks["torch"] = torch
except ImportError:
    torch = None

# (dlpack code, bits) of the dtypes each framework exchanges through DLPack.
NUMPY_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"]
TORCH_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
                "float64", "complex64", "complex128", "bool"]
DTYPE_CODES = {
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
    "complex64": (5, 64), "complex128": (5, 128), "bool": (6, 8),
}


def numpy_sample(dtype_name, shape):
    count = int(np.prod(shape)) if shape else 1
    values = (np.arange(count) % 7 + 1).reshape(shape)
    return values.astype(dtype_name)


def torch_sample(dtype_name, shape):
    count = 1
    for e in shape:
        count *= e
    values = (torch.arange(count) % 7 + 1).reshape(shape)
    return values.to(getattr(torch, dtype_name))


def framework_layouts(make):
    """(label, tensor) pairs: contiguous, strided, 0-d and empty."""
    base = make((4, 6))
    return [
        ("contiguous", make((3, 5))),
        ("strided", base[:, ::2]),
        ("transposed", base.T if hasattr(base, "T") else base.t()),
        ("0-d", make(())),
        ("empty", make((0, 3))),
    ]


def data_pointer(x):
    if np is not None and isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    return x.data_ptr()


def element_strides(x):
    if np is not None and isinstance(x, np.ndarray):
        return tuple(s // x.itemsize for s in x.strides)
    return tuple(x.stride())


def to_bytes(x):
    if np is not None and isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).tobytes()
    y = x.contiguous()
    if y.dtype == torch.bfloat16:
        y = y.view(torch.int16)
    return y.numpy().tobytes() if y.numel() else b""


# ---- framework -> dlbridge -------------------------------------------------------------------


def framework_to_dlbridge(x, dtype_name, versioned=False):
    live = lib.dlb_tensor_live_count()
    out = VersionedP()
    err = DlbError()
    if versioned:
        capsule = x.__dlpack__(max_version=(1, 0))
        assert api.PyCapsule_IsValid(capsule, NAME_VERSIONED), "not a dltensor_versioned capsule"
        managed = ctypes.cast(api.PyCapsule_GetPointer(capsule, NAME_VERSIONED), VersionedP)
        spy = DeleterSpy(managed, VERSIONED_DELETER)
        # The consumer owns the tensor now; the capsule must not free it.
        assert api.PyCapsule_SetName(capsule, NAME_USED_VERSIONED) == 0
        check(lib.dlb_tensor_import(managed, ctypes.byref(out), ctypes.byref(err)), err)
    else:
        capsule = x.__dlpack__()
        managed = ctypes.cast(api.PyCapsule_GetPointer(capsule, NAME_LEGACY), LegacyP)
        spy = DeleterSpy(managed, LEGACY_DELETER)
        assert api.PyCapsule_SetName(capsule, NAME_USED) == 0
        check(lib.dlb_tensor_import_legacy(managed, ctypes.byref(out), ctypes.byref(err)), err)
    t = out.contents.dl_tensor
    code, bits = DTYPE_CODES[dtype_name]
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (code, bits, 1), (t.dtype.code, t.dtype.bits)
    assert shape_of(t) == tuple(x.shape), (shape_of(t), x.shape)
    if t.ndim and strides_of(t) is not None and all(e > 1 for e in x.shape):
        assert strides_of(t) == element_strides(x), (strides_of(t), element_strides(x))
    assert (t.device.device_type, t.device.device_id) == (K_DL_CPU, 0)
    count = 1
    for e in x.shape:
        count *= e
    if count:
        assert first_element(out) == data_pointer(x), "not zero-copy"
        # The values, read by dlbridge through its own strided copy.
        copy = VersionedP()
        check(lib.dlb_tensor_copy(out, DLDevice(K_DL_CPU, 0), ctypes.byref(copy), ctypes.byref(err)), err)
        data = ctypes.c_void_p()
        size = ctypes.c_uint64()
        check(lib.dlb_tensor_host_data(copy, 0, ctypes.byref(data), ctypes.byref(size), ctypes.byref(err)), err)
        got = ctypes.string_at(data.value, size.value)
        lib.dlb_tensor_free(copy)
        assert got == to_bytes(x), "values differ"
    assert spy.calls == 0
    lib.dlb_tensor_free(out)
    assert spy.calls == 1, f"deleter ran {spy.calls} times"
    del capsule
    gc.collect()
    assert spy.calls == 1
    assert lib.dlb_tensor_live_count() == live


# ---- dlbridge -> framework -------------------------------------------------------------------


def dlbridge_tensor(dtype_name, shape):
    code, bits = DTYPE_CODES[dtype_name]
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    out = VersionedP()
    err = DlbError()
    check(lib.dlb_tensor_allocate(DLDevice(K_DL_CPU, 0), DLDataType(code, bits, 1), len(shape), dims,
                                  None, 0, ctypes.byref(out), ctypes.byref(err)), err)
    data = ctypes.c_void_p()
    size = ctypes.c_uint64()
    check(lib.dlb_tensor_host_data(out, 1, ctypes.byref(data), ctypes.byref(size), ctypes.byref(err)), err)
    itemsize = bits // 8
    count = size.value // itemsize if itemsize else 0
    # Element i holds the pattern (i % 7 + 1), written byte by byte in the dtype's width: a value
    # that every dtype represents exactly (float, complex, bfloat16 included) would need a
    # converter per dtype, so the comparison below reads the same bytes back instead.
    raw = bytearray(size.value)
    for i in range(count):
        raw[i * itemsize] = (i % 7 + 1) if dtype_name != "bool" else 1
    ctypes.memmove(data, bytes(raw), len(raw))
    return out


def views_of(base, shape):
    """(label, view) pairs of a dlbridge 2-d tensor; the caller frees them."""
    err = DlbError()
    views = []
    row = VersionedP()
    check(lib.dlb_tensor_select(base, 0, 1, ctypes.byref(row), ctypes.byref(err)), err)
    views.append(("select (offset view)", row))
    scalar = VersionedP()
    check(lib.dlb_tensor_select(row, 0, 2, ctypes.byref(scalar), ctypes.byref(err)), err)
    views.append(("0-d element", scalar))
    transposed = VersionedP()
    check(lib.dlb_tensor_transpose(base, ctypes.byref(transposed), ctypes.byref(err)), err)
    views.append(("transposed", transposed))
    slices = (Slice * 2)(Slice(1, SLICE_NONE, 1), Slice(SLICE_NONE, SLICE_NONE, 2))
    strided = VersionedP()
    check(lib.dlb_tensor_slice(base, 2, ctypes.cast(slices, ctypes.c_void_p), ctypes.byref(strided),
                               ctypes.byref(err)), err)
    views.append(("strided slice", strided))
    empty_slices = (Slice * 1)(Slice(2, 2, 1))
    empty = VersionedP()
    check(lib.dlb_tensor_slice(base, 1, ctypes.cast(empty_slices, ctypes.c_void_p), ctypes.byref(empty),
                               ctypes.byref(err)), err)
    views.append(("empty", empty))
    return views


def expected_bytes(t, itemsize):
    """The tensor's elements in C order, read element by element through its own layout."""
    shape = shape_of(t)
    strides = strides_of(t)
    first = (t.data or 0) + t.byte_offset
    out = bytearray()
    index = [0] * len(shape)
    count = 1
    for e in shape:
        count *= e
    for _ in range(count):
        offset = sum(i * s for i, s in zip(index, strides)) * itemsize
        out += ctypes.string_at(first + offset, itemsize)
        for d in reversed(range(len(shape))):
            index[d] += 1
            if index[d] < shape[d]:
                break
            index[d] = 0
    return bytes(out)


def dlbridge_to_framework(name, view, dtype_name):
    err = DlbError()
    live = lib.dlb_tensor_live_count()
    t = view.contents.dl_tensor
    itemsize = DTYPE_CODES[dtype_name][1] // 8
    want = expected_bytes(t, itemsize)
    want_shape = shape_of(t)
    want_strides = strides_of(t)
    want_first = first_element(view)
    # The framework takes a reference of its own; the caller's view stays the caller's.
    share = VersionedP()
    check(lib.dlb_tensor_share(view, 0, ctypes.byref(share), ctypes.byref(err)), err)
    legacy = LegacyP()
    check(lib.dlb_tensor_export_legacy(share, ctypes.byref(legacy), ctypes.byref(err)), err)
    # Offered at once: if a check below fails, the unconsumed capsule frees the export.
    offer = Exported(legacy)
    exported = legacy.contents.dl_tensor
    count = 1
    for e in want_shape:
        count *= e
    if count:
        # Every consumer must find the first element at `data`: some (PyTorch 1.13) ignore
        # byte_offset, so dlbridge folds it into `data` for address-based devices.
        assert exported.byte_offset == 0, f"byte_offset {exported.byte_offset} in an exported CPU tensor"
        assert exported.data == want_first
    if name == "numpy":
        x = np.from_dlpack(offer)
    else:
        x = torch.utils.dlpack.from_dlpack(offer.__dlpack__())
    del offer
    assert tuple(x.shape) == want_shape, (tuple(x.shape), want_shape)
    if count:
        assert data_pointer(x) == want_first, "not zero-copy"
        if all(e > 1 for e in want_shape):
            assert element_strides(x) == want_strides, (element_strides(x), want_strides)
    assert to_bytes(x) == want, "values differ"
    assert lib.dlb_tensor_live_count() == live + 1
    del x
    gc.collect()
    assert lib.dlb_tensor_live_count() == live, "dlbridge's deleter did not run exactly once"


def main():
    if not frameworks:
        print("neither numpy nor torch is importable: skipped")
        print("0 passed, 0 failed, 1 skipped")
        sys.exit(77)
    start = lib.dlb_tensor_live_count()
    for name, module in frameworks.items():
        print(f"{name} {module.__version__}")
        dtypes = NUMPY_DTYPES if name == "numpy" else TORCH_DTYPES
        make = numpy_sample if name == "numpy" else torch_sample
        supported = []
        for dtype_name in dtypes:
            # "Every dtype both support": a framework version that cannot export a dtype through
            # DLPack (PyTorch 1.13 and bool) is reported, not failed.
            try:
                probe = make(dtype_name, (1,)).__dlpack__()
                del probe
            except (RuntimeError, TypeError, BufferError) as refusal:
                run(f"{name} {module.__version__} has no DLPack {dtype_name} ({refusal})", lambda: "skip")
                continue
            supported.append(dtype_name)
        dtypes = supported
        for dtype_name in dtypes:
            for label, x in framework_layouts(lambda shape: make(dtype_name, shape)):
                run(f"{name} -> dlbridge, {dtype_name}, {label}",
                    lambda x=x, d=dtype_name: framework_to_dlbridge(x, d))
            base = dlbridge_tensor(dtype_name, (4, 6))
            views = [("contiguous", base)] + views_of(base, (4, 6))
            for label, view in views:
                run(f"dlbridge -> {name}, {dtype_name}, {label}",
                    lambda n=name, v=view, d=dtype_name, l=label: dlbridge_to_framework(n, v, d))
            for _, view in views:
                lib.dlb_tensor_free(view)
        # The versioned protocol (DLPack >= 1.0) where the framework speaks it.
        probe = make("float32", (2,))
        try:
            probe.__dlpack__(max_version=(1, 0))
        except TypeError:
            print(f"{name} {module.__version__} has no versioned DLPack protocol (max_version)")
            run(f"{name} -> dlbridge, versioned protocol", lambda: "skip")
        else:
            for dtype_name in dtypes:
                for label, x in framework_layouts(lambda shape: make(dtype_name, shape)):
                    run(f"{name} -> dlbridge (versioned), {dtype_name}, {label}",
                        lambda x=x, d=dtype_name: framework_to_dlbridge(x, d, versioned=True))
    gc.collect()
    run("live dlbridge tensors back to the start", lambda: None if lib.dlb_tensor_live_count() == start
        else (_ for _ in ()).throw(AssertionError(f"{lib.dlb_tensor_live_count() - start} leaked")))
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
