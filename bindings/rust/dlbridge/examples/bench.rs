//! Measures what the safe binding costs over raw FFI calls, in the same run:
//!
//! - `from_vec + drop`: `Tensor::from_vec(vec, shape)` then drop, against the same cycle through
//!   `dlbridge-sys` (`dlb_tensor_wrap_buffer` with a release callback that drops the boxed Vec, then
//!   `dlb_tensor_free`). Both allocate a small Vec<f32> per iteration.
//! - `export + import + drop`: `share()` of a base tensor, `into_raw`, `Tensor::from_raw`, drop;
//!   against `dlb_tensor_share` + `dlb_tensor_import` + `dlb_tensor_free`.
//! - `export + import legacy`: the same through the legacy struct (`into_raw_legacy`,
//!   `from_raw_legacy`); against `dlb_tensor_share` + `dlb_tensor_export_legacy` +
//!   `dlb_tensor_import_legacy` + `dlb_tensor_free`.
//! - `foreign import + drop`: a DLManagedTensorVersioned made by "another producer" (its own
//!   deleter) imported with `from_raw` and dropped; against `dlb_tensor_import` + `dlb_tensor_free`.
//! - `zeros + drop`: `Tensor::zeros::<f32>` (allocate + zero-fill) against `dlb_tensor_allocate`
//!   + `memset` + `dlb_tensor_free`.
//!
//! Run: `cargo run --release --example bench [-- iterations]` (plain std::time, no crates).
//! Each figure is the best of 7 rounds of `iterations` cycles (20,000 by default), in
//! nanoseconds per cycle. Short rounds (about 1 ms) let the best round miss the preemptions of a
//! busy shared machine; 200,000-cycle rounds were hit on most rounds and varied by 1.5x.

use dlbridge::{ffi, Tensor};
use std::ffi::c_void;
use std::hint::black_box;
use std::ptr;
use std::time::Instant;

const SHAPE: [i64; 2] = [4, 4];

fn best_of(iters: u64, f: &mut dyn FnMut()) -> f64 {
    for _ in 0..iters / 10 {
        f(); // warm-up
    }
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(start.elapsed().as_nanos() as f64 / iters as f64);
    }
    best
}

unsafe extern "C" fn drop_boxed_vec(ctx: *mut c_void) {
    drop(unsafe { Box::from_raw(ctx.cast::<Vec<f32>>()) });
}

