//! Ownership across the C boundary: deleters run exactly once, on any thread, in every case.

mod common;

use common::{foreign_legacy, foreign_versioned, LiveGuard};
use dlbridge::{ffi, status, DType, Device, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

/// How many times the release closure below dropped its Vec.
static COUNTED_DROPS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn vec_exported_and_freed_on_another_thread_exactly_once() {
    let _g = LiveGuard::new();
    let start = dlbridge::live_count();
    // A Vec<f32> whose release we can observe: the closure owns the Vec (moving a Vec does not
    // move its buffer) and counts when it drops it: the same path from_vec takes.
    let mut v = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let shape = [2i64, 3];
    let parts = dlbridge::RawParts::new(v.as_mut_ptr().cast(), Device::CPU, DType::FLOAT32, &shape);
    let released_on = Arc::new(std::sync::Mutex::new(None));
    let r = released_on.clone();
    let t = unsafe {
        Tensor::wrap_raw(&parts, move || {
            COUNTED_DROPS.fetch_add(1, Ordering::SeqCst);
            *r.lock().unwrap() = Some(thread::current().id());
            drop(v);
        })
    }
    .unwrap();
    assert_eq!(dlbridge::live_count(), start + 1);
    let raw = t.into_raw() as usize;
    let consumer = thread::spawn(move || {
        let raw = raw as *mut ffi::DLManagedTensorVersioned;
        // The C consumer reads the tensor, then calls its deleter through the raw pointer.
        unsafe {
            let data = (*raw).dl_tensor.data as *const f32;
            assert_eq!(*data.add(5), 6.0);
            ((*raw).deleter.unwrap())(raw);
        }
        thread::current().id()
    });
    let consumer_id = consumer.join().unwrap();
    assert_eq!(COUNTED_DROPS.load(Ordering::SeqCst), 1);
    assert_eq!(*released_on.lock().unwrap(), Some(consumer_id));
    assert_eq!(dlbridge::live_count(), start);
}

#[test]
fn from_vec_into_raw_freed_by_foreign_thread() {
    let _g = LiveGuard::new();
    let start = dlbridge::live_count();
    let raws: Vec<usize> = (0..8)
        .map(|i| {
            Tensor::from_vec(vec![i as f32; 1000], &[10, 100])
                .unwrap()
                .into_raw() as usize
        })
        .collect();
    assert_eq!(dlbridge::live_count(), start + 8);
    thread::spawn(move || {
        for raw in raws {
            unsafe { ffi::dlb_tensor_free(raw as *mut ffi::DLManagedTensorVersioned) };
        }
    })
    .join()
    .unwrap();
    assert_eq!(dlbridge::live_count(), start);
}

#[test]
fn foreign_producer_imported_and_dropped_deleter_once() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let raw = foreign_versioned(vec![1.0, 2.0, 3.0, 4.0], &[2, 2], None, 1, 0, &CALLS);
    let t = unsafe { Tensor::from_raw(raw) }.unwrap();
    assert_eq!(t.shape(), &[2, 2]);
    assert_eq!(t.strides(), &[2, 1]); // NULL strides from an older producer: compact row-major
    assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    assert!(!t.is_exclusive());
    let view = t.transpose().unwrap();
    drop(t);
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        0,
        "the view keeps the producer's memory alive"
    );
    assert_eq!(view.to_vec::<f32>().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
    drop(view);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn foreign_import_dropped_on_another_thread() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let t = unsafe {
        Tensor::from_raw(foreign_versioned(
            vec![0.5; 6],
            &[6],
            Some(&[1]),
            1,
            0,
            &CALLS,
        ))
    }
    .unwrap();
    thread::spawn(move || drop(t)).join().unwrap();
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn major_version_2_is_refused_and_deleted_once() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let raw = foreign_versioned(vec![1.0; 4], &[4], None, 2, 0, &CALLS);
    let err = unsafe { Tensor::from_raw(raw) }.unwrap_err();
    assert_eq!(err.status(), status::UNSUPPORTED_VERSION);
    assert_eq!(err.status(), ffi::DLB_ERR_UNSUPPORTED_VERSION);
    assert_eq!(err.status_name(), "DLB_ERR_UNSUPPORTED_VERSION");
    assert_eq!(
        err.message(),
        "DLPack major version 2 is not supported (dlbridge accepts major version 1)"
    );
    assert_eq!(
        err.to_string(),
        "DLB_ERR_UNSUPPORTED_VERSION: DLPack major version 2 is not supported (dlbridge accepts major version 1)"
    );
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn invalid_foreign_tensor_is_refused_and_deleted_once() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let raw = foreign_versioned(vec![1.0; 4], &[-4], None, 1, 0, &CALLS);
    let err = unsafe { Tensor::from_raw(raw) }.unwrap_err();
    assert_eq!(err.status(), status::INVALID_ARGUMENT);
    assert!(err.message().contains("-4"), "{}", err.message());
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    // Unknown flag bits are refused too, and still deleted.
    let raw = foreign_versioned(vec![1.0; 4], &[4], None, 1, 1 << 40, &CALLS);
    let err = unsafe { Tensor::from_raw(raw) }.unwrap_err();
    assert_eq!(err.status(), status::UNSUPPORTED);
    assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    // NULL: an error with nothing to free.
    let err = unsafe { Tensor::from_raw(std::ptr::null_mut()) }.unwrap_err();
    assert_eq!(err.message(), "tensor is NULL");
}

