//! Devices and streams: OpenCL for real (PoCL on CI), CUDA's exact "unavailable" answers.
//!
//! OpenCL tests skip (with a note on stderr) when no OpenCL device is found, unless
//! DLB_REQUIRE_OPENCL=1, which CI sets: then finding none is a failure. CUDA is expected to be
//! unavailable (no driver on the build machines): DLB_ERR_DEVICE_UNAVAILABLE "no CUDA driver
//! found" for a library built with CUDA, DLB_ERR_UNSUPPORTED for one built without, as the
//! build says in DLBRIDGE_BUILT_WITH_CUDA (set by Meson; either answer is accepted without it).
//! On a machine where CUDA is available the CUDA test checks the device count instead.

mod common;

use common::{expected_cuda_error, LiveGuard};
use dlbridge::{cuda, opencl, status, DType, Device, Slice, Stream, Tensor};
use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int};

/// OpenCL device 0, or None (test skipped) when there is none and none is required.
fn opencl_device() -> Option<Device> {
    let required = std::env::var("DLB_REQUIRE_OPENCL").is_ok_and(|v| v == "1");
    match opencl::device_count() {
        Ok(n) if n > 0 => Some(Device::opencl(0)),
        other => {
            assert!(
                !required,
                "DLB_REQUIRE_OPENCL=1 but no OpenCL device: {other:?}"
            );
            eprintln!("skipped: no OpenCL device ({other:?})");
            None
        }
    }
}

#[test]
fn opencl_runtime_queries() {
    let Some(dev) = opencl_device() else { return };
    opencl::is_available().unwrap();
    let count = opencl::device_count().unwrap();
    assert!(count >= 1);
    let name = opencl::device_name(0).unwrap();
    assert!(name.contains(" / "), "{name}");
    let objs = opencl::device_objects(0).unwrap();
    assert!(!objs.platform.is_null() && !objs.device.is_null() && !objs.context.is_null());
    assert!(!objs.queue.is_null());
    // The objects belong to the library and stay the same.
    assert_eq!(opencl::device_objects(0).unwrap().queue, objs.queue);
    assert!(opencl::device_name(count).is_err());
    assert!(opencl::device_objects(count).is_err());
    dev.synchronize().unwrap();
    // SAFETY: the library's own queue of this device.
    unsafe { dev.synchronize_stream(objs.queue) }.unwrap();
}

#[test]
fn opencl_allocate_and_round_trip() {
    let Some(dev) = opencl_device() else { return };
    let _g = LiveGuard::new();
    let t = Tensor::allocate(dev, DType::FLOAT32, &[2, 3]).unwrap();
    assert_eq!(t.device(), dev);
    assert_eq!(t.shape(), &[2, 3]);
    assert!(t.is_exclusive() && !t.is_host_readable());
    // An OpenCL buffer is not host memory: no slice, the core's refusal verbatim.
    let e = t.as_slice::<f32>().unwrap_err();
    assert_eq!(e.status(), status::UNSUPPORTED);
    assert_eq!(
        e.message(),
        "opencl:0 memory is not readable by the host: copy the tensor to the cpu first"
    );
    // host -> device -> host.
    let values: Vec<f32> = (0..6).map(|i| i as f32 * 1.5).collect();
    let host = Tensor::from_slice(&values, &[2, 3]).unwrap();
    let on_dev = host.copy_to(dev).unwrap();
    assert_eq!(on_dev.device(), dev);
    let back = on_dev.copy_to(Device::CPU).unwrap();
    assert_eq!(back.as_slice::<f32>().unwrap(), &values[..]);
    // to_vec copies device memory through the host by itself.
    assert_eq!(on_dev.to_vec::<f32>().unwrap(), values);
    // copy_into an allocated device tensor, then device -> device.
    let mut dst = Tensor::allocate(dev, DType::FLOAT32, &[2, 3]).unwrap();
    host.copy_into(&mut dst).unwrap();
    let dd = dst.copy_to(dev).unwrap();
    assert_eq!(dd.to_vec::<f32>().unwrap(), values);
    // Shape mismatch is refused by the core.
    let mut wrong = Tensor::allocate(dev, DType::FLOAT32, &[3, 2]).unwrap();
    assert_eq!(
        host.copy_into(&mut wrong).unwrap_err().status(),
        status::INVALID_ARGUMENT
    );
}

