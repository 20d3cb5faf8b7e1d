//! The adapter's one table: `dlpack_conformance_subject()`
//! (conformance/include/dlpack_conformance.h), the conformance kit's subject and, with the
//! exchange extension (interop.rs), the interop matrix's Rust side; its producers and consumer use
//! the `dlbridge` crate's public API only.
//!
//! - Producer: the kit's values are wrapped read-only without a copy ([`Tensor::wrap_raw`]) and
//!   copied with [`Tensor::copy_into`] into a tensor laid out as asked
//!   ([`Tensor::allocate_with`] with the strides, or a [`Tensor::slice`] + [`Tensor::reshape`]
//!   view into a larger allocation for an offset), made read-only with
//!   [`Tensor::share_read_only`] or a copy with [`Tensor::copy_to`], and handed out with
//!   [`Tensor::into_raw`] / [`Tensor::into_raw_legacy`].
//! - Consumer: [`Tensor::from_raw`] / [`Tensor::from_raw_legacy`]; the report comes from the
//!   tensor's accessors, the values through `copy_into` into a tensor wrapped over the kit's
//!   buffer; `release` drops the [`Tensor`].
//!
//! The dlpc structs are mirrored by hand below; the contract's constants and a compile-time check
//! of every size and offset against the C header come from contract_layout.c (see build.rs).

use dlbridge::{ffi, flags, status, DType, Device, RawParts, Slice, Stream, Tensor};
use std::ffi::{c_char, c_void};
use std::ptr;

use crate::interop::{ExchangeCase, ExchangeReport};

// DLPC_CONTRACT_VERSION, DLPC_MAX_NDIM, DLPC_OK, ... and the layout assertions (build.rs).
include!(concat!(env!("OUT_DIR"), "/contract.rs"));

/// `dlpc_case_spec`. Fields this subject has no use for are kept for the layout.
#[repr(C)]
pub struct CaseSpec {
    #[allow(dead_code)]
    struct_size: u64,
    #[allow(dead_code)]
    case_id: i32,
    #[allow(dead_code)]
    check: *const c_char,
    dtype: ffi::DLDataType,
    ndim: i32,
    shape: *const i64,
    strides: *const i64,
    offset_elements: i64,
    flags: u64,
    values: *const c_void,
    #[allow(dead_code)]
    values_size: u64,
}

/// `dlpc_consume_report`.
#[repr(C)]
pub struct ConsumeReport {
    #[allow(dead_code)]
    struct_size: u64,
    handle: *mut c_void,
    first_element: *const c_void,
    ndim: i32,
    shape: [i64; DLPC_MAX_NDIM],
    strides_known: i32,
    strides: [i64; DLPC_MAX_NDIM],
    writable: i32,
    values: *mut c_void,
    values_capacity: u64,
    values_size: u64,
    message: [c_char; 256],
}

type ProduceVersioned = unsafe extern "C" fn(
    *mut c_void,
    *const CaseSpec,
    *mut *mut ffi::DLManagedTensorVersioned,
    *mut c_char,
    usize,
) -> i32;
type ProduceLegacy = unsafe extern "C" fn(
    *mut c_void,
    *const CaseSpec,
    *mut *mut ffi::DLManagedTensor,
    *mut c_char,
    usize,
) -> i32;
type ConsumeVersioned = unsafe extern "C" fn(
    *mut c_void,
    *mut ffi::DLManagedTensorVersioned,
    *mut ConsumeReport,
) -> i32;
type ConsumeLegacy =
    unsafe extern "C" fn(*mut c_void, *mut ffi::DLManagedTensor, *mut ConsumeReport) -> i32;

/// `dlpc_subject`.
#[repr(C)]
pub struct Subject {
    struct_size: u64,
    contract_version: u32,
    name: *const c_char,
    ctx: *mut c_void,
    produce_versioned: Option<ProduceVersioned>,
    produce_legacy: Option<ProduceLegacy>,
    consume_versioned: Option<ConsumeVersioned>,
    consume_legacy: Option<ConsumeLegacy>,
    release: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    live_count: Option<extern "C" fn(*mut c_void) -> i64>,
    language: *const c_char,
    exchange_produce: Option<
        extern "C" fn(*mut c_void, *const ExchangeCase, i32, *mut ExchangeReport) -> *mut c_void,
    >,
    releases: Option<extern "C" fn(*mut c_void) -> i64>,
}

struct Table(Subject);
// SAFETY: immutable after construction; holds function pointers, a static string and a NULL ctx.
unsafe impl Sync for Table {}

