//! A program outside the dlbridge tree whose Cargo.toml only adds
//! `dlbridge = { path = ".../bindings/rust/dlbridge" }` (run_consumers.sh writes it): allocate,
//! fill, transpose, export, import, check the values, and check that nothing leaked.
use dlbridge::{DType, Device, Tensor};

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut t = Tensor::zeros::<f32>(&[2, 3])?;
    for (i, x) in t.as_mut_slice::<f32>()?.iter_mut().enumerate() {
        *x = i as f32;
    }
    let tt = t.transpose()?;
    drop(t); // the view keeps the memory alive
    assert_eq!(tt.shape(), &[3, 2]);
    assert_eq!(tt.dtype(), DType::FLOAT32);
    let expected = vec![0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0];
    assert_eq!(tt.to_vec::<f32>()?, expected);

    // Versioned export and import (a C consumer would take `raw`).
    let raw = tt.into_raw();
    let back = unsafe { Tensor::from_raw(raw) }?;
    assert_eq!(back.to_vec::<f32>()?, expected);

    // Legacy export of a compact copy, and back.
    let legacy = back.copy_to(Device::CPU)?.into_raw_legacy()?;
    let again = unsafe { Tensor::from_raw_legacy(legacy) }?;
    assert_eq!(again.as_slice::<f32>()?, &expected[..]);
    println!("dlbridge {}: {:?}", dlbridge::version(), again.as_slice::<f32>()?);
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    assert_eq!(dlbridge::live_count(), 0, "every tensor freed");
    println!("ok");
}