#[test]
fn opencl_strided_copies() {
    let Some(dev) = opencl_device() else { return };
    let _g = LiveGuard::new();
    let host = Tensor::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]).unwrap();
    // A strided host view to the device and back.
    let view = host.slice(&[Slice::full(), Slice::step(-2)]).unwrap(); // [:, ::-2]
    let expect = view.to_vec::<i32>().unwrap();
    assert_eq!(expect, vec![3, 1, 7, 5, 11, 9]);
    let on_dev = view.copy_to(dev).unwrap();
    assert_eq!(on_dev.to_vec::<i32>().unwrap(), expect);
    // A transposed device view (strided cl_mem) back to the host.
    let full = host.copy_to(dev).unwrap();
    let tr = full.transpose().unwrap();
    assert_eq!(tr.shape(), &[4, 3]);
    assert_eq!(
        tr.to_vec::<i32>().unwrap(),
        vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
    );
    // Into a row of a device tensor: a view shares its memory, so only the unsafe variant.
    let dst = Tensor::zeros::<i32>(&[3, 4]).unwrap().copy_to(dev).unwrap();
    let mut row = dst.select(0, 1).unwrap();
    let src = Tensor::from_slice(&[70, 80, 90, 100], &[4]).unwrap();
    assert_eq!(
        src.copy_into(&mut row).unwrap_err().status(),
        status::INVALID_ARGUMENT
    );
    // SAFETY: nothing else touches `dst` during the synchronous copy.
    unsafe { src.copy_into_aliased(&mut row, Stream::NULL) }.unwrap();
    drop(row);
    assert!(dst.is_exclusive());
    assert_eq!(
        dst.to_vec::<i32>().unwrap(),
        vec![0, 0, 0, 0, 70, 80, 90, 100, 0, 0, 0, 0]
    );
    // A strided host destination from a device source: column 2 of a host tensor.
    let mut col_base = Tensor::zeros::<i32>(&[4, 3]).unwrap();
    {
        let mut col = col_base.slice(&[Slice::full(), (2..3).into()]).unwrap();
        let dev_col = Tensor::from_slice(&[1, 2, 3, 4], &[4, 1])
            .unwrap()
            .copy_to(dev)
            .unwrap();
        // SAFETY: synchronous, and col_base is not used meanwhile.
        unsafe { dev_col.copy_into_aliased(&mut col, Stream::NULL) }.unwrap();
    }
    assert_eq!(
        col_base.as_mut_slice::<i32>().unwrap(),
        &[0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4]
    );
}

#[test]
fn opencl_async_copies_on_the_library_queue() {
    let Some(dev) = opencl_device() else { return };
    let _g = LiveGuard::new();
    let queue = opencl::device_objects(0).unwrap().queue;
    let values: Vec<u16> = (0..1000).map(|i| (i * 7) as u16).collect();
    let host = Tensor::from_slice(&values, &[10, 100]).unwrap();
    // SAFETY: the library's queue of this device; `host` stays alive and unwritten, and the
    // result is not touched until the queue has been synchronised.
    let on_dev = unsafe { host.copy_to_async(dev, queue) }.unwrap();
    let mut back = Tensor::zeros::<u16>(&[10, 100]).unwrap();
    // SAFETY: the same in-order queue; both tensors live past the synchronisation below.
    unsafe { on_dev.copy_into_async(&mut back, queue) }.unwrap();
    // SAFETY: the library's queue of this device.
    unsafe { dev.synchronize_stream(queue) }.unwrap();
    assert_eq!(back.as_slice::<u16>().unwrap(), &values[..]);
    drop(host);
    drop(on_dev);
}

// A second command queue for the handshake, from the OpenCL loader itself (opened at run time,
// as the library does, so the test needs no link-time OpenCL).
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
type CreateQueue =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *const u64, *mut i32) -> *mut c_void;
type ReleaseQueue = unsafe extern "C" fn(*mut c_void) -> i32;

fn opencl_symbol(name: &str) -> *mut c_void {
    let lib = CString::new("libOpenCL.so.1").unwrap();
    // SAFETY: plain dlopen/dlsym of the ICD loader (RTLD_NOW = 2), which the library has
    // already loaded; NUL-terminated names.
    unsafe {
        let handle = dlopen(lib.as_ptr(), 2);
        assert!(!handle.is_null(), "libOpenCL.so.1 cannot be opened");
        let sym = dlsym(handle, CString::new(name).unwrap().as_ptr());
        assert!(!sym.is_null(), "{name} not found");
        sym
    }
}

