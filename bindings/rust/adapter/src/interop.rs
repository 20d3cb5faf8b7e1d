//! The interop matrix's producer: the exchange extension of the adapter's one table
//! (`dlpc_subject`, see conformance.rs), which makes each case with the `dlbridge` crate's public
//! API. The matrix's consumer is the subject's own consume entry points. The `#[repr(C)]`
//! structs below mirror dlpack_conformance.h (their layout is asserted through contract.rs).

use crate::conformance::*;
use dlbridge::{ffi, status, Device, Element, Slice, Tensor};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicI64, Ordering};

/// `dlpc_exchange_case`.
#[repr(C)]
pub struct ExchangeCase {
    pub(crate) name: *const c_char,
    pub(crate) dtype_code: i64,
    pub(crate) dtype_bits: i64,
    pub(crate) base_ndim: i64,
    pub(crate) base_shape: [i64; DLPC_EXCHANGE_MAX_NDIM],
    pub(crate) op: i64,
    pub(crate) op_args: [i64; 3],
    pub(crate) ndim: i64,
    pub(crate) shape: [i64; DLPC_EXCHANGE_MAX_NDIM],
    pub(crate) strides: [i64; DLPC_EXCHANGE_MAX_NDIM],
    pub(crate) first: i64,
    pub(crate) flags: i64,
    pub(crate) legacy_refused: i64,
}

/// `dlpc_exchange_report`.
#[repr(C)]
pub struct ExchangeReport {
    pub(crate) status: i32,
    pub(crate) base: u64,
    pub(crate) message: [c_char; 256],
}

static RELEASES: AtomicI64 = AtomicI64::new(0);

pub(crate) extern "C" fn releases(_ctx: *mut c_void) -> i64 {
    RELEASES.load(Ordering::SeqCst)
}

fn base_value(code: i64, i: i64) -> f64 {
    match code {
        1 => (i * 3 + 1) as f64,
        2 => (i * 3 - 4) as f64 / 2.0,
        _ => (i * 3 - 4) as f64,
    }
}

/// The element types of the case table, from the f64 the rule speaks.
trait Value: Element + Copy {
    fn from_f64(v: f64) -> Self;
}
macro_rules! value {
    ($($t:ty),*) => {$(
        impl Value for $t {
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}
value!(f32, f64, i32, i64, u8);

fn first_address(t: &Tensor) -> u64 {
    t.data_ptr() as u64 + t.byte_offset()
}

/// The base tensor of case `c`: a Vec handed to the tensor without a copy, released (and
/// counted) exactly once when the last tensor over it goes.
fn make_base<T: Value + Send + 'static>(c: &ExchangeCase) -> dlbridge::Result<Tensor> {
    let shape = &c.base_shape[..c.base_ndim as usize];
    let n: i64 = shape.iter().product();
    let mut values: Vec<T> = (0..n)
        .map(|i| T::from_f64(base_value(c.dtype_code, i)))
        .collect();
    let parts = dlbridge::RawParts::new(
        values.as_mut_ptr().cast::<c_void>(),
        Device::CPU,
        T::DTYPE,
        shape,
    );
    // SAFETY: the Vec holds exactly the elements `parts` describes and moves into the release
    // closure, which keeps its buffer alive (and in place) until the tensor lets it go.
    unsafe {
        Tensor::wrap_raw(&parts, move || {
            drop(values);
            RELEASES.fetch_add(1, Ordering::SeqCst);
        })
    }
}

fn produce_tensor(c: &ExchangeCase, report: &mut ExchangeReport) -> dlbridge::Result<Tensor> {
    let base = match (c.dtype_code, c.dtype_bits) {
        (2, 32) => make_base::<f32>(c)?,
        (2, 64) => make_base::<f64>(c)?,
        (0, 32) => make_base::<i32>(c)?,
        (0, 64) => make_base::<i64>(c)?,
        (1, 8) => make_base::<u8>(c)?,
        _ => {
            return Err(dlbridge::Error::new(
                status::UNSUPPORTED,
                "dtype not in the agent",
            ))
        }
    };
    report.base = first_address(&base);
    let none = |v: i64| {
        if v == ffi::DLB_SLICE_NONE {
            None
        } else {
            Some(v)
        }
    };
    // The view keeps the memory alive on its own: `base` is dropped at the end of the match.
    Ok(match c.op {
        DLPC_EXCHANGE_OP_NONE => base,
        DLPC_EXCHANGE_OP_TRANSPOSE => base.transpose()?,
        DLPC_EXCHANGE_OP_SLICE => base.slice(&[Slice::new(
            none(c.op_args[0]),
            none(c.op_args[1]),
            c.op_args[2],
        )])?,
        DLPC_EXCHANGE_OP_SELECT => base.select(c.op_args[0] as i32, c.op_args[1])?,
        DLPC_EXCHANGE_OP_READ_ONLY => base.share_read_only()?,
        DLPC_EXCHANGE_OP_COPY => {
            let copy = base.copy_to(Device::CPU)?;
            report.base = first_address(&copy);
            copy
        }
        op => {
            return Err(dlbridge::Error::new(
                status::INVALID_ARGUMENT,
                format!("unknown op {op}"),
            ))
        }
    })
}

pub(crate) extern "C" fn exchange_produce(
    _ctx: *mut c_void,
    c: *const ExchangeCase,
    legacy: i32,
    report: *mut ExchangeReport,
) -> *mut c_void {
    // SAFETY: the host passes a valid case and report for the call.
    let (c, report) = unsafe { (&*c, &mut *report) };
    report.status = 0;
    report.base = 0;
    report.message[0] = 0;
    let fail = |report: &mut ExchangeReport, e: &dlbridge::Error, what: &str| {
        report.status = if e.status() != 0 { e.status() } else { -1 };
        crate::write_message(&mut report.message, &format!("{what}: {e}"));
        std::ptr::null_mut()
    };
    let t = match produce_tensor(c, report) {
        Ok(t) => t,
        Err(e) => return fail(report, &e, "produce"),
    };
    if legacy == 0 {
        return t.into_raw().cast();
    }
    match t.into_raw_legacy() {
        Ok(raw) => raw.cast(),
        // Dropping the ExportError frees the tensor it gives back, once.
        Err(e) => fail(report, e.error(), "into_raw_legacy"),
    }
}
