//! ABI layout checks written from the DLPack facts (sizes and offsets on 64-bit targets), not from
//! what bindgen computed: if the generated structs ever drift from the standard, these fail.
#![cfg(target_pointer_width = "64")]

use dlbridge_sys::*;
use std::mem::{align_of, offset_of, size_of};

#[test]
fn dlpack_version() {
    assert_eq!(size_of::<DLPackVersion>(), 8);
    assert_eq!(align_of::<DLPackVersion>(), 4);
    assert_eq!(offset_of!(DLPackVersion, major), 0);
    assert_eq!(offset_of!(DLPackVersion, minor), 4);
}

#[test]
fn device() {
    assert_eq!(size_of::<DLDeviceType>(), 4);
    assert_eq!(size_of::<DLDevice>(), 8);
    assert_eq!(align_of::<DLDevice>(), 4);
    assert_eq!(offset_of!(DLDevice, device_type), 0);
    assert_eq!(offset_of!(DLDevice, device_id), 4);
}

#[test]
fn data_type() {
    assert_eq!(size_of::<DLDataType>(), 4);
    assert_eq!(align_of::<DLDataType>(), 2);
    assert_eq!(offset_of!(DLDataType, code), 0);
    assert_eq!(offset_of!(DLDataType, bits), 1);
    assert_eq!(offset_of!(DLDataType, lanes), 2);
}

#[test]
fn tensor() {
    assert_eq!(size_of::<DLTensor>(), 48);
    assert_eq!(align_of::<DLTensor>(), 8);
    assert_eq!(offset_of!(DLTensor, data), 0);
    assert_eq!(offset_of!(DLTensor, device), 8);
    assert_eq!(offset_of!(DLTensor, ndim), 16);
    assert_eq!(offset_of!(DLTensor, dtype), 20);
    assert_eq!(offset_of!(DLTensor, shape), 24);
    assert_eq!(offset_of!(DLTensor, strides), 32);
    assert_eq!(offset_of!(DLTensor, byte_offset), 40);
}

#[test]
fn managed_tensor_legacy() {
    assert_eq!(size_of::<DLManagedTensor>(), 64);
    assert_eq!(align_of::<DLManagedTensor>(), 8);
    assert_eq!(offset_of!(DLManagedTensor, dl_tensor), 0);
    assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
    assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
}

#[test]
fn managed_tensor_versioned() {
    assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
    assert_eq!(align_of::<DLManagedTensorVersioned>(), 8);
    assert_eq!(offset_of!(DLManagedTensorVersioned, version), 0);
    assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
    assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
    assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
    assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
}

#[test]
fn exchange_api() {
    assert_eq!(size_of::<DLPackExchangeAPIHeader>(), 16);
    assert_eq!(offset_of!(DLPackExchangeAPIHeader, version), 0);
    assert_eq!(offset_of!(DLPackExchangeAPIHeader, prev_api), 8);
    assert_eq!(size_of::<DLPackExchangeAPI>(), 56);
    assert_eq!(offset_of!(DLPackExchangeAPI, header), 0);
    assert_eq!(offset_of!(DLPackExchangeAPI, managed_tensor_allocator), 16);
    assert_eq!(
        offset_of!(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync),
        24
    );
    assert_eq!(
        offset_of!(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync),
        32
    );
    assert_eq!(
        offset_of!(DLPackExchangeAPI, dltensor_from_py_object_no_sync),
        40
    );
    assert_eq!(offset_of!(DLPackExchangeAPI, current_work_stream), 48);
    // Nullable function pointers are pointer-sized (Option<fn> uses the null niche).
    assert_eq!(size_of::<DLPackManagedTensorAllocator>(), 8);
}

#[test]
fn dlbridge_structs() {
    assert_eq!(size_of::<dlb_library_version>(), 12);
    assert_eq!(size_of::<dlb_error>(), DLB_ERROR_MESSAGE_SIZE as usize);
    assert_eq!(size_of::<dlb_slice>(), 24);
    assert_eq!(offset_of!(dlb_slice, start), 0);
    assert_eq!(offset_of!(dlb_slice, stop), 8);
    assert_eq!(offset_of!(dlb_slice, step), 16);
    assert_eq!(offset_of!(dlb_backend, struct_size), 0);
    assert_eq!(offset_of!(dlb_backend, device_type), 8);
    assert_eq!(offset_of!(dlb_backend, name), 16);
    assert_eq!(offset_of!(dlb_backend, ctx), 24);
    assert_eq!(offset_of!(dlb_backend, allocate), 32);
    assert_eq!(offset_of!(dlb_backend, destroy), 72);
    assert_eq!(offset_of!(dlb_backend, check_memory), 80);
    assert_eq!(size_of::<dlb_backend>(), 88);
}

