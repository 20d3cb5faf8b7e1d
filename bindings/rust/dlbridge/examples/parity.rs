//! The parity rows (tests/parity/parity_table.tsv) through the safe Rust API. One line per row:
//! `ROW<TAB>STATUS<TAB>DETAIL`; suite `parity` compares them with the table and the other
//! languages. Run: `cargo run --example parity`.

#[path = "../tests/common/mod.rs"]
mod common;

use dlbridge::{cuda, opencl, status_name, DType, Device, Error, Slice, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(","))
}

fn values(v: &[f32]) -> String {
    let whole: Vec<i64> = v.iter().map(|&x| x as i64).collect();
    format!("values={}", list(&whole))
}

fn layout(t: &Tensor) -> String {
    format!("shape={} strides={}", list(t.shape()), list(t.strides()))
}

fn iota(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).expect("iota")
}

/// Prints a row: the detail of a success, or the error's status name and message.
fn row(id: &str, outcome: Result<String, Error>) {
    match outcome {
        Ok(detail) => println!("{id}\tDLB_OK\t{detail}"),
        Err(e) => println!("{id}\t{}\t{}", status_name(e.status()), e.message()),
    }
}

fn skip(id: &str, reason: &str) {
    println!("{id}\tSKIP\t{reason}");
}

static FOREIGN_DELETES: AtomicUsize = AtomicUsize::new(0);

fn deleted_since(start: usize) -> usize {
    FOREIGN_DELETES.load(Ordering::SeqCst) - start
}

