// Package ctest is the C side of the dlbridge Go tests and of the Go parity program
// (adapter/parity, a subcommand of the adapter's program): the shared foreign DLPack producer
// and consumer (tests/foreign/foreign_dlpack.c, no dlbridge inside), a producer of tensors with arbitrary
// fields for the fuzz target, and the C loops the benchmark compares with. Test files cannot
// use cgo, so the tests reach C through this package. Not part of the public API; it builds
// inside the dlbridge repository only (it compiles a file of tests/).
package ctest

/*
#cgo pkg-config: dlbridge
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/foreign
#cgo LDFLAGS: -lpthread
#include <stdlib.h>
#include "ctest.h"
#include "foreign_dlpack.h"
*/
import "C"

import "unsafe"

// DeleterCalls is how many deleters of tensors made here (MakeVersioned, MakeLegacy, MakeRaw)
// have run.
func DeleterCalls() int64 {
	return int64(C.foreign_dlpack_deleted_count()) + int64(C.ctest_raw_deleter_calls())
}

// MakeVersioned returns the foreign producer's DLManagedTensorVersioned* of n float32 values
// 0..n-1, stamped with DLPack major.minor and flags.
func MakeVersioned(n int64, major, minor uint32, flags uint64) unsafe.Pointer {
	return addrToPtr(int64(C.foreign_dlpack_produce_versioned(C.int64_t(n), C.int32_t(major), C.int32_t(minor),
		C.int64_t(flags))))
}

// MakeLegacy returns the foreign producer's DLManagedTensor* of n float32 values 0..n-1.
func MakeLegacy(n int64) unsafe.Pointer {
	return addrToPtr(int64(C.foreign_dlpack_produce_legacy(C.int64_t(n))))
}

// Raw describes a versioned tensor with arbitrary fields (for fuzzing).
type Raw struct {
	Major, Minor         uint32
	DeviceType, DeviceID int32
	Shape                []int64
	Strides              []int64 // nil: NULL strides
	Code, Bits           uint8
	Lanes                uint16
	ByteOffset, Flags    uint64
	HasData              bool
	BufferBytes          uint64
}

// MakeRaw returns a DLManagedTensorVersioned* built from r.
func MakeRaw(r Raw) unsafe.Pointer {
	var shape, strides *C.int64_t
	if len(r.Shape) > 0 {
		shape = (*C.int64_t)(unsafe.Pointer(&r.Shape[0]))
	}
	hasStrides := 0
	if r.Strides != nil {
		hasStrides = 1
		if len(r.Strides) > 0 {
			strides = (*C.int64_t)(unsafe.Pointer(&r.Strides[0]))
		}
	}
	hasData := 0
	if r.HasData {
		hasData = 1
	}
	return unsafe.Pointer(C.ctest_make_raw(C.uint32_t(r.Major), C.uint32_t(r.Minor), C.int32_t(r.DeviceType),
		C.int32_t(r.DeviceID), C.int32_t(len(r.Shape)), shape, C.int(hasStrides), strides, C.uint8_t(r.Code),
		C.uint8_t(r.Bits), C.uint16_t(r.Lanes), C.uint64_t(r.ByteOffset), C.uint64_t(r.Flags), C.int(hasData),
		C.uint64_t(r.BufferBytes)))
}

// ConsumeVersionedOnThread is the foreign consumer: it takes a DLManagedTensorVersioned*, sums
// its float32 elements and calls its deleter on a new C thread.
func ConsumeVersionedOnThread(p unsafe.Pointer) float64 {
	return float64(C.foreign_dlpack_consume_on_new_thread(C.int64_t(uintptr(p)), 0))
}

// ConsumeLegacyOnThread is ConsumeVersionedOnThread for a legacy tensor.
func ConsumeLegacyOnThread(p unsafe.Pointer) float64 {
	return float64(C.foreign_dlpack_consume_on_new_thread(C.int64_t(uintptr(p)), 1))
}

// Malloc returns C memory of at least one byte; Free frees it.
func Malloc(bytes uint64) unsafe.Pointer {
	if bytes == 0 {
		bytes = 1
	}
	return C.malloc(C.size_t(bytes))
}

// Free frees what Malloc returned.
func Free(p unsafe.Pointer) { C.free(p) }

// BenchAllocateFree is the C column of the benchmark: nanoseconds per cycle of the same work in
// a C loop (allocate 4x4 float32 + free).
func BenchAllocateFree(n int64) float64 { return float64(C.ctest_bench_allocate_free(C.int64_t(n))) }

// BenchWrapFree: dlb_tensor_wrap_buffer (no release function) + dlb_tensor_free.
func BenchWrapFree(n int64) float64 { return float64(C.ctest_bench_wrap_free(C.int64_t(n))) }

// BenchWrapReleaseFree: the same with a release function.
func BenchWrapReleaseFree(n int64) float64 {
	return float64(C.ctest_bench_wrap_release_free(C.int64_t(n)))
}

// BenchExportImportVersioned: allocate, import the versioned pointer back, free.
func BenchExportImportVersioned(n int64) float64 {
	return float64(C.ctest_bench_export_import_versioned(C.int64_t(n)))
}

// BenchExportImportLegacy: allocate, export legacy, import legacy, free.
func BenchExportImportLegacy(n int64) float64 {
	return float64(C.ctest_bench_export_import_legacy(C.int64_t(n)))
}

// Empty is one bare cgo call of an empty C function.
func Empty() { C.ctest_empty() }

// addrToPtr turns an address of C memory into an unsafe.Pointer.
func addrToPtr(addr int64) unsafe.Pointer {
	a := uintptr(addr)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}
