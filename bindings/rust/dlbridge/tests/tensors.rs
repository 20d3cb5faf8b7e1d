//! Element round trips, views, copies and misuse.

mod common;

use common::LiveGuard;
use dlbridge::{
    dtype_code, flags, status, Bf16, DType, Device, Element, Slice, Stream, Tensor, F16,
};

fn round_trip<T: Element + PartialEq + std::fmt::Debug>(values: Vec<T>) {
    let n = values.len() as i64;
    let shape = [2, n / 2];
    // Copy in.
    let t = Tensor::from_slice(&values, &shape).unwrap();
    assert_eq!(t.dtype(), T::DTYPE);
    assert_eq!(t.as_slice::<T>().unwrap(), &values[..]);
    // Move in, export, import.
    let t = Tensor::from_vec(values.clone(), &shape).unwrap();
    let back = unsafe { Tensor::from_raw(t.into_raw()) }.unwrap();
    assert_eq!(back.as_slice::<T>().unwrap(), &values[..]);
    // Through the legacy struct.
    let legacy = back.into_raw_legacy().unwrap();
    let back = unsafe { Tensor::from_raw_legacy(legacy) }.unwrap();
    assert_eq!(back.to_vec::<T>().unwrap(), values);
    // Boxed slice, allocate + fill, copy.
    let t = Tensor::from_boxed_slice(values.clone().into_boxed_slice(), &shape).unwrap();
    let mut z = Tensor::empty::<T>(&shape).unwrap();
    t.copy_into(&mut z).unwrap();
    assert_eq!(z.as_slice::<T>().unwrap(), &values[..]);
    let c = t.copy_to(Device::CPU).unwrap();
    assert!(c.is_copied() && c.is_exclusive());
    assert_eq!(c.as_slice::<T>().unwrap(), &values[..]);
}

#[test]
fn round_trips_for_every_element_type() {
    let _g = LiveGuard::new();
    round_trip(vec![1i8, -2, 3, i8::MIN, i8::MAX, 0]);
    round_trip(vec![1i16, -2, 3, i16::MIN, i16::MAX, 0]);
    round_trip(vec![1i32, -2, 3, i32::MIN, i32::MAX, 0]);
    round_trip(vec![1i64, -2, 3, i64::MIN, i64::MAX, 0]);
    round_trip(vec![1u8, 2, 3, 0, u8::MAX, 7]);
    round_trip(vec![1u16, 2, 3, 0, u16::MAX, 7]);
    round_trip(vec![1u32, 2, 3, 0, u32::MAX, 7]);
    round_trip(vec![1u64, 2, 3, 0, u64::MAX, 7]);
    round_trip(vec![1.5f32, -2.25, f32::MAX, f32::MIN_POSITIVE, 0.0, -0.0]);
    round_trip(vec![1.5f64, -2.25, f64::MAX, f64::MIN_POSITIVE, 0.0, -0.0]);
    round_trip(vec![true, false, true, true, false, false]);
    round_trip(vec![F16(0x3c00), F16(0xc000), F16(0), F16(0x7bff)]);
    round_trip(vec![
        Bf16::from_f32(1.0),
        Bf16::from_f32(-2.5),
        Bf16(0),
        Bf16::from_f32(3.0e38),
    ]);
}

