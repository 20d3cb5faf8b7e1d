//! The interop matrix's producer: the exchange extension of the adapter's one table, which makes
//! each case with the `dlbridge` crate's public API. The matrix's consumer is the subject's own.

use crate::contract::*;
use dlbridge::{ffi, status, Device, Element, Error, RawParts, Slice, Tensor};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering};

static RELEASES: AtomicI64 = AtomicI64::new(0);

pub(crate) unsafe extern "C" fn releases(_ctx: *mut c_void) -> i64 {
    RELEASES.load(Ordering::SeqCst)
}

/// Element i of every base tensor: the runner's one rule (interop_base_value).
fn base_value(code: i64, i: i64) -> f64 {
    match code {
        1 => (i * 3 + 1) as f64,
        2 => (i * 3 - 4) as f64 / 2.0,
        _ => (i * 3 - 4) as f64,
    }
}

fn first_address(t: &Tensor) -> u64 {
    t.data_ptr() as u64 + t.byte_offset()
}

/// The base tensor of case `c`: a Vec handed to the tensor without a copy, released (and
/// counted) exactly once when the last tensor over it goes.
fn make_base<T: Element + Send + 'static>(
    c: &dlpc_exchange_case,
    of: fn(f64) -> T,
) -> Result<Tensor, Error> {
    let shape = &c.base_shape[..c.base_ndim as usize];
    let n: i64 = shape.iter().product();
    let mut values: Vec<T> = (0..n).map(|i| of(base_value(c.dtype_code, i))).collect();
    let parts = RawParts::new(values.as_mut_ptr().cast(), Device::CPU, T::DTYPE, shape);
    // SAFETY: the Vec holds exactly the elements `parts` describes and moves into the release
    // closure, which keeps its buffer in place until the tensor lets it go.
    unsafe {
        Tensor::wrap_raw(&parts, move || {
            drop(values);
            RELEASES.fetch_add(1, Ordering::SeqCst);
        })
    }
}

fn produce(c: &dlpc_exchange_case, report: &mut dlpc_exchange_report) -> Result<Tensor, Error> {
    let base = match (c.dtype_code, c.dtype_bits) {
        (2, 32) => make_base(c, |v| v as f32)?,
        (2, 64) => make_base(c, |v| v)?,
        (0, 32) => make_base(c, |v| v as i32)?,
        (0, 64) => make_base(c, |v| v as i64)?,
        (1, 8) => make_base(c, |v| v as u8)?,
        _ => return Err(Error::new(status::UNSUPPORTED, "dtype not in the agent")),
    };
    report.base = first_address(&base);
    let bound = |v: i64| (v != ffi::DLB_SLICE_NONE).then_some(v);
    let [start, stop, step] = c.op_args;
    // A view keeps the memory alive on its own: `base` is dropped at the end of the match.
    Ok(match c.op as i32 {
        DLPC_EXCHANGE_OP_NONE => base,
        DLPC_EXCHANGE_OP_TRANSPOSE => base.transpose()?,
        DLPC_EXCHANGE_OP_SLICE => base.slice(&[Slice::new(bound(start), bound(stop), step)])?,
        DLPC_EXCHANGE_OP_SELECT => base.select(start as i32, stop)?,
        DLPC_EXCHANGE_OP_READ_ONLY => base.share_read_only()?,
        DLPC_EXCHANGE_OP_COPY => {
            let copy = base.copy_to(Device::CPU)?;
            report.base = first_address(&copy);
            copy
        }
        op => {
            return Err(Error::new(
                status::INVALID_ARGUMENT,
                format!("unknown op {op}"),
            ))
        }
    })
}

pub(crate) unsafe extern "C" fn exchange_produce(
    _ctx: *mut c_void,
    c: *const dlpc_exchange_case,
    legacy: i32,
    report: *mut dlpc_exchange_report,
) -> *mut c_void {
    // SAFETY: the host passes a valid case and report for the call.
    let (c, report) = unsafe { (&*c, &mut *report) };
    report.status = 0;
    report.base = 0;
    report.message[0] = 0;
    let fail = |report: &mut dlpc_exchange_report, e: &Error, what: &str| {
        report.status = if e.status() != 0 { e.status() } else { -1 };
        let message = &mut report.message;
        crate::conformance::write_message(
            message.as_mut_ptr(),
            message.len(),
            &format!("{what}: {e}"),
        );
        std::ptr::null_mut()
    };
    match produce(c, report) {
        Err(e) => fail(report, &e, "produce"),
        Ok(t) if legacy == 0 => t.into_raw().cast(),
        Ok(t) => match t.into_raw_legacy() {
            Ok(raw) => raw.cast(),
            // Dropping the ExportError frees the tensor it gives back, once.
            Err(e) => fail(report, e.error(), "into_raw_legacy"),
        },
    }
}