#[test]
fn opencl_queue_handshake() {
    let Some(dev) = opencl_device() else { return };
    let _g = LiveGuard::new();
    let objs = opencl::device_objects(0).unwrap();
    // SAFETY: the symbols have these OpenCL 2.0+/1.0 signatures.
    let (create, release): (CreateQueue, ReleaseQueue) = unsafe {
        (
            std::mem::transmute::<*mut c_void, CreateQueue>(opencl_symbol(
                "clCreateCommandQueueWithProperties",
            )),
            std::mem::transmute::<*mut c_void, ReleaseQueue>(opencl_symbol(
                "clReleaseCommandQueue",
            )),
        )
    };
    let mut cl_err = 0i32;
    // SAFETY: the library's context and device; no properties (an in-order queue).
    let raw = unsafe { create(objs.context, objs.device, std::ptr::null(), &mut cl_err) };
    assert_eq!(cl_err, 0);
    assert!(!raw.is_null());
    let consumer = Stream::from_raw(raw);
    let values: Vec<f64> = (0..4096).map(|i| i as f64 / 3.0).collect();
    let host = Tensor::from_slice(&values, &[4096]).unwrap();
    let mut back = Tensor::zeros::<f64>(&[4096]).unwrap();
    // SAFETY: both queues live on the library's context until released below; the tensors
    // outlive the synchronisation of the consumer queue, which waits for the producer's copy
    // through the handshake.
    unsafe {
        let on_dev = host.copy_to_async(dev, objs.queue).unwrap();
        opencl::queue_handshake(objs.queue, consumer).unwrap();
        opencl::queue_handshake(consumer, consumer).unwrap(); // same queue: nothing to do
        on_dev.copy_into_async(&mut back, consumer).unwrap();
        dev.synchronize_stream(consumer).unwrap();
        dev.synchronize_stream(objs.queue).unwrap();
    }
    assert_eq!(back.as_slice::<f64>().unwrap(), &values[..]);
    // SAFETY: NULL queues are refused before anything is dereferenced.
    let e = unsafe { opencl::queue_handshake(Stream::NULL, consumer) }.unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    assert_eq!(e.message(), "producer queue is NULL");
    // SAFETY: our queue, no longer used.
    assert_eq!(unsafe { release(raw) }, 0);
}

#[test]
fn cpu_synchronize_and_unknown_devices() {
    Device::CPU.synchronize().unwrap();
    let e = Device::new(dlbridge::device_type::VULKAN, 0)
        .synchronize()
        .unwrap_err();
    assert!(
        e.status() == status::UNSUPPORTED || e.status() == status::DEVICE_UNAVAILABLE,
        "{e}"
    );
    assert_eq!(Stream::default(), Stream::NULL);
    assert!(Stream::NULL.is_null());
}

#[test]
fn cuda_unavailable_is_reported_exactly() {
    let _g = LiveGuard::new();
    let Some((code, message)) = expected_cuda_error() else {
        // A machine with a driver and a GPU.
        assert!(cuda::device_count().unwrap() >= 1);
        return;
    };
    let check = |e: dlbridge::Error| {
        assert_eq!((e.status(), e.message()), (code, message), "{e}");
    };
    check(cuda::is_available().unwrap_err());
    check(cuda::device_count().unwrap_err());
    let x = 1u8;
    check(cuda::pointer_device(&x as *const u8 as *const c_void).unwrap_err());
    // SAFETY: the legacy default stream and a DLPack constant; nothing reaches a runtime.
    check(unsafe { cuda::stream_handshake(0, Stream::NULL, cuda::STREAM_NONE) }.unwrap_err());
    let e = Tensor::allocate(Device::cuda(0), DType::FLOAT32, &[4]).unwrap_err();
    assert!(
        e.status() == status::UNSUPPORTED || e.status() == status::DEVICE_UNAVAILABLE,
        "{e}"
    );
    let host = Tensor::zeros::<f32>(&[4]).unwrap();
    let e = host.copy_to(Device::cuda(0)).unwrap_err();
    assert!(
        e.status() == status::UNSUPPORTED || e.status() == status::DEVICE_UNAVAILABLE,
        "{e}"
    );
    assert_eq!(cuda::STREAM_NONE, i64::MIN);
    assert_eq!(
        (
            cuda::STREAM_LEGACY,
            cuda::STREAM_PER_THREAD,
            cuda::STREAM_NO_SYNC
        ),
        (1, 2, -1)
    );
}