#[test]
fn dtypes_and_devices() {
    assert_eq!(f32::DTYPE.to_string(), "float32");
    assert_eq!(bool::DTYPE.to_string(), "bool");
    assert_eq!(Bf16::DTYPE.to_string(), "bfloat16");
    assert_eq!(F16::DTYPE.to_string(), "float16");
    assert_eq!(DType::parse("uint8").unwrap(), DType::UINT8);
    assert_eq!(
        DType::parse("float8_e4m3fn").unwrap(),
        DType::new(dtype_code::FLOAT8_E4M3FN, 8, 1)
    );
    let e = DType::parse("float7").unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    assert_eq!(
        e.message(),
        "dtype float with 7 bits is not a valid DLPack type"
    );
    let e = DType::parse("floaty").unwrap_err();
    assert_eq!(e.message(), "unknown dtype name 'floaty'");
    // Codes this crate does not know stay representable and printable.
    let future = DType::new(200, 8, 1);
    assert_eq!(future.to_string(), "dtype(code=200, bits=8, lanes=1)");
    assert!(future.validate().is_err());
    assert_eq!(Device::new(25, 0).to_string(), "device_type_25:0");
    assert_eq!(
        Device::parse("device_type_25:3").unwrap(),
        Device::new(25, 3)
    );
    assert_eq!(Device::cuda(1).to_string(), "cuda:1");
    assert_eq!(
        Device::new(dlbridge::device_type::CUDA_HOST, 0).type_name(),
        Some("cuda_host")
    );
    assert!(!Device::cuda(0).is_host_readable());
    assert_eq!(dlbridge::version(), dlbridge::ffi::LINKED_C_VERSION);
    assert_eq!(dlbridge::dlpack_versions().0, (1, 3));
}

#[test]
fn views_outlive_their_base() {
    let _g = LiveGuard::new();
    let base = Tensor::from_vec((0..24).collect::<Vec<i32>>(), &[2, 3, 4]).unwrap();
    let sel = base.select(0, 1).unwrap(); // [3, 4]: 12..24
    let sl = base
        .slice(&[Slice::full(), (0..2).into(), Slice::step(-1)])
        .unwrap(); // [2, 2, 4]
    let perm = base.permute(&[2, 0, 1]).unwrap();
    let rs = base.reshape(&[6, -1]).unwrap();
    let tr = sel.transpose().unwrap();
    let sh = base.share().unwrap();
    drop(base);
    assert_eq!(sel.shape(), &[3, 4]);
    assert_eq!(
        sel.as_slice::<i32>().unwrap(),
        &(12..24).collect::<Vec<_>>()[..]
    );
    assert_eq!(sl.shape(), &[2, 2, 4]);
    assert_eq!(sl.strides(), &[12, 4, -1]);
    assert_eq!(sl.to_vec::<i32>().unwrap()[..4], [3, 2, 1, 0]);
    assert_eq!(perm.shape(), &[4, 2, 3]);
    assert_eq!(perm.to_vec::<i32>().unwrap()[..3], [0, 4, 8]);
    assert_eq!(rs.shape(), &[6, 4]);
    assert_eq!(tr.shape(), &[4, 3]);
    assert_eq!(tr.to_vec::<i32>().unwrap()[..3], [12, 16, 20]);
    assert_eq!(sh.numel(), 24);
    assert!(!sh.is_exclusive() && !sel.is_exclusive());
    drop(sel);
    drop(sh);
    assert_eq!(rs.as_slice::<i32>().unwrap()[23], 23);
}

