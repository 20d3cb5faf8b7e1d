//! The interop matrix's agent: `interop_agent_get()` returns the table that
//! tests/interop/interop_agent.h defines; produce and consume use the `dlbridge` crate's public
//! API. The `#[repr(C)]` structs below mirror that header.

use dlbridge::{ffi, flags, status, DType, Device, Element, Slice, Tensor};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicI64, Ordering};

const CONTRACT_VERSION: u32 = 1;
const OP_NONE: i64 = 0;
const OP_TRANSPOSE: i64 = 1;
const OP_SLICE: i64 = 2;
const OP_SELECT: i64 = 3;
const OP_READ_ONLY: i64 = 4;
const OP_COPY: i64 = 5;

#[repr(C)]
pub struct Case {
    name: *const c_char,
    dtype_code: i64,
    dtype_bits: i64,
    base_ndim: i64,
    base_shape: [i64; 2],
    op: i64,
    op_args: [i64; 3],
    ndim: i64,
    shape: [i64; 2],
    strides: [i64; 2],
    first: i64,
    flags: i64,
    legacy_refused: i64,
}

#[repr(C)]
pub struct Report {
    status: i32,
    write_refused: i32,
    data: u64,
    base: u64,
    checksum: f64,
    message: [c_char; 256],
}

#[repr(C)]
pub struct Agent {
    contract_version: u32,
    name: *const c_char,
    produce: extern "C" fn(*const Case, i32, *mut Report) -> *mut c_void,
    consume: extern "C" fn(*mut c_void, *const Case, i32, i32, *mut Report) -> i32,
    live_count: extern "C" fn() -> i64,
    releases: Option<extern "C" fn() -> i64>,
}

struct Table(Agent);
// SAFETY: immutable after construction; holds only function pointers and a static string.
unsafe impl Sync for Table {}

static AGENT: Table = Table(Agent {
    contract_version: CONTRACT_VERSION,
    name: c"rust".as_ptr(),
    produce,
    consume,
    live_count,
    releases: Some(releases),
});

static RELEASES: AtomicI64 = AtomicI64::new(0);

/// The one symbol of the contract.
#[no_mangle]
pub extern "C" fn interop_agent_get() -> *const Agent {
    &AGENT.0
}

extern "C" fn live_count() -> i64 {
    dlbridge::live_count()
}

extern "C" fn releases() -> i64 {
    RELEASES.load(Ordering::SeqCst)
}

impl Report {
    fn fail(&mut self, status: i32, what: &str) -> i32 {
        self.status = if status != 0 { status } else { -1 };
        crate::write_message(&mut self.message, what);
        self.status
    }
}

fn base_value(code: i64, i: i64) -> f64 {
    match code {
        1 => (i * 3 + 1) as f64,
        2 => (i * 3 - 4) as f64 / 2.0,
        _ => (i * 3 - 4) as f64,
    }
}

fn expected_value(c: &Case, mut k: i64) -> f64 {
    let mut pos = c.first;
    for d in (0..c.ndim as usize).rev() {
        pos += (k % c.shape[d]) * c.strides[d];
        k /= c.shape[d];
    }
    base_value(c.dtype_code, pos)
}