static SUBJECT: Table = Table(Subject {
    struct_size: std::mem::size_of::<Subject>() as u64,
    contract_version: DLPC_CONTRACT_VERSION,
    name: c"dlbridge Rust binding (crate dlbridge)".as_ptr(),
    ctx: ptr::null_mut(),
    produce_versioned: Some(produce_versioned),
    produce_legacy: Some(produce_legacy),
    consume_versioned: Some(consume_versioned),
    consume_legacy: Some(consume_legacy),
    release: Some(release),
    live_count: Some(live_count),
    language: c"rust".as_ptr(),
    exchange_produce: Some(crate::interop::exchange_produce),
    releases: Some(crate::interop::releases),
});

/// The one symbol of the contract: a static table, never freed.
#[no_mangle]
pub extern "C" fn dlpack_conformance_subject() -> *const Subject {
    &SUBJECT.0
}

/// Writes `text` into the kit's C buffer of `size` bytes, cut to fit, NUL-terminated.
fn write_message(buf: *mut c_char, size: usize, text: &str) {
    if buf.is_null() || size == 0 {
        return;
    }
    // SAFETY: the kit's buffer holds `size` bytes for the call.
    crate::write_message(unsafe { std::slice::from_raw_parts_mut(buf, size) }, text);
}

/// `n` values of a kit array (NULL or n <= 0: none).
///
/// # Safety
/// `p` holds `n` values for as long as the slice is used.
unsafe fn dims<'a>(p: *const i64, n: i32) -> &'a [i64] {
    if p.is_null() || n <= 0 {
        return &[];
    }
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
}

// ---- producer ---------------------------------------------------------------------------

/// The tensor `spec` describes, holding its values, with its flags.
fn make(spec: &CaseSpec) -> dlbridge::Result<Tensor> {
    let dtype = DType::from(spec.dtype);
    // SAFETY: the kit's shape and strides hold ndim values for the call.
    let (shape, strides) = unsafe { (dims(spec.shape, spec.ndim), dims(spec.strides, spec.ndim)) };
    let strides = (!spec.strides.is_null()).then_some(strides);
    let layout = spec.flags & flags::IS_SUBBYTE_TYPE_PADDED;
    let parts = RawParts {
        data: spec.values.cast_mut(),
        device: Device::CPU,
        dtype,
        shape,
        strides: None,
        byte_offset: 0,
        flags: layout | flags::READ_ONLY,
    };
    // SAFETY: the kit's values, compact and in C order, stay valid for this call; the tensor
    // is READ_ONLY (never written) and dropped before the call returns; it owns nothing, so its
    // release does nothing.
    let values = unsafe { Tensor::wrap_raw(&parts, || ()) }?;
    let mut made = if spec.offset_elements > 0 {
        // A view offset_elements into a larger allocation.
        let total = spec.offset_elements + values.numel() as i64;
        let base = Tensor::allocate_with(Device::CPU, dtype, &[total], None, layout)?;
        let tail = base.slice(&[Slice::new(Some(spec.offset_elements), None, 1)])?;
        tail.reshape(shape)?
    } else {
        Tensor::allocate_with(Device::CPU, dtype, shape, strides, layout)?
    };
    // SAFETY: nothing else reads or writes `made`'s memory: the allocation, or for the offset
    // view the base and slice it came from, are dropped. Views are never exclusive to the
    // crate, hence the aliased form of copy_into.
    unsafe { values.copy_into_aliased(&mut made, Stream::NULL) }?;
    if spec.flags & flags::READ_ONLY != 0 {
        made.share_read_only()
    } else if spec.flags & flags::IS_COPIED != 0 {
        // An export that is a copy: copy_to marks it IS_COPIED.
        made.copy_to(Device::CPU)
    } else {
        Ok(made)
    }
}

fn failed(e: &dlbridge::Error, message: *mut c_char, size: usize) -> i32 {
    write_message(message, size, &e.to_string());
    if e.status() == status::UNSUPPORTED {
        DLPC_UNSUPPORTED
    } else {
        DLPC_ERROR
    }
}

unsafe extern "C" fn produce_versioned(
    _ctx: *mut c_void,
    spec: *const CaseSpec,
    out: *mut *mut ffi::DLManagedTensorVersioned,
    message: *mut c_char,
    size: usize,
) -> i32 {
    // SAFETY: the kit passes a valid spec and out pointer for the call.
    let spec = unsafe { &*spec };
    match make(spec) {
        Ok(t) => {
            // SAFETY: as above; the kit now owns the tensor and calls its deleter once.
            unsafe { *out = t.into_raw() };
            DLPC_OK
        }
        Err(e) => failed(&e, message, size),
    }
}