#[test]
fn misuse_returns_errors() {
    let _g = LiveGuard::new();
    let mut t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    // Wrong element type.
    let e = t.as_slice::<f64>().unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    assert_eq!(
        e.message(),
        "the tensor holds float32 elements, not float64"
    );
    let e = t.as_slice::<i32>().unwrap_err();
    assert_eq!(e.message(), "the tensor holds float32 elements, not int32");
    // Exclusive: writable.
    t.as_mut_slice::<f32>().unwrap()[0] = 10.0;
    // Read-only share: no mutable slice, no copy into it.
    let mut ro = t.share_read_only().unwrap();
    assert!(ro.is_read_only());
    assert_eq!(ro.flags() & flags::READ_ONLY, flags::READ_ONLY);
    let e = unsafe { ro.as_mut_slice_aliased::<f32>() }.unwrap_err();
    assert_eq!(e.status(), status::READ_ONLY);
    assert_eq!(e.message(), "the tensor is read-only");
    let e = unsafe { t.copy_into_aliased(&mut ro, Stream::NULL) }.unwrap_err();
    assert_eq!(e.status(), status::READ_ONLY);
    assert_eq!(ro.as_slice::<f32>().unwrap()[0], 10.0);
    // The base has been shared: no longer writable through safe code.
    let e = t.as_mut_slice::<f32>().unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    assert_eq!(
        e.message(),
        "tensor memory is shared with other tensors (a view, a share or an import); copy it (copy_to) or use the unsafe as_mut_slice_aliased"
    );
    // ...but through the unsafe escape hatch, when the caller orders the accesses.
    unsafe { t.as_mut_slice_aliased::<f32>() }.unwrap()[1] = 20.0;
    assert_eq!(ro.as_slice::<f32>().unwrap()[1], 20.0);
    // Non-contiguous: no slice; to_vec copies.
    let tr = t.transpose().unwrap();
    let e = tr.as_slice::<f32>().unwrap_err();
    assert_eq!(e.status(), status::LAYOUT);
    assert_eq!(
        e.message(),
        "the tensor is not C-contiguous: copy it to a contiguous tensor first"
    );
    assert_eq!(
        tr.to_vec::<f32>().unwrap(),
        vec![10.0, 4.0, 20.0, 5.0, 3.0, 6.0]
    );
    // Reshape of a non-contiguous view needs a copy: the C library's error.
    let e = tr.reshape(&[6]).unwrap_err();
    assert_eq!(e.status(), status::LAYOUT);
    assert!(!e.message().is_empty());
    // Bad view arguments: the C library's messages.
    let e = t.select(5, 0).unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    let e = t.slice(&[Slice::step(0)]).unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    let e = t.permute(&[0, 0]).unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    // Copy with a mismatched shape.
    let mut dst = Tensor::zeros::<f32>(&[3, 2]).unwrap();
    let e = t.copy_into(&mut dst).unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    // Device without a backend.
    let e = Tensor::allocate(
        Device::new(dlbridge::device_type::VULKAN, 0),
        DType::FLOAT32,
        &[2],
    )
    .unwrap_err();
    assert!(
        e.status() == status::UNSUPPORTED || e.status() == status::DEVICE_UNAVAILABLE,
        "{e}"
    );
    // Invalid bool bytes are refused, not turned into invalid Rust bools.
    let bytes = Tensor::from_vec(vec![0u8, 1, 2], &[3]).unwrap();
    let parts = dlbridge::RawParts::new(bytes.data_ptr(), Device::CPU, DType::BOOL, &[3]);
    let keep = bytes.share().unwrap();
    let as_bool = unsafe { Tensor::wrap_raw(&parts, move || drop(keep)) }.unwrap();
    let e = as_bool.as_slice::<bool>().unwrap_err();
    assert_eq!(e.message(), "tensor holds bytes that are not valid bool");
}

#[test]
fn zeros_strided_and_scalar() {
    let _g = LiveGuard::new();
    let s = Tensor::zeros::<f64>(&[]).unwrap();
    assert_eq!(s.ndim(), 0);
    assert_eq!(s.numel(), 1);
    assert_eq!(s.as_slice::<f64>().unwrap(), &[0.0]);
    let t = Tensor::allocate_with(Device::CPU, DType::INT32, &[2, 3], Some(&[1, 2]), 0).unwrap();
    assert!(t.is_f_contiguous() && !t.is_c_contiguous());
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0; 6]);
    let r = Tensor::allocate_with(Device::CPU, DType::INT32, &[4], None, flags::READ_ONLY).unwrap();
    assert!(r.is_read_only());
    let e = Tensor::allocate_with(Device::CPU, DType::INT32, &[4], Some(&[1, 1]), 0).unwrap_err();
    assert_eq!(e.message(), "strides must have one value per extent");
}

#[test]
fn copy_into_a_slice_view() {
    let _g = LiveGuard::new();
    let base = Tensor::zeros::<u16>(&[3, 3]).unwrap();
    let mut row = base.select(0, 1).unwrap();
    let src = Tensor::from_slice(&[7u16, 8, 9], &[3]).unwrap();
    assert_eq!(
        src.copy_into(&mut row).unwrap_err().status(),
        status::INVALID_ARGUMENT
    );
    unsafe { src.copy_into_aliased(&mut row, Stream::NULL) }.unwrap();
    assert_eq!(
        base.as_slice::<u16>().unwrap(),
        &[0, 0, 0, 7, 8, 9, 0, 0, 0]
    );
}

