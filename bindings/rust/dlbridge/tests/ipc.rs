//! Tensors between two processes through the safe API: this test binary runs itself a second
//! time as the producer (the `producer` test, which does nothing unless DLBRIDGE_IPC_SOCKET
//! names a channel to connect to).

use dlbridge::ipc::{Channel, Listener};
use dlbridge::{status, DType, Device, Tensor};
use std::process::Command;

const SOCKET: &str = "DLBRIDGE_IPC_SOCKET";

#[test]
fn producer() {
    let Ok(path) = std::env::var(SOCKET) else {
        return; // run as a test of its own: nothing to do
    };
    let channel = Channel::connect(&path).expect("connect");
    let mut t = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[2, 3]).unwrap();
    t.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    channel.send(&t).unwrap();
    // Waits for the consumer's answer: the consumer's own tensor, and a write into ours.
    let back = channel.receive().unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), vec![7, 8]);
    assert_eq!(t.to_vec::<f32>().unwrap()[0], 100.0);
}

#[test]
fn a_tensor_crosses_processes_both_ways_without_a_copy() {
    let dir = std::env::temp_dir().join(format!("dlbridge-rust-ipc-{}", std::process::id()));
    let path = dir.join("channel.sock");
    let listener = Listener::bind(&path).unwrap();
    let mut producer = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "producer", "--test-threads=1"])
        .env(SOCKET, &path)
        .spawn()
        .unwrap();
    let channel = listener.accept().unwrap();
    let (pid, uid) = channel.peer().unwrap();
    assert_eq!(pid as u32, producer.id());
    assert_eq!(uid, unsafe_geteuid());
    let t = channel.receive().unwrap();
    assert!(t.is_shareable());
    assert!(!t.is_exclusive()); // the producer maps the same memory
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // Writing into shared memory is an aliased write: the producer is not reading it now.
    let mut first = t.select(0, 0).unwrap().select(0, 0).unwrap();
    // SAFETY: the producer waits for our answer before it reads.
    unsafe { first.copy_from_slice_aliased(&[100.0f32]) }.unwrap();
    // A tensor that is not shareable is refused, or copied when asked.
    let plain = Tensor::from_vec(vec![7i32, 8], &[2]).unwrap();
    let e = channel.send(&plain).unwrap_err();
    assert_eq!(e.status(), status::UNSUPPORTED);
    assert_eq!(
        e.message(),
        "the tensor's memory is not shareable: allocate it with dlb_tensor_allocate_shareable, or send with DLB_SEND_COPY"
    );
    channel.send_copy(&plain).unwrap();
    assert!(producer.wait().unwrap().success());
    drop(listener);
    assert!(!path.exists());
    std::fs::remove_dir(&dir).ok();
}

fn unsafe_geteuid() -> u32 {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid has no preconditions.
    unsafe { geteuid() }
}
