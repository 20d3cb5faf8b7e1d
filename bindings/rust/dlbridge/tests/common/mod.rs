//! Helpers shared by the integration tests: a foreign DLPack producer written in Rust (its own
//! managed structs and counting deleters), a live-count guard, and the CUDA error to expect.
#![allow(dead_code)]

use dlbridge::ffi;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// dlb_tensor_live_count() is process-wide and tests run in parallel threads: tests that
/// compare it take this lock (tests that do not are quick and never leak).
pub static LIVE_LOCK: Mutex<()> = Mutex::new(());

/// Asserts on drop that the live count is back at its value from `new()`.
pub struct LiveGuard {
    start: i64,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl LiveGuard {
    pub fn new() -> LiveGuard {
        let lock = LIVE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        LiveGuard {
            start: dlbridge::live_count(),
            _lock: lock,
        }
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_eq!(
                dlbridge::live_count(),
                self.start,
                "dlbridge tensors leaked"
            );
        }
    }
}

/// What a foreign producer owns: the data, shape, strides and a deleter counter.
pub struct Producer {
    pub data: Vec<f32>,
    pub shape: Vec<i64>,
    pub strides: Option<Vec<i64>>,
    pub calls: &'static AtomicUsize,
}

#[repr(C)]
struct ForeignVersioned {
    managed: ffi::DLManagedTensorVersioned,
    producer: Producer,
}

unsafe extern "C" fn versioned_deleter(t: *mut ffi::DLManagedTensorVersioned) {
    let boxed = unsafe { Box::from_raw(t.cast::<ForeignVersioned>()) };
    boxed.producer.calls.fetch_add(1, Ordering::SeqCst);
}

/// A DLManagedTensorVersioned as another library would make it: f32 data, given version and
/// flags, and a deleter that counts its calls in `calls`.
pub fn foreign_versioned(
    data: Vec<f32>,
    shape: &[i64],
    strides: Option<&[i64]>,
    major: u32,
    flags: u64,
    calls: &'static AtomicUsize,
) -> *mut ffi::DLManagedTensorVersioned {
    let producer = Producer {
        data,
        shape: shape.to_vec(),
        strides: strides.map(<[i64]>::to_vec),
        calls,
    };
    let mut b = Box::new(ForeignVersioned {
        managed: ffi::DLManagedTensorVersioned {
            version: ffi::DLPackVersion { major, minor: 0 },
            manager_ctx: ptr::null_mut(),
            deleter: Some(versioned_deleter),
            flags,
            dl_tensor: unsafe { std::mem::zeroed() },
        },
        producer,
    });
    let p = &mut b.producer;
    b.managed.dl_tensor = ffi::DLTensor {
        data: p.data.as_mut_ptr().cast::<c_void>(),
        device: ffi::DLDevice {
            device_type: ffi::kDLCPU,
            device_id: 0,
        },
        ndim: p.shape.len() as i32,
        dtype: ffi::DLDataType {
            code: ffi::kDLFloat as u8,
            bits: 32,
            lanes: 1,
        },
        shape: p.shape.as_mut_ptr(),
        strides: p
            .strides
            .as_mut()
            .map_or(ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    };
    b.managed.manager_ctx = ptr::addr_of_mut!(b.producer).cast();
    Box::into_raw(b).cast()
}

#[repr(C)]
struct ForeignLegacy {
    managed: ffi::DLManagedTensor,
    producer: Producer,
}

unsafe extern "C" fn legacy_deleter(t: *mut ffi::DLManagedTensor) {
    let boxed = unsafe { Box::from_raw(t.cast::<ForeignLegacy>()) };
    boxed.producer.calls.fetch_add(1, Ordering::SeqCst);
}

/// A legacy DLManagedTensor (DLPack 0.x) with a counting deleter.
pub fn foreign_legacy(
    data: Vec<f32>,
    shape: &[i64],
    calls: &'static AtomicUsize,
) -> *mut ffi::DLManagedTensor {
    let producer = Producer {
        data,
        shape: shape.to_vec(),
        strides: None,
        calls,
    };
    let mut b = Box::new(ForeignLegacy {
        managed: ffi::DLManagedTensor {
            dl_tensor: unsafe { std::mem::zeroed() },
            manager_ctx: ptr::null_mut(),
            deleter: Some(legacy_deleter),
        },
        producer,
    });
    let p = &mut b.producer;
    b.managed.dl_tensor = ffi::DLTensor {
        data: p.data.as_mut_ptr().cast::<c_void>(),
        device: ffi::DLDevice {
            device_type: ffi::kDLCPU,
            device_id: 0,
        },
        ndim: p.shape.len() as i32,
        dtype: ffi::DLDataType {
            code: ffi::kDLFloat as u8,
            bits: 32,
            lanes: 1,
        },
        shape: p.shape.as_mut_ptr(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    Box::into_raw(b).cast()
}

/// The exact error every CUDA call gives here, or None when CUDA is available. CI sets
/// DLBRIDGE_BUILT_WITH_CUDA, so that a CUDA build cannot pass for one without.
pub fn expected_cuda_error() -> Option<(i32, &'static str)> {
    let built = std::env::var("DLBRIDGE_BUILT_WITH_CUDA").ok();
    let got = dlbridge::cuda::is_available().err()?;
    let without = (
        dlbridge::status::UNSUPPORTED,
        "dlbridge was built without CUDA support",
    );
    let no_driver = (dlbridge::status::DEVICE_UNAVAILABLE, "no CUDA driver found");
    let want = match built.as_deref() {
        Some("1") => no_driver,
        Some("0") => without,
        _ if got.status() == dlbridge::status::UNSUPPORTED => without,
        _ => no_driver,
    };
    Some(want)
}