#[test]
fn zero_size_foreign_tensor_is_deleted_too() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let t = unsafe { Tensor::from_raw(foreign_versioned(Vec::new(), &[0, 3], None, 1, 0, &CALLS)) }
        .unwrap();
    assert_eq!(t.numel(), 0);
    assert_eq!(t.as_slice::<f32>().unwrap(), &[] as &[f32]);
    drop(t);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn legacy_import_and_export() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let t = unsafe { Tensor::from_raw_legacy(foreign_legacy(vec![1.0, 2.0, 3.0], &[3], &CALLS)) }
        .unwrap();
    assert_eq!(t.flags(), 0);
    assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
    drop(t);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);

    // Export as legacy, then a legacy consumer (here: dlbridge's legacy import) takes it back.
    let legacy = Tensor::from_vec(vec![7i16, 8, 9, 10], &[2, 2])
        .unwrap()
        .into_raw_legacy()
        .unwrap();
    unsafe {
        assert_eq!((*legacy).dl_tensor.ndim, 2);
        assert_eq!(*(*legacy).dl_tensor.shape.add(1), 2);
    }
    let back = unsafe { Tensor::from_raw_legacy(legacy) }.unwrap();
    assert_eq!(back.as_slice::<i16>().unwrap(), &[7, 8, 9, 10]);
    drop(back);

    // A legacy export freed by the consumer calling its deleter on another thread.
    let legacy = Tensor::from_vec(vec![1u8; 16], &[16])
        .unwrap()
        .into_raw_legacy()
        .unwrap() as usize;
    thread::spawn(move || unsafe {
        let l = legacy as *mut ffi::DLManagedTensor;
        ((*l).deleter.unwrap())(l)
    })
    .join()
    .unwrap();

    // Legacy import refused: its deleter still runs once.
    static BAD: AtomicUsize = AtomicUsize::new(0);
    let err =
        unsafe { Tensor::from_raw_legacy(foreign_legacy(vec![1.0], &[-1], &BAD)) }.unwrap_err();
    assert_eq!(err.status(), status::INVALID_ARGUMENT);
    assert_eq!(BAD.load(Ordering::SeqCst), 1);
}

#[test]
fn read_only_cannot_be_exported_as_legacy() {
    let _g = LiveGuard::new();
    let t = Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    let ro = t.share_read_only().unwrap();
    let err = ro.into_raw_legacy().unwrap_err();
    assert_eq!(err.error().status(), status::READ_ONLY);
    // `?` into a dlbridge::Error keeps the error and frees the tensor.
    let as_error: dlbridge::Error = err.into();
    assert_eq!(as_error.status(), status::READ_ONLY);
    drop(t);
}

/// A failed export leaves the tensor with its owner, open and usable; its memory is released
/// exactly once, when that owner drops it (the C rule "on error the caller still owns src").
#[test]
fn refused_legacy_export_gives_the_tensor_back() {
    static RELEASES: AtomicUsize = AtomicUsize::new(0);
    let _g = LiveGuard::new();
    let start = dlbridge::live_count();
    let mut v = vec![1.5f32, 2.5, 3.5];
    let shape = [3i64];
    let mut parts =
        dlbridge::RawParts::new(v.as_mut_ptr().cast(), Device::CPU, DType::FLOAT32, &shape);
    parts.flags = dlbridge::flags::READ_ONLY;
    let t = unsafe {
        Tensor::wrap_raw(&parts, move || {
            RELEASES.fetch_add(1, Ordering::SeqCst);
            drop(v);
        })
    }
    .unwrap();
    assert!(t.is_read_only());

    let err = t.into_raw_legacy().unwrap_err();
    assert_eq!(err.error().status(), status::READ_ONLY);
    assert_eq!(err.tensor().shape(), &[3]);
    let (error, back) = err.into_parts();
    assert_eq!(error.status(), status::READ_ONLY);
    // Still open: readable, viewable, exportable the versioned way, and not yet released.
    assert_eq!(RELEASES.load(Ordering::SeqCst), 0);
    assert_eq!(dlbridge::live_count(), start + 1);
    assert_eq!(back.as_slice::<f32>().unwrap(), &[1.5, 2.5, 3.5]);
    assert_eq!(
        back.slice(&[(1..3).into()])
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2.5, 3.5]
    );
    // Refused again, given back again (into_tensor this time).
    let back = back.into_raw_legacy().unwrap_err().into_tensor();
    assert_eq!(RELEASES.load(Ordering::SeqCst), 0);
    let back = unsafe { Tensor::from_raw(back.into_raw()) }.unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![1.5, 2.5, 3.5]);
    drop(back);
    assert_eq!(RELEASES.load(Ordering::SeqCst), 1, "released exactly once");
    assert_eq!(dlbridge::live_count(), start);
}

