//! Tensors between two processes through the safe API: this test binary runs itself a second
//! time as the producer (the `producer` test, which does nothing unless DLBRIDGE_IPC_SOCKET
//! names a channel to connect to).

mod common;

use common::expected_cuda_error;
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
    t.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0])
        .unwrap();
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
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
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

fn scratch_socket(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("dlbridge-rust-{name}-{}", std::process::id()));
    let path = dir.join("channel.sock");
    (dir, path)
}

fn assert_closed(e: dlbridge::Error) {
    assert_eq!(e.status(), status::CLOSED);
    assert_eq!(e.message(), "the channel is closed");
}

#[test]
fn a_shutdown_handle_wakes_a_receive_blocked_in_another_thread() {
    fn shareable_across_threads<T: Send + Sync + Clone>() {}
    shareable_across_threads::<dlbridge::ipc::Shutdown>();
    let (dir, path) = scratch_socket("shutdown");
    let listener = Listener::bind(&path).unwrap();
    let producer = Channel::connect(&path).unwrap();
    let consumer = listener.accept().unwrap();
    let stop = consumer.shutdown_handle();
    // The consumer moves to a thread and waits for a tensor the producer never sends.
    let waiting = std::thread::spawn(move || {
        let e = consumer.receive().unwrap_err();
        // Every later call fails the same way; the channel is still the thread's to drop.
        let again = consumer.receive().unwrap_err();
        (e, again)
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.shutdown();
    let (e, again) = waiting.join().unwrap();
    assert_closed(e);
    assert_closed(again);
    stop.shutdown(); // after its channel was dropped: a no-op
    drop(stop);
    // The producer's end sees the connection ended.
    let e = producer.receive().unwrap_err();
    assert_eq!(e.status(), status::DEVICE);
    assert_eq!(e.message(), "the peer closed the channel");
    drop(producer);
    drop(listener);
    assert!(!path.exists());
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn a_shutdown_handle_wakes_an_accept_and_the_socket_file_goes_with_the_last_handle() {
    let (dir, path) = scratch_socket("shutdown-accept");
    let listener = Listener::bind(&path).unwrap();
    let stop = listener.shutdown_handle();
    let waiting = std::thread::spawn(move || listener.accept().map(|_| ()).unwrap_err());
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.shutdown();
    assert_closed(waiting.join().unwrap());
    // The listener was dropped in its thread; the handle still holds the record (and the file).
    assert!(path.exists());
    drop(stop);
    assert!(!path.exists());
    std::fs::remove_dir(&dir).ok();
}

/// The CUDA half of channels, where it can run without a GPU: the kinds of shareable memory,
/// and the refusals of the CUDA calls for host tensors (or, in a library built without CUDA,
/// their UNSUPPORTED). The GPU cases are the core's suite `ipc` (tests/ipc/test_ipc_cuda.cc).
#[test]
fn cuda_sends_and_waits_refuse_host_tensors_with_the_cores_messages() {
    use dlbridge::ipc::shareable;
    let built_without_cuda =
        matches!(expected_cuda_error(), Some((code, _)) if code == status::UNSUPPORTED);
    let (dir, path) = scratch_socket("cuda");
    let listener = Listener::bind(&path).unwrap();
    let sender = Channel::connect(&path).unwrap();
    let receiver = listener.accept().unwrap();
    let host = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[4]).unwrap();
    assert_eq!(host.shareable_kind(), shareable::MEMFD);
    let plain = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    assert_eq!(plain.shareable_kind(), shareable::NONE);
    // SAFETY: the null stream is the legacy default stream.
    let e = unsafe { sender.send_cuda(&host, dlbridge::Stream::NULL) }.unwrap_err();
    sender.send(&host).unwrap();
    let got = receiver.receive().unwrap();
    assert_eq!(got.shareable_kind(), shareable::MEMFD);
    // SAFETY: no stream handle is passed (the legacy default stream's number).
    let w = unsafe { got.cuda_wait_received(dlbridge::cuda::STREAM_LEGACY) }.unwrap_err();
    if built_without_cuda {
        for e in [e, w] {
            assert_eq!(e.status(), status::UNSUPPORTED);
            assert_eq!(e.message(), "dlbridge was built without CUDA support");
        }
    } else {
        assert_eq!(e.status(), status::INVALID_ARGUMENT);
        assert_eq!(
            e.message(),
            "dlb_channel_send_cuda sends cuda tensors, not cpu ones: use dlb_channel_send"
        );
        assert_eq!(w.status(), status::INVALID_ARGUMENT);
        assert_eq!(
            w.message(),
            "the tensor is not cuda memory received from a channel"
        );
    }
    drop((got, receiver, sender, listener));
    std::fs::remove_dir(&dir).ok();
}
