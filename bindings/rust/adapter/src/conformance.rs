//! The adapter's one table, `dlpack_conformance_subject()`: the conformance kit's subject and,
//! with the exchange extension (interop.rs), the interop matrix's Rust side.
//!
//! - Producer: the kit's values, wrapped read-only without a copy ([`Tensor::wrap_raw`]), are
//!   copied ([`Tensor::copy_into`]) into a tensor laid out as asked, then made read-only
//!   ([`Tensor::share_read_only`]) or a copy ([`Tensor::copy_to`]) and handed out with
//!   [`Tensor::into_raw`] / [`Tensor::into_raw_legacy`].
//! - Consumer: [`Tensor::from_raw`] / [`Tensor::from_raw_legacy`]; the report comes from the
//!   tensor's accessors, the values through `copy_into` a tensor wrapped over the kit's buffer.

use crate::contract::*;
use dlbridge::{ffi, flags, status, DType, Device, RawParts, Slice, Stream, Tensor};
use std::ffi::{c_char, c_void};
use std::ptr;

struct Table(dlpc_subject);
// SAFETY: immutable; function pointers, static strings and a NULL ctx.
unsafe impl Sync for Table {}

static SUBJECT: Table = Table(dlpc_subject {
    struct_size: std::mem::size_of::<dlpc_subject>() as u64,
    contract_version: DLPC_CONTRACT_VERSION as u32,
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
pub extern "C" fn dlpack_conformance_subject() -> *const dlpc_subject {
    &SUBJECT.0
}

/// Writes `text` into a C buffer of `size` bytes (NULL: none), cut to fit, NUL-terminated.
pub(crate) fn write_message(buf: *mut c_char, size: usize, text: &str) {
    if !buf.is_null() && size > 0 {
        let n = text.len().min(size - 1);
        // SAFETY: the caller's buffer holds `size` bytes for the call.
        unsafe {
            ptr::copy_nonoverlapping(text.as_ptr().cast(), buf, n);
            *buf.add(n) = 0;
        }
    }
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

/// A tensor over memory this call lends (`data`, compact, in C order): it owns nothing, so its
/// release does nothing.
///
/// # Safety
/// `data` holds the elements `dtype` and `shape` describe while the tensor lives.
unsafe fn lent(
    data: *mut c_void,
    dtype: DType,
    shape: &[i64],
    flags: u64,
) -> dlbridge::Result<Tensor> {
    let parts = RawParts {
        flags,
        ..RawParts::new(data, Device::CPU, dtype, shape)
    };
    // SAFETY: the caller's promise.
    unsafe { Tensor::wrap_raw(&parts, || ()) }
}

// ---- producer ---------------------------------------------------------------------------

/// The tensor `spec` describes, holding its values, with its flags.
fn make(spec: &dlpc_case_spec) -> dlbridge::Result<Tensor> {
    let dtype = DType::from(spec.dtype);
    // SAFETY: the kit's shape and strides hold ndim values for the call.
    let (shape, strides) = unsafe { (dims(spec.shape, spec.ndim), dims(spec.strides, spec.ndim)) };
    let strides = (!spec.strides.is_null()).then_some(strides);
    let layout = spec.flags & flags::IS_SUBBYTE_TYPE_PADDED;
    // SAFETY: the kit's values stay valid for this call; READ_ONLY, never written, dropped
    // before the call returns.
    let values = unsafe {
        lent(
            spec.values.cast_mut(),
            dtype,
            shape,
            layout | flags::READ_ONLY,
        )
    }?;
    let mut made = if spec.offset_elements > 0 {
        // A view offset_elements into a larger allocation.
        let total = spec.offset_elements + values.numel() as i64;
        let base = Tensor::allocate_with(Device::CPU, dtype, &[total], None, layout)?;
        let tail = base.slice(&[Slice::new(Some(spec.offset_elements), None, 1)])?;
        tail.reshape(shape)?
    } else {
        Tensor::allocate_with(Device::CPU, dtype, shape, strides, layout)?
    };
    // SAFETY: nothing else touches `made`'s memory (the base and slice of a view are dropped);
    // views are never exclusive to the crate, hence the aliased copy.
    unsafe { values.copy_into_aliased(&mut made, Stream::NULL) }?;
    if spec.flags & flags::READ_ONLY != 0 {
        made.share_read_only()
    } else if spec.flags & flags::IS_COPIED != 0 {
        made.copy_to(Device::CPU) // marked IS_COPIED
    } else {
        Ok(made)
    }
}

/// Reports a failed production: DLPC_UNSUPPORTED for what the crate does not support.
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
    spec: *const dlpc_case_spec,
    out: *mut *mut ffi::DLManagedTensorVersioned,
    message: *mut c_char,
    size: usize,
) -> i32 {
    // SAFETY: the kit passes a valid spec and out pointer; it owns what it gets.
    match make(unsafe { &*spec }) {
        Ok(t) => unsafe { *out = t.into_raw() },
        Err(e) => return failed(&e, message, size),
    }
    DLPC_OK
}

unsafe extern "C" fn produce_legacy(
    _ctx: *mut c_void,
    spec: *const dlpc_case_spec,
    out: *mut *mut ffi::DLManagedTensor,
    message: *mut c_char,
    size: usize,
) -> i32 {
    // SAFETY: as produce_versioned's.
    match make(unsafe { &*spec }).map(Tensor::into_raw_legacy) {
        Ok(Ok(raw)) => unsafe { *out = raw },
        Err(e) => return failed(&e, message, size),
        // Dropping `refused` frees the tensor it gives back, once. READ_ONLY (and padded
        // sub-byte) tensors cannot travel in the legacy struct.
        Ok(Err(refused)) => {
            let e = refused.error();
            write_message(message, size, &e.to_string());
            let st = e.status();
            return if st == status::READ_ONLY || st == status::UNSUPPORTED {
                DLPC_REFUSED
            } else {
                DLPC_ERROR
            };
        }
    }
    DLPC_OK
}

// ---- consumer ---------------------------------------------------------------------------

/// Fills the report from an import; on DLPC_OK the report's handle holds the tensor (dropping
/// it otherwise runs the deleter, once).
fn consumed(imported: dlbridge::Result<Tensor>, report: &mut dlpc_consume_report) -> i32 {
    let (message, size) = (report.message.as_mut_ptr(), report.message.len());
    let t = match imported {
        Ok(t) => t,
        Err(e) => {
            write_message(message, size, &e.to_string());
            return DLPC_REFUSED;
        }
    };
    let n = t.ndim();
    if n > DLPC_MAX_NDIM as usize {
        write_message(
            message,
            size,
            &format!("ndim {n} is more than a report holds"),
        );
        return DLPC_UNSUPPORTED;
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
    // Without READ_ONLY the tensor can be written (safely when the crate knows it exclusive,
    // through the *_aliased accessors otherwise).
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

/// Copies `t`'s elements, compact and in C order in its storage format, into the kit's buffer.
/// Returns the bytes written.
fn read_values(t: &Tensor, report: &dlpc_consume_report) -> Result<u64, String> {
    let bytes = t.byte_size().map_err(|e| e.to_string())? as u64;
    if bytes > report.values_capacity {
        let capacity = report.values_capacity;
        return Err(format!(
            "{bytes} bytes of values, the kit's buffer holds {capacity}"
        ));
    }
    let padded = t.flags() & flags::IS_SUBBYTE_TYPE_PADDED;
    // SAFETY: the kit's buffer holds values_capacity >= bytes writable bytes for the call.
    let out = unsafe { lent(report.values, t.dtype(), t.shape(), padded) };
    t.copy_into(&mut out.map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    Ok(bytes)
}

unsafe extern "C" fn consume_versioned(
    _ctx: *mut c_void,
    tensor: *mut ffi::DLManagedTensorVersioned,
    report: *mut dlpc_consume_report,
) -> i32 {
    // SAFETY: the kit hands over `tensor` (consumed in every case) and a valid report.
    unsafe { consumed(Tensor::from_raw(tensor), &mut *report) }
}

unsafe extern "C" fn consume_legacy(
    _ctx: *mut c_void,
    tensor: *mut ffi::DLManagedTensor,
    report: *mut dlpc_consume_report,
) -> i32 {
    // SAFETY: as consume_versioned's.
    unsafe { consumed(Tensor::from_raw_legacy(tensor), &mut *report) }
}

unsafe extern "C" fn release(_ctx: *mut c_void, handle: *mut c_void) {
    // SAFETY: the Box `consumed` made, released once by the kit (any thread: Tensor is Send).
    drop(unsafe { Box::from_raw(handle.cast::<Tensor>()) });
}

unsafe extern "C" fn live_count(_ctx: *mut c_void) -> i64 {
    dlbridge::live_count()
}
