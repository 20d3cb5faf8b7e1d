//! The DLPack contract as a Rust user sees it: 0-d tensors carry readable shape and strides
//! through every export, views point `data` at their first element (byte_offset 0, which is
//! what PyTorch reads), and shares of a copy do not claim IS_COPIED.

mod common;

use common::LiveGuard;
use dlbridge::{Device, Slice, Tensor};

#[test]
fn scalars_export_with_one_readable_shape_and_stride_slot() {
    let _g = LiveGuard::new();
    let t = Tensor::from_slice(&[7.5f32], &[]).unwrap();
    assert_eq!(t.ndim(), 0);
    assert_eq!(t.numel(), 1);
    let raw = t.into_raw();
    unsafe {
        let dl = &(*raw).dl_tensor;
        assert!(!dl.shape.is_null() && !dl.strides.is_null());
        assert_eq!((*dl.shape, *dl.strides), (1, 1));
    }
    let back = unsafe { Tensor::from_raw(raw) }.unwrap();
    let legacy = back.into_raw_legacy().unwrap();
    unsafe {
        let dl = &(*legacy).dl_tensor;
        assert_eq!(dl.ndim, 0);
        assert_eq!((*dl.shape, *dl.strides), (1, 1));
        assert_eq!(*(dl.data as *const f32), 7.5);
    }
    let back = unsafe { Tensor::from_raw_legacy(legacy) }.unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![7.5]);
    let selected = Tensor::from_slice(&[1i64, 2, 3], &[3])
        .unwrap()
        .select(0, 2)
        .unwrap();
    assert_eq!(selected.shape(), &[] as &[i64]);
    assert_eq!(selected.to_vec::<i64>().unwrap(), vec![3]);
}

#[test]
fn views_point_data_at_their_first_element() {
    let _g = LiveGuard::new();
    let t = Tensor::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3]).unwrap();
    let base = t.data_ptr() as usize;
    let row = t.select(0, 1).unwrap();
    assert_eq!(row.byte_offset(), 0);
    assert_eq!(row.data_ptr() as usize, base + 3 * 4);
    let cols = t.slice(&[Slice::full(), Slice::range(1, 3)]).unwrap();
    assert_eq!(cols.byte_offset(), 0);
    assert_eq!(cols.data_ptr() as usize, base + 4);
    assert_eq!(cols.to_vec::<i32>().unwrap(), vec![1, 2, 4, 5]);
    // The legacy export of a view, read the way PyTorch reads it: data alone.
    let legacy = cols.into_raw_legacy().unwrap();
    unsafe {
        assert_eq!((*legacy).dl_tensor.byte_offset, 0);
        assert_eq!(*((*legacy).dl_tensor.data as *const i32), 1);
        Tensor::from_raw_legacy(legacy).unwrap();
    }
}

#[test]
fn shares_and_views_of_a_copy_are_not_copied() {
    let _g = LiveGuard::new();
    let c = Tensor::from_slice(&[1.0f64, 2.0], &[2])
        .unwrap()
        .copy_to(Device::CPU)
        .unwrap();
    assert!(c.is_copied());
    assert!(!c.share().unwrap().is_copied());
    assert!(!c.transpose().unwrap().is_copied());
    assert!(c.is_copied());
}