#[test]
fn export_import_round_trip_returns_the_same_tensor() {
    let _g = LiveGuard::new();
    let t = Tensor::from_vec(vec![1u32, 2, 3], &[3]).unwrap();
    let raw = t.into_raw();
    let back = unsafe { Tensor::from_raw(raw) }.unwrap();
    assert_eq!(
        back.as_ptr(),
        raw as *const _,
        "a dlbridge tensor is imported as is"
    );
    assert_eq!(back.as_slice::<u32>().unwrap(), &[1, 2, 3]);
}

#[test]
fn from_vec_errors_drop_the_vec_once() {
    let _g = LiveGuard::new();
    #[derive(Clone, Copy)]
    #[repr(transparent)]
    struct Counted(f32);
    // Element is an unsafe trait users may implement for their own plain types.
    unsafe impl dlbridge::Element for Counted {
        const DTYPE: DType = DType::FLOAT32;
    }
    // A shape beyond the vector: the C library refuses it before it builds anything (its
    // buffer check), the Vec is dropped here, once.
    let err = Tensor::from_vec(vec![Counted(1.0); 5], &[2, 3]).unwrap_err();
    assert_eq!(err.status(), status::INVALID_ARGUMENT);
    assert_eq!(
        err.message(),
        "the tensor's elements reach bytes [0, 24) of a buffer of 20 bytes"
    );
    let err = Tensor::from_vec(vec![0.0f32; 0], &[-1]).unwrap_err();
    assert_eq!(
        err.message(),
        "shape[0] is -1; extents must not be negative"
    );
    // Refused by the C library itself (too many dimensions): the boxed Vec is reclaimed by the
    // error path, not leaked and not released twice (miri/valgrind/ASan would see either).
    let shape = vec![1i64; 65];
    let err = Tensor::from_vec(vec![1.0f32], &shape).unwrap_err();
    assert_eq!(err.status(), status::INVALID_ARGUMENT);
    assert_eq!(err.message(), "ndim 65 exceeds the maximum of 64");
}

#[test]
fn wrap_raw_error_does_not_call_release() {
    let _g = LiveGuard::new();
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut data = [0u8; 4];
    let shape = [1i64; 65];
    let parts =
        dlbridge::RawParts::new(data.as_mut_ptr().cast(), Device::CPU, DType::UINT8, &shape);
    let err = unsafe {
        Tensor::wrap_raw(&parts, || {
            RELEASED.fetch_add(1, Ordering::SeqCst);
        })
    }
    .unwrap_err();
    assert_eq!(err.status(), status::INVALID_ARGUMENT);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 0);
    let shape = [4i64];
    let parts =
        dlbridge::RawParts::new(data.as_mut_ptr().cast(), Device::CPU, DType::UINT8, &shape);
    let t = unsafe {
        Tensor::wrap_raw(&parts, || {
            RELEASED.fetch_add(1, Ordering::SeqCst);
        })
    }
    .unwrap();
    let v = t.share().unwrap();
    drop(t);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 0);
    drop(v);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 1);
}

#[test]
fn many_threads_share_and_drop() {
    let _g = LiveGuard::new();
    let start = dlbridge::live_count();
    let base =
        Arc::new(Tensor::from_vec((0..4096).map(|i| i as f32).collect(), &[64, 64]).unwrap());
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|k| {
            let base = base.clone();
            let barrier = barrier.clone();
            thread::spawn(move || {
                barrier.wait();
                let mut mine = Vec::new();
                for i in 0..2000 {
                    let s = base.share().unwrap();
                    let v = s.select(0, (i % 64) as i64).unwrap();
                    assert_eq!(v.as_slice::<f32>().unwrap()[1], ((i % 64) * 64 + 1) as f32);
                    if (i + k) % 3 == 0 {
                        mine.push(v); // outlives `s`, dropped later
                    }
                }
                mine
            })
        })
        .collect();
    // Hand every kept view to another thread to drop: releases cross threads.
    let kept: Vec<Vec<Tensor>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let droppers: Vec<_> = kept
        .into_iter()
        .map(|views| thread::spawn(move || drop(views)))
        .collect();
    for d in droppers {
        d.join().unwrap();
    }
    drop(base);
    assert_eq!(dlbridge::live_count(), start);
}

#[test]
fn vec_released_by_last_owner_on_another_thread() {
    let _g = LiveGuard::new();
    let t = Tensor::from_vec(vec![3.0f64; 1 << 16], &[256, 256]).unwrap();
    let views: Vec<Tensor> = (0..4).map(|i| t.select(0, i).unwrap()).collect();
    drop(t);
    let handles: Vec<_> = views
        .into_iter()
        .map(|v| thread::spawn(move || v.as_slice::<f64>().unwrap()[255]))
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 3.0);
    }
    let _ = &COUNTED_DROPS;
}
