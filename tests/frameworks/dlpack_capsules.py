"""The DLPack structs and the Python capsule protocol through ctypes, shared by the tests that
exchange tensors with Python frameworks without a compiled extension (tests/frameworks, the
conformance kit's Python subject).

  - the ctypes mirrors of DLDevice, DLDataType, DLTensor, DLManagedTensor(Versioned);
  - the PyCapsule functions (ctypes.pythonapi), the protocol's capsule names, and destructors
    that run the deleter of a capsule nobody consumed (legacy and versioned);
  - Exported: an object with __dlpack__ / __dlpack_device__ offering one capsule;
  - DeleterSpy: counts a producer's deleter calls and chains to the original.
"""
import ctypes

# ---- the DLPack structs ---------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", LEGACY_DELETER),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", VERSIONED_DELETER),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


VersionedP = ctypes.POINTER(DLManagedTensorVersioned)
LegacyP = ctypes.POINTER(DLManagedTensor)
K_DL_CPU = 1
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2
FLAG_IS_SUBBYTE_TYPE_PADDED = 4

api = ctypes.pythonapi
# The destructor gets the dying capsule as a raw pointer: as a py_object, ctypes would take and
# drop a reference to an object whose count already reached zero, and free it a second time.
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Capsule names must outlive the capsules: module-level constants.
NAME_LEGACY = b"dltensor"
NAME_USED = b"used_dltensor"
NAME_VERSIONED = b"dltensor_versioned"
NAME_USED_VERSIONED = b"used_dltensor_versioned"


# The same two functions, for the raw pointer a destructor holds.
capsule_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", api))
capsule_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", api))


@CAPSULE_DESTRUCTOR
def legacy_capsule_destructor(capsule):
    # The protocol: a capsule still named "dltensor" was never consumed; its deleter runs here.
    if capsule_is_valid_raw(capsule, NAME_LEGACY):
        managed = ctypes.cast(capsule_get_pointer_raw(capsule, NAME_LEGACY), LegacyP)
        if managed.contents.deleter:
            managed.contents.deleter(managed)


@CAPSULE_DESTRUCTOR
def versioned_capsule_destructor(capsule):
    # The same for an unconsumed "dltensor_versioned" capsule.
    if capsule_is_valid_raw(capsule, NAME_VERSIONED):
        managed = ctypes.cast(capsule_get_pointer_raw(capsule, NAME_VERSIONED), VersionedP)
        if managed.contents.deleter:
            managed.contents.deleter(managed)


class Exported:
    """A managed tensor offered to a framework through __dlpack__: a legacy DLManagedTensor in a
    "dltensor" capsule, or with versioned=True a DLManagedTensorVersioned in a "dltensor_versioned"
    capsule, which only a consumer asking with max_version >= (1, 0) gets (others get BufferError).
    Ownership: the offer owns the tensor until a consumer takes the capsule and renames it; a
    capsule nobody consumed runs the tensor's deleter when it dies. `asked` records the consumer's
    max_version."""

    def __init__(self, managed_ptr, versioned=False):
        self.versioned = versioned
        self.asked = None
        self.handed = None
        name, destructor = ((NAME_VERSIONED, versioned_capsule_destructor) if versioned
                            else (NAME_LEGACY, legacy_capsule_destructor))
        self.capsule = api.PyCapsule_New(ctypes.cast(managed_ptr, ctypes.c_void_p), name, destructor)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        self.asked = max_version
        if self.versioned and (max_version is None or max_version[0] < 1):
            raise BufferError("a versioned DLPack tensor is offered; the consumer did not ask for "
                              "max_version >= (1, 0)")
        capsule, self.capsule = self.capsule, None
        # Kept: if the consumer refuses the tensor, its capsule must not die inside the consumer
        # while the consumer's exception is pending (a Python destructor cannot run then).
        self.handed = capsule
        return capsule

    def settle(self):
        """After a consumer refused: deletes the tensor (once) if nobody consumed its capsule, and
        renames the capsule so that its destructor does nothing. Returns 1 if it deleted."""
        capsule = self.handed if self.handed is not None else self.capsule
        if capsule is None:
            return 0
        for name, used, pointer_type in ((NAME_LEGACY, NAME_USED, LegacyP),
                                         (NAME_VERSIONED, NAME_USED_VERSIONED, VersionedP)):
            if api.PyCapsule_IsValid(capsule, name):
                managed = ctypes.cast(api.PyCapsule_GetPointer(capsule, name), pointer_type)
                api.PyCapsule_SetName(capsule, used)
                # Only `deleter` is read: a versioned struct of another major keeps it in place.
                if managed.contents.deleter:
                    managed.contents.deleter(managed)
                return 1
        return 0

    def __dlpack_device__(self):
        return (K_DL_CPU, 0)


class DeleterSpy:
    """Replaces a producer's deleter with one that counts its calls and chains to the original."""

    def __init__(self, managed_ptr, deleter_type):
        self.calls = 0
        # A new function object from the address: reading the field would alias the struct,
        # and see our replacement.
        address = ctypes.cast(managed_ptr.contents.deleter, ctypes.c_void_p).value
        self.original = deleter_type(address)

        def counting(self_ptr):
            self.calls += 1
            self.original(self_ptr)

        self.callback = deleter_type(counting)
        managed_ptr.contents.deleter = self.callback