/// The rough edge from issue 12: once every view is dropped, `as_mut_slice` works again, for
/// every kind of view.
#[test]
fn as_mut_slice_works_again_after_a_view_is_dropped() {
    let _g = LiveGuard::new();
    let mut t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let views: Vec<fn(&Tensor) -> Tensor> = vec![
        |t| t.transpose().unwrap(),
        |t| t.slice(&[Slice::full(), (1..2).into()]).unwrap(),
        |t| t.reshape(&[6]).unwrap(),
        |t| t.share().unwrap(),
        |t| t.share_read_only().unwrap(),
    ];
    for (i, make) in views.iter().enumerate() {
        let view = make(&t);
        assert!(t.as_mut_slice::<f32>().is_err(), "view {i} alive: shared");
        drop(view);
        t.as_mut_slice::<f32>().unwrap()[0] = i as f32;
        assert_eq!(t.as_slice::<f32>().unwrap()[0], i as f32);
    }
}

#[test]
fn exclusivity_follows_the_c_reference_count() {
    let _g = LiveGuard::new();
    let mut t = Tensor::zeros::<i32>(&[4]).unwrap();
    assert!(t.is_exclusive());
    let view = t.slice(&[(1..3).into()]).unwrap();
    let share = t.share().unwrap();
    assert!(!t.is_exclusive() && !view.is_exclusive() && !share.is_exclusive());
    assert_eq!(
        t.as_mut_slice::<i32>().unwrap_err().status(),
        status::INVALID_ARGUMENT
    );
    // The last other holder goes away on another thread: writable again.
    drop(view);
    std::thread::spawn(move || drop(share)).join().unwrap();
    assert!(t.is_exclusive());
    t.as_mut_slice::<i32>().unwrap()[0] = 5;
    // Export and re-import of the same tensor keeps it exclusive (nobody else holds it).
    let back = unsafe { Tensor::from_raw(t.into_raw()) }.unwrap();
    assert!(back.is_exclusive());
    assert_eq!(back.as_slice::<i32>().unwrap(), &[5, 0, 0, 0]);
    // A foreign-style import without IS_COPIED: the producer may alias it.
    let legacy = back.into_raw_legacy().unwrap();
    let l = unsafe { Tensor::from_raw_legacy(legacy) }.unwrap();
    assert!(!l.is_exclusive());
}

#[test]
fn copies_to_and_from_rust_data_work_for_every_layout() {
    let _g = LiveGuard::new();
    let t = Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]).unwrap();
    // x[::-1, ::2]: negative and step strides, one core call.
    let v = t.slice(&[Slice::step(-1), Slice::step(2)]).unwrap();
    assert_eq!(
        v.to_vec::<f32>().unwrap(),
        vec![8.0, 10.0, 4.0, 6.0, 0.0, 2.0]
    );
    assert_eq!(
        v.to_vec::<i32>().unwrap_err().message(),
        "the tensor holds float32 elements, not int32"
    );
    // Into a transposed view of shared memory: the unsafe aliased variant, then the base reads
    // back in its own order.
    let mut tr = t.transpose().unwrap();
    let values: Vec<f32> = (100..112).map(|i| i as f32).collect();
    assert_eq!(
        tr.copy_from_slice(&values).unwrap_err().status(),
        status::INVALID_ARGUMENT
    );
    // SAFETY: nothing else reads or writes the memory during the call.
    unsafe { tr.copy_from_slice_aliased(&values) }.unwrap();
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![100.0, 103.0, 106.0, 109.0, 101.0, 104.0, 107.0, 110.0, 102.0, 105.0, 108.0, 111.0]
    );
    // SAFETY: as above.
    let e = unsafe { tr.copy_from_slice_aliased(&values[..5]) }.unwrap_err();
    assert_eq!(e.status(), status::INVALID_ARGUMENT);
    assert_eq!(
        e.message(),
        "the buffer holds 20 bytes but the tensor's 12 float32 elements take 48"
    );
    // from_slice checks the count through the same core call.
    assert_eq!(
        Tensor::from_slice(&[1.0f32; 5], &[2, 3])
            .unwrap_err()
            .message(),
        "the buffer holds 20 bytes but the tensor's 6 float32 elements take 24"
    );
}
