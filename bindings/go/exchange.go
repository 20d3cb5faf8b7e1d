package dlbridge

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// ExportVersioned hands the tensor to a DLPack consumer as a DLManagedTensorVersioned*: the
// consumer now owns it and must call its deleter exactly once (from any thread). The Tensor is
// moved out and reads as closed afterwards (Share first to keep a reference of your own).
// Errors: ErrClosed.
func (t *Tensor) ExportVersioned() (unsafe.Pointer, error) {
	addr, ok := t.claimExclusive()
	if !ok {
		return nil, ErrClosed
	}
	t.endExclusive(true)
	return addrToPtr(addr), nil
}

// ExportLegacy hands the tensor to a consumer of DLPack < 1.0 as a DLManagedTensor*, which the
// consumer now owns (its deleter frees it exactly once). On success the Tensor is moved out and
// reads as closed. On error (the core's: a READ_ONLY tensor is refused with StatusReadOnly, the
// legacy struct has no flags) nothing changes and the caller still owns the Tensor.
func (t *Tensor) ExportLegacy() (unsafe.Pointer, error) {
	addr, ok := t.claimExclusive()
	if !ok {
		return nil, ErrClosed
	}
	out, err := check(capi.Dlb_tensor_export_legacy(addr))
	t.endExclusive(err == nil)
	if err != nil {
		return nil, err
	}
	return addrToPtr(out), nil
}

// ImportVersioned takes a DLManagedTensorVersioned* from a producer. The tensor is consumed in
// every case: on success the new Tensor owns it (Close runs its deleter once); on error its
// deleter has already run (a major version other than 1 gets the deleter only, and
// StatusUnsupportedVersion). A nil pointer is an error with nothing to free.
func ImportVersioned(p unsafe.Pointer) (*Tensor, error) {
	return fromResult(capi.Dlb_tensor_import(int64(uintptr(p))))
}

// ImportLegacy takes a DLManagedTensor* (DLPack < 1.0) from a producer; consumed in every case,
// as ImportVersioned.
func ImportLegacy(p unsafe.Pointer) (*Tensor, error) {
	return fromResult(capi.Dlb_tensor_import_legacy(int64(uintptr(p))))
}

// FreeVersioned calls a DLManagedTensorVersioned's deleter (when not NULL) once; nil is a no-op.
// For tensors a Go program received and will not import.
func FreeVersioned(p unsafe.Pointer) { capi.Dlb_tensor_free(int64(uintptr(p))) }

// FreeLegacy is FreeVersioned for a legacy DLManagedTensor.
func FreeLegacy(p unsafe.Pointer) { capi.Dlb_tensor_free_legacy(int64(uintptr(p))) }