fn main() {
    let live_at_start = dlbridge::live_count();

    row(
        "create",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[2, 3])
            .map(|t| format!("{} dtype={} device={}", layout(&t), t.dtype(), t.device())),
    );
    row(
        "create_negative_extent",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[2, -3]).map(|t| layout(&t)),
    );
    row(
        "create_ndim_65",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[1; 65]).map(|t| layout(&t)),
    );
    row(
        "create_strides_length",
        Tensor::allocate_with(Device::CPU, DType::FLOAT32, &[2, 3], Some(&[1]), 0)
            .map(|t| layout(&t)),
    );
    row(
        "create_is_copied",
        Tensor::allocate_with(
            Device::CPU,
            DType::FLOAT32,
            &[2, 3],
            None,
            dlbridge::flags::IS_COPIED,
        )
        .map(|t| layout(&t)),
    );

    row("wrap", {
        let buffer: Vec<f32> = (0..6).map(|i| i as f32).collect();
        let memory = buffer.as_ptr();
        Tensor::from_vec(buffer, &[2, 3]).and_then(|t| {
            Ok(format!(
                "{} {} same_memory={}",
                layout(&t),
                values(&t.to_vec::<f32>()?),
                i32::from(t.data_ptr().cast_const().cast::<f32>() == memory)
            ))
        })
    });
    row(
        "wrap_beyond_buffer",
        Tensor::from_vec(vec![0.0f32; 5], &[2, 3]).map(|t| layout(&t)),
    );

    row("import_versioned", {
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw =
            common::foreign_versioned(vec![0.0, 1.0, 2.0, 3.0], &[4], None, 1, 0, &FOREIGN_DELETES);
        // SAFETY: a foreign producer's tensor, owned here and consumed by the call.
        unsafe { Tensor::from_raw(raw) }.and_then(|t| {
            let read = values(&t.to_vec::<f32>()?);
            drop(t);
            Ok(format!("{read} deleted={}", deleted_since(start)))
        })
    });
    row("import_legacy", {
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw = common::foreign_legacy(vec![0.0, 1.0, 2.0, 3.0], &[4], &FOREIGN_DELETES);
        // SAFETY: as above, the legacy struct.
        unsafe { Tensor::from_raw_legacy(raw) }.and_then(|t| {
            let read = values(&t.to_vec::<f32>()?);
            drop(t);
            Ok(format!("{read} deleted={}", deleted_since(start)))
        })
    });
    {
        // The refused tensor's deleter has run: the detail follows the message on this row.
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw = common::foreign_versioned(vec![0.0; 4], &[4], None, 2, 0, &FOREIGN_DELETES);
        // SAFETY: as above; refused, and its deleter called.
        match unsafe { Tensor::from_raw(raw) } {
            Ok(_) => println!("import_major_2\tDLB_OK\t"),
            Err(e) => println!(
                "import_major_2\t{}\t{} deleted={}",
                status_name(e.status()),
                e.message(),
                deleted_since(start)
            ),
        }
    }
    row("export_import_legacy", {
        iota(&[2, 3])
            .into_raw_legacy()
            .map_err(Error::from)
            .and_then(|raw| {
                // SAFETY: our own export, handed straight back.
                let back = unsafe { Tensor::from_raw_legacy(raw) }?;
                Ok(format!(
                    "{} {}",
                    layout(&back),
                    values(&back.to_vec::<f32>()?)
                ))
            })
    });
    row("export_import_versioned", {
        // SAFETY: our own export, handed straight back.
        unsafe { Tensor::from_raw(iota(&[2, 3]).into_raw()) }.and_then(|back| {
            Ok(format!(
                "{} {} flags={}",
                layout(&back),
                values(&back.to_vec::<f32>()?),
                back.flags()
            ))
        })
    });
    row(
        "export_legacy_read_only",
        iota(&[2, 3]).share_read_only().and_then(|ro| {
            ro.into_raw_legacy().map_err(Error::from)?;
            Ok(String::new())
        }),
    );
    row(
        "export_versioned_read_only",
        iota(&[2, 3]).share_read_only().and_then(|ro| {
            // SAFETY: our own export, handed straight back.
            let back = unsafe { Tensor::from_raw(ro.into_raw()) }?;
            Ok(format!("flags={}", back.flags()))
        }),
    );

    row(
        "slice",
        iota(&[3, 4])
            .slice(&[(1..3).into(), Slice::step(2)])
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "slice_step_zero",
        iota(&[3, 4])
            .slice(&[Slice::new(Some(0), Some(2), 0)])
            .map(|v| layout(&v)),
    );
    row(
        "select",
        iota(&[3, 4])
            .select(1, -1)
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "select_out_of_range",
        iota(&[3, 4]).select(0, 3).map(|v| layout(&v)),
    );
    row(
        "reshape",
        iota(&[3, 4])
            .reshape(&[2, -1])
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "reshape_non_contiguous",
        iota(&[3, 4])
            .transpose()
            .and_then(|t| t.reshape(&[12]))
            .map(|v| layout(&v)),
    );
    row(
        "transpose",
        iota(&[3, 4])
            .transpose()
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "permute",
        iota(&[2, 3, 4]).permute(&[2, 0, 1]).map(|v| layout(&v)),
    );
    row(
        "permute_invalid",
        iota(&[2, 3, 4]).permute(&[0, 0, 1]).map(|v| layout(&v)),
    );

    row(
        "copy_out",
        iota(&[2, 3]).to_vec::<f32>().map(|v| values(&v)),
    );
    row(
        "copy_out_transposed",
        iota(&[2, 3])
            .transpose()
            .and_then(|t| t.to_vec::<f32>())
            .map(|v| values(&v)),
    );
    row(
        "copy_out_wrong_type",
        iota(&[2, 3]).to_vec::<i32>().map(|_| String::new()),
    );
    row(
        "copy_out_negative_strides",
        iota(&[3, 4])
            .slice(&[Slice::step(-1), Slice::step(2)])
            .and_then(|t| t.to_vec::<f32>())
            .map(|v| values(&v)),
    );
    row("copy_in_transposed", {
        let t = iota(&[3, 4]);
        let input: Vec<f32> = (100..112).map(|i| i as f32).collect();
        t.transpose().and_then(|mut tr| {
            // SAFETY: nothing else reads or writes the memory during the call.
            unsafe { tr.copy_from_slice_aliased(&input) }?;
            Ok(values(&t.to_vec::<f32>()?))
        })
    });
    row("copy_in_count_mismatch", {
        let t = iota(&[3, 4]);
        t.transpose().and_then(|mut tr| {
            // SAFETY: as above.
            unsafe { tr.copy_from_slice_aliased(&[0.0f32; 5]) }?;
            Ok(String::new())
        })
    });

    row("typed_view", {
        let mut t = iota(&[2, 3]);
        t.as_mut_slice::<f32>()
            .map(|s| {
                s[4] = 40.0;
                s.len()
            })
            .and_then(|count| Ok(format!("count={count} {}", values(&t.to_vec::<f32>()?))))
    });
    row(
        "typed_view_wrong_type",
        iota(&[2, 3]).as_slice::<i32>().map(|_| String::new()),
    );
    row(
        "typed_view_transposed",
        iota(&[2, 3])
            .transpose()
            .and_then(|t| t.as_slice::<f32>().map(|_| String::new())),
    );
    row("write_read_only", {
        let t = iota(&[2, 3]);
        t.share_read_only().and_then(|mut ro| {
            // SAFETY: nothing else touches the memory while the slice lives.
            unsafe { ro.as_mut_slice_aliased::<f32>() }.map(|_| String::new())
        })
    });
    row("copy_into_read_only", {
        let t = iota(&[2, 3]);
        t.share_read_only().and_then(|mut ro| {
            // SAFETY: as above.
            unsafe { ro.copy_from_slice_aliased(&[0.0f32; 6]) }.map(|_| String::new())
        })
    });
    row(
        "element_get",
        iota(&[2, 3])
            .select(0, 1)
            .and_then(|r| r.select(0, 2))
            .and_then(|e| Ok(format!("value={}", e.to_vec::<f32>()?[0] as i64))),
    );
    row(
        "element_out_of_range",
        iota(&[2, 3]).select(0, 2).map(|v| layout(&v)),
    );

    skip(
        "use_after_close",
        "Rust's ownership forbids using a dropped Tensor at compile time",
    );
    skip(
        "double_close",
        "Rust's ownership drops a Tensor exactly once, at compile time",
    );

    row(
        "cuda_available",
        cuda::is_available().map(|()| String::new()),
    );
    row(
        "cuda_allocate",
        Tensor::allocate(Device::cuda(0), DType::FLOAT32, &[2]).map(|t| layout(&t)),
    );
    row(
        "opencl_available",
        opencl::is_available().map(|()| String::new()),
    );
    row(
        "dtype_parse_unknown",
        DType::parse("float33").map(|d| format!("{d}")),
    );
    row(
        "dtype_parse",
        DType::parse("bfloat16x4")
            .map(|d| format!("code={} bits={} lanes={}", d.code, d.bits, d.lanes)),
    );
    row(
        "device_unknown_type",
        Device::parse("device_type_99:3")
            .map(|d| format!("type={} id={} name={d}", d.device_type, d.device_id)),
    );
    row(
        "device_parse_unknown",
        Device::parse("gpu:0").map(|d| format!("{d:?}")),
    );
    row(
        "status_name",
        Ok(format!(
            "name={} unknown={}",
            status_name(dlbridge::status::READ_ONLY),
            status_name(99)
        )),
    );
    row(
        "live_count_balance",
        Ok(format!("live={}", dlbridge::live_count() - live_at_start)),
    );
}