fn raw_from_vec(v: Vec<f32>) {
    let mut v = Box::new(v);
    let desc = ffi::DLTensor {
        data: v.as_mut_ptr().cast(),
        device: ffi::DLDevice {
            device_type: ffi::kDLCPU,
            device_id: 0,
        },
        ndim: 2,
        dtype: ffi::DLDataType {
            code: ffi::kDLFloat as u8,
            bits: 32,
            lanes: 1,
        },
        shape: SHAPE.as_ptr().cast_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let mut out = ptr::null_mut();
    let ctx = Box::into_raw(v).cast::<c_void>();
    let status = unsafe {
        ffi::dlb_tensor_wrap_buffer(
            &desc,
            16 * 4,
            0,
            Some(drop_boxed_vec),
            ctx,
            &mut out,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, ffi::DLB_OK);
    unsafe { ffi::dlb_tensor_free(black_box(out)) };
}

// A minimal foreign producer: a heap-allocated managed tensor over static data.
static FOREIGN_DATA: [f32; 16] = [0.0; 16];

unsafe extern "C" fn foreign_deleter(self_: *mut ffi::DLManagedTensorVersioned) {
    drop(unsafe { Box::from_raw(self_) });
}

fn make_foreign() -> *mut ffi::DLManagedTensorVersioned {
    Box::into_raw(Box::new(ffi::DLManagedTensorVersioned {
        version: ffi::DLPackVersion { major: 1, minor: 3 },
        manager_ctx: ptr::null_mut(),
        deleter: Some(foreign_deleter),
        flags: ffi::DLPACK_FLAG_BITMASK_READ_ONLY,
        dl_tensor: ffi::DLTensor {
            data: FOREIGN_DATA.as_ptr().cast_mut().cast(),
            device: ffi::DLDevice {
                device_type: ffi::kDLCPU,
                device_id: 0,
            },
            ndim: 2,
            dtype: ffi::DLDataType {
                code: ffi::kDLFloat as u8,
                bits: 32,
                lanes: 1,
            },
            shape: SHAPE.as_ptr().cast_mut(),
            strides: ptr::null_mut(),
            byte_offset: 0,
        },
    }))
}

fn main() {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    // Optional second argument: "rust" or "raw" runs only that side (for `perf stat`).
    let side = std::env::args().nth(2).unwrap_or_default();
    let live_at_start = dlbridge::live_count();
    let base = Tensor::zeros::<f32>(&SHAPE).unwrap();
    let base_raw = base.as_ptr().cast_mut();

    let mut rows: Vec<(&str, f64, f64)> = Vec::new();
    let mut measure = |name, rust: &mut dyn FnMut(), raw: &mut dyn FnMut()| {
        let r = if side == "raw" {
            f64::NAN
        } else {
            best_of(iters, &mut *rust)
        };
        let c = if side == "rust" {
            f64::NAN
        } else {
            best_of(iters, &mut *raw)
        };
        rows.push((name, r, c));
    };

    measure(
        "from_vec + drop",
        &mut || {
            let t = Tensor::from_vec(black_box(vec![0.0f32; 16]), &SHAPE).unwrap();
            drop(black_box(t));
        },
        &mut || raw_from_vec(black_box(vec![0.0f32; 16])),
    );

    measure(
        "export + import + drop",
        &mut || {
            let p = base.share().unwrap().into_raw();
            let t = unsafe { Tensor::from_raw(black_box(p)) }.unwrap();
            drop(black_box(t));
        },
        &mut || unsafe {
            let mut shared = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_share(base_raw, 0, &mut shared, ptr::null_mut()),
                ffi::DLB_OK
            );
            let mut imported = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_import(black_box(shared), &mut imported, ptr::null_mut()),
                ffi::DLB_OK
            );
            ffi::dlb_tensor_free(black_box(imported));
        },
    );

    measure(
        "export + import legacy",
        &mut || {
            let p = base.share().unwrap().into_raw_legacy().unwrap();
            let t = unsafe { Tensor::from_raw_legacy(black_box(p)) }.unwrap();
            drop(black_box(t));
        },
        &mut || unsafe {
            let mut shared = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_share(base_raw, 0, &mut shared, ptr::null_mut()),
                ffi::DLB_OK
            );
            let mut legacy = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_export_legacy(black_box(shared), &mut legacy, ptr::null_mut()),
                ffi::DLB_OK
            );
            let mut imported = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_import_legacy(black_box(legacy), &mut imported, ptr::null_mut()),
                ffi::DLB_OK
            );
            ffi::dlb_tensor_free(black_box(imported));
        },
    );

    measure(
        "foreign import + drop",
        &mut || {
            let t = unsafe { Tensor::from_raw(black_box(make_foreign())) }.unwrap();
            drop(black_box(t));
        },
        &mut || unsafe {
            let mut imported = ptr::null_mut();
            assert_eq!(
                ffi::dlb_tensor_import(black_box(make_foreign()), &mut imported, ptr::null_mut()),
                ffi::DLB_OK
            );
            ffi::dlb_tensor_free(black_box(imported));
        },
    );

    measure(
        "zeros + drop",
        &mut || {
            let t = Tensor::zeros::<f32>(black_box(&SHAPE)).unwrap();
            drop(black_box(t));
        },
        &mut || unsafe {
            let mut out = ptr::null_mut();
            let dtype = ffi::DLDataType {
                code: ffi::kDLFloat as u8,
                bits: 32,
                lanes: 1,
            };
            let cpu = ffi::DLDevice {
                device_type: ffi::kDLCPU,
                device_id: 0,
            };
            let shape = black_box(&SHAPE);
            assert_eq!(
                ffi::dlb_tensor_allocate(
                    cpu,
                    dtype,
                    2,
                    shape.as_ptr(),
                    ptr::null(),
                    0,
                    &mut out,
                    ptr::null_mut()
                ),
                ffi::DLB_OK
            );
            ptr::write_bytes((*out).dl_tensor.data.cast::<u8>(), 0, black_box(16 * 4));
            ffi::dlb_tensor_free(black_box(out));
        },
    );

    drop(base);
    println!("dlbridge Rust binding vs raw dlbridge-sys calls ({iters} iterations x 7 rounds, best round; shape 4x4 f32)");
    // Rust has no runtime between it and C: the floor of a cycle is the same C calls made
    // through dlbridge-sys (the C column), and the binding's overhead is what it adds to them.
    // Target: overhead <= the C cycle.
    println!(
        "| {:<24} | {:>9} | {:>15} | {:>11} | {:>6} |",
        "cycle", "Rust ns", "C = floor ns", "overhead ns", "target"
    );
    println!(
        "|{:-<26}|{:->11}|{:->17}|{:->13}|{:->8}|",
        "", "", "", "", ""
    );
    for (name, rust, raw) in &rows {
        let overhead = rust - raw;
        println!(
            "| {:<24} | {:>9.1} | {:>15.1} | {:>11.1} | {:>6} |",
            name,
            rust,
            raw,
            overhead,
            if overhead <= *raw { "met" } else { "MISSED" }
        );
    }
    let live = dlbridge::live_count();
    assert_eq!(live, live_at_start, "tensors leaked");
    println!("live tensors at exit: {live} (start {live_at_start})");
}