/// The element types of the case table, to and from the f64 the rules speak.
trait Value: Element + Copy {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}
macro_rules! value {
    ($($t:ty),*) => {$(
        impl Value for $t {
            fn from_f64(v: f64) -> Self { v as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
value!(f32, f64, i32, i64, u8);

fn first_address(t: &Tensor) -> u64 {
    t.data_ptr() as u64 + t.byte_offset()
}

/// The base tensor of case `c`: a Vec handed to the tensor without a copy, released (and
/// counted) exactly once when the last tensor over it goes.
fn make_base<T: Value + Send + 'static>(c: &Case) -> dlbridge::Result<Tensor> {
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

fn produce_tensor(c: &Case, report: &mut Report) -> dlbridge::Result<Tensor> {
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
        OP_NONE => base,
        OP_TRANSPOSE => base.transpose()?,
        OP_SLICE => base.slice(&[Slice::new(
            none(c.op_args[0]),
            none(c.op_args[1]),
            c.op_args[2],
        )])?,
        OP_SELECT => base.select(c.op_args[0] as i32, c.op_args[1])?,
        OP_READ_ONLY => base.share_read_only()?,
        OP_COPY => {
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

extern "C" fn produce(c: *const Case, legacy: i32, report: *mut Report) -> *mut c_void {
    // SAFETY: the host passes a valid case and report for the call.
    let (c, report) = unsafe { (&*c, &mut *report) };
    *report = Report {
        status: 0,
        write_refused: -1,
        data: 0,
        base: 0,
        checksum: 0.0,
        message: [0; 256],
    };
    let t = match produce_tensor(c, report) {
        Ok(t) => t,
        Err(e) => {
            report.fail(e.status(), &format!("produce: {e}"));
            return std::ptr::null_mut();
        }
    };
    let first = first_address(&t);
    if legacy != 0 {
        match t.into_raw_legacy() {
            Ok(raw) => {
                // SAFETY: a valid legacy tensor we just made; read before anyone else has it.
                let dl = unsafe { &(*raw).dl_tensor };
                report.data = dl.data as u64 + dl.byte_offset;
                raw.cast()
            }
            Err(e) => {
                // Dropping the ExportError frees the tensor it gives back, once.
                report.fail(
                    e.error().status(),
                    &format!("into_raw_legacy: {}", e.error()),
                );
                std::ptr::null_mut()
            }
        }
    } else {
        report.data = first;
        t.into_raw().cast()
    }
}

fn check<T: Value>(
    t: &mut Tensor,
    c: &Case,
    legacy: bool,
    report: &mut Report,
) -> Result<(), String> {
    let nd = c.ndim as usize;
    if t.shape() != &c.shape[..nd] || t.strides() != &c.strides[..nd] {
        return Err(format!(
            "layout: shape {:?} strides {:?}, expected {:?} and {:?}",
            t.shape(),
            t.strides(),
            &c.shape[..nd],
            &c.strides[..nd]
        ));
    }
    if t.dtype() != DType::new(c.dtype_code as u8, c.dtype_bits as u8, 1) {
        return Err(format!("dtype {}", t.dtype()));
    }
    if t.device() != Device::CPU {
        return Err(format!("device {}", t.device()));
    }
    let want_flags = if legacy { 0 } else { c.flags as u64 };
    if t.flags() != want_flags {
        return Err(format!("flags {}, expected {want_flags}", t.flags()));
    }
    if want_flags & flags::IS_COPIED != 0 && !t.is_exclusive() {
        return Err("IS_COPIED: the import is not exclusive to its consumer".to_string());
    }
    let values = t.to_vec::<T>().map_err(|e| format!("to_vec: {e}"))?;
    let mut sum = 0.0;
    for (k, v) in values.iter().enumerate() {
        let (v, want) = (v.to_f64(), expected_value(c, k as i64));
        if v != want {
            return Err(format!("values: element {k} is {v}, expected {want}"));
        }
        sum += v * (k + 1) as f64;
    }
    report.checksum = sum;
    if c.flags as u64 & flags::READ_ONLY != 0 {
        // SAFETY: nothing else touches the memory during the call (and it must be refused).
        let attempt = unsafe { t.as_mut_slice_aliased::<T>() };
        report.write_refused = match attempt {
            Err(e) if e.status() == status::READ_ONLY => 1,
            _ => 0,
        };
    }
    Ok(())
}

extern "C" fn consume(
    tensor: *mut c_void,
    c: *const Case,
    legacy: i32,
    on_thread: i32,
    report: *mut Report,
) -> i32 {
    // SAFETY: the host passes a valid case and report for the call.
    let (c, report) = unsafe { (&*c, &mut *report) };
    *report = Report {
        status: 0,
        write_refused: -1,
        data: 0,
        base: 0,
        checksum: 0.0,
        message: [0; 256],
    };
    // SAFETY: the host hands over a tensor of the kind `legacy` says, which we now own.
    let imported = unsafe {
        if legacy != 0 {
            Tensor::from_raw_legacy(tensor.cast())
        } else {
            Tensor::from_raw(tensor.cast())
        }
    };
    let mut t = match imported {
        Ok(t) => t,
        Err(e) => return report.fail(e.status(), &format!("import: {e}")),
    };
    report.data = first_address(&t);
    let legacy = legacy != 0;
    let checked = match (c.dtype_code, c.dtype_bits) {
        (2, 32) => check::<f32>(&mut t, c, legacy, report),
        (2, 64) => check::<f64>(&mut t, c, legacy, report),
        (0, 32) => check::<i32>(&mut t, c, legacy, report),
        (0, 64) => check::<i64>(&mut t, c, legacy, report),
        (1, 8) => check::<u8>(&mut t, c, legacy, report),
        _ => Err("dtype not in the agent".to_string()),
    };
    if on_thread != 0 {
        if std::thread::spawn(move || drop(t)).join().is_err() {
            return report.fail(-1, "the freeing thread panicked");
        }
    } else {
        drop(t);
    }
    match checked {
        Ok(()) => 0,
        Err(why) => report.fail(-1, &why),
    }
}