unsafe extern "C" fn produce_legacy(
    _ctx: *mut c_void,
    spec: *const CaseSpec,
    out: *mut *mut ffi::DLManagedTensor,
    message: *mut c_char,
    size: usize,
) -> i32 {
    // SAFETY: the kit passes a valid spec and out pointer for the call.
    let spec = unsafe { &*spec };
    let t = match make(spec) {
        Ok(t) => t,
        Err(e) => return failed(&e, message, size),
    };
    match t.into_raw_legacy() {
        Ok(raw) => {
            // SAFETY: as above; the kit now owns the tensor.
            unsafe { *out = raw };
            DLPC_OK
        }
        Err(refused) => {
            // Dropping `refused` frees the tensor it gives back, once.
            write_message(message, size, &refused.error().to_string());
            // READ_ONLY (and padded sub-byte) tensors cannot travel in the legacy struct.
            let st = refused.error().status();
            if st == status::READ_ONLY || st == status::UNSUPPORTED {
                DLPC_REFUSED
            } else {
                DLPC_ERROR
            }
        }
    }
}

// ---- consumer ---------------------------------------------------------------------------

/// Copies `t`'s elements, compact and in C order in its storage format, into the kit's buffer
/// through the crate's strided copy (copy_into a tensor wrapped over the buffer). Returns the
/// bytes written.
fn read_values(t: &Tensor, report: &ConsumeReport) -> Result<u64, String> {
    let bytes = t.byte_size().map_err(|e| e.to_string())? as u64;
    if bytes > report.values_capacity {
        return Err(format!(
            "{bytes} bytes of values, the kit's buffer holds {}",
            report.values_capacity
        ));
    }
    let parts = RawParts {
        data: report.values,
        device: Device::CPU,
        dtype: t.dtype(),
        shape: t.shape(),
        strides: None,
        byte_offset: 0,
        flags: t.flags() & flags::IS_SUBBYTE_TYPE_PADDED,
    };
    // SAFETY: the kit's buffer holds values_capacity >= bytes writable bytes for the call and
    // nobody else touches it meanwhile; the tensor is dropped before returning and owns
    // nothing, so its release does nothing.
    let mut out = unsafe { Tensor::wrap_raw(&parts, || ()) }.map_err(|e| e.to_string())?;
    t.copy_into(&mut out).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Fills the report from an import; on DLPC_OK the report's handle holds the tensor.
fn consumed(imported: dlbridge::Result<Tensor>, report: &mut ConsumeReport) -> i32 {
    let message = report.message.as_mut_ptr();
    let size = report.message.len();
    let t = match imported {
        Ok(t) => t,
        Err(e) => {
            // The crate consumed the tensor: its deleter has run once.
            write_message(message, size, &e.to_string());
            return DLPC_REFUSED;
        }
    };
    let n = t.ndim();
    if n > DLPC_MAX_NDIM {
        write_message(
            message,
            size,
            &format!("ndim {n} is more than a report holds"),
        );
        return DLPC_UNSUPPORTED; // dropping t runs the deleter, once
    }
    report.ndim = n as i32;
    report.shape[..n].copy_from_slice(t.shape());
    // The crate's strides are always present: NULL strides were resolved on import.
    report.strides[..n].copy_from_slice(t.strides());
    report.strides_known = 1;
    report.first_element = if t.numel() > 0 {
        t.data_ptr()
            .cast::<u8>()
            .wrapping_add(t.byte_offset() as usize)
            .cast()
    } else {
        ptr::null()
    };
    // A tensor without READ_ONLY can be written, through as_mut_slice when the crate knows it
    // exclusive, through the unsafe *_aliased accessors otherwise; READ_ONLY never.
    report.writable = i32::from(!t.is_read_only());
    match read_values(&t, report) {
        Ok(bytes) => report.values_size = bytes,
        Err(why) => {
            write_message(message, size, &format!("reading the values back: {why}"));
            return DLPC_ERROR;
        }
    }
    report.handle = Box::into_raw(Box::new(t)).cast();
    DLPC_OK
}

unsafe extern "C" fn consume_versioned(
    _ctx: *mut c_void,
    tensor: *mut ffi::DLManagedTensorVersioned,
    report: *mut ConsumeReport,
) -> i32 {
    // SAFETY: the kit hands over `tensor` (from_raw consumes it in every case) and a valid
    // report for the call.
    unsafe { consumed(Tensor::from_raw(tensor), &mut *report) }
}

unsafe extern "C" fn consume_legacy(
    _ctx: *mut c_void,
    tensor: *mut ffi::DLManagedTensor,
    report: *mut ConsumeReport,
) -> i32 {
    // SAFETY: as consume_versioned, for a legacy tensor.
    unsafe { consumed(Tensor::from_raw_legacy(tensor), &mut *report) }
}

unsafe extern "C" fn release(_ctx: *mut c_void, handle: *mut c_void) {
    // SAFETY: `handle` is the Box made by `consumed`, released once by the kit (any thread:
    // Tensor is Send).
    drop(unsafe { Box::from_raw(handle.cast::<Tensor>()) });
}

extern "C" fn live_count(_ctx: *mut c_void) -> i64 {
    dlbridge::live_count()
}