#[test]
fn codes_and_flags() {
    // Device types (5 and 6 are unused by DLPack).
    let devices = [
        (kDLCPU, 1),
        (kDLCUDA, 2),
        (kDLCUDAHost, 3),
        (kDLOpenCL, 4),
        (kDLVulkan, 7),
        (kDLMetal, 8),
        (kDLVPI, 9),
        (kDLROCM, 10),
        (kDLROCMHost, 11),
        (kDLExtDev, 12),
        (kDLCUDAManaged, 13),
        (kDLOneAPI, 14),
        (kDLWebGPU, 15),
        (kDLHexagon, 16),
        (kDLMAIA, 17),
        (kDLTrn, 18),
        (kDLTPU, 19),
        (kDLTPUHost, 20),
    ];
    for (got, want) in devices {
        assert_eq!(got, want);
    }
    let codes = [
        (kDLInt, 0),
        (kDLUInt, 1),
        (kDLFloat, 2),
        (kDLOpaqueHandle, 3),
        (kDLBfloat, 4),
        (kDLComplex, 5),
        (kDLBool, 6),
        (kDLFloat8_e3m4, 7),
        (kDLFloat8_e4m3, 8),
        (kDLFloat8_e4m3b11fnuz, 9),
        (kDLFloat8_e4m3fn, 10),
        (kDLFloat8_e4m3fnuz, 11),
        (kDLFloat8_e5m2, 12),
        (kDLFloat8_e5m2fnuz, 13),
        (kDLFloat8_e8m0fnu, 14),
        (kDLFloat6_e2m3fn, 15),
        (kDLFloat6_e3m2fn, 16),
        (kDLFloat4_e2m1fn, 17),
        (kDLBcomplex, 18),
    ];
    for (got, want) in codes {
        assert_eq!(got, want);
    }
    assert_eq!(DLPACK_FLAG_BITMASK_READ_ONLY, 1);
    assert_eq!(DLPACK_FLAG_BITMASK_IS_COPIED, 2);
    assert_eq!(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 4);
    assert_eq!(DLPACK_MAJOR_VERSION, 1);
    assert_eq!(DLB_SLICE_NONE, i64::MIN);
    assert_eq!(DLB_CUDA_STREAM_NONE, i64::MIN);
}

/// The boundary's types: every fallible function returns a 32-bit dlb_status, sizes are
/// uint64_t, codes int32_t. A signature change in the header makes this fail to compile.
#[test]
fn boundary_signatures() {
    let _: dlb_status = 0i32;
    let _: unsafe extern "C" fn(i32, *const i64, *mut i64, *mut dlb_error) -> dlb_status =
        dlb_shape_element_count;
    let _: unsafe extern "C" fn(*const DLTensor, i32, *mut i64, *mut dlb_error) -> dlb_status =
        dlb_tensor_get_shape;
    let _: unsafe extern "C" fn(*const DLTensor, i32, *mut i64, *mut dlb_error) -> dlb_status =
        dlb_tensor_get_strides;
    let _: unsafe extern "C" fn(
        *const DLManagedTensorVersioned,
        i32,
        *mut *mut std::ffi::c_void,
        *mut u64,
        *mut dlb_error,
    ) -> dlb_status = dlb_tensor_host_data;
    let _: unsafe extern "C" fn(*const DLManagedTensorVersioned) -> i32 = dlb_tensor_is_exclusive;
    let _: unsafe extern "C" fn(
        *const DLTensor,
        u64,
        *mut i64,
        *mut i64,
        *mut dlb_error,
    ) -> dlb_status = dlb_tensor_byte_span;
    let _: unsafe extern "C" fn(
        DLDataType,
        *mut std::os::raw::c_char,
        u64,
        *mut dlb_error,
    ) -> dlb_status = dlb_dtype_format;
    let _: unsafe extern "C" fn(i32) -> *const std::os::raw::c_char = dlb_dtype_code_name;
    let _: unsafe extern "C" fn(i32, i32) -> i32 = dlb_dtype_bits_allowed;
    let _: unsafe extern "C" fn(*mut DLManagedTensor) = dlb_tensor_free_legacy;
    let _: unsafe extern "C" fn(i32, *mut std::ffi::c_void, i64, *mut dlb_error) -> dlb_status =
        dlb_cuda_stream_handshake;
}

#[test]
fn links_and_reports_versions() {
    let mut library = dlb_library_version {
        major: 99,
        minor: 99,
        patch: 99,
    };
    let mut produced = DLPackVersion { major: 0, minor: 0 };
    let mut accepted = DLPackVersion { major: 0, minor: 0 };
    unsafe { dlb_get_version(&mut library, &mut produced, &mut accepted) };
    assert_eq!((produced.major, produced.minor), (1, 3));
    assert_eq!(accepted.major, 1);
    let text = unsafe { std::ffi::CStr::from_ptr(dlb_version_string()) }
        .to_str()
        .unwrap();
    assert_eq!(
        text,
        format!("{}.{}.{}", library.major, library.minor, library.patch)
    );
    if LINKED_C_VERSION != "unknown" {
        assert_eq!(text, LINKED_C_VERSION);
    }
}
