//! Tensors between two processes through the safe API: this test binary runs itself a second
//! time as the producer (the `producer` test, which does nothing unless DLBRIDGE_IPC_SOCKET
//! names a channel to connect to), and, when it runs as root, as a peer of another user (the
//! `uid_peer` test, which does nothing unless DLBRIDGE_IPC_UID_PEER names its part). The
//! channel's own statuses (NO_LISTENER, PERMISSION, PEER_CLOSED, PROTOCOL, TIMEOUT) are met with
//! raw `UnixStream` peers that send half a frame, a forged frame, or nothing.

mod common;

use common::expected_cuda_error;
use dlbridge::ipc::{Channel, Listener};
use dlbridge::{status, DType, Device, Tensor};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SOCKET: &str = "DLBRIDGE_IPC_SOCKET";

/// Held (shared) while a test starts a child process: a child holds a copy of every descriptor of
/// this process from its fork until its exec, which `spawn` waits for. A test that needs a socket
/// of its own to be really closed holds it exclusively.
static SPAWNING: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn spawn(command: &mut Command) -> Child {
    let _no_closing_now = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
    command.spawn().unwrap()
}

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
    let mut back = channel.receive().unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), vec![7, 8]);
    // A copy made for the exchange (IS_COPIED) is this process's own: safe code writes it.
    assert!(back.is_copied() && back.is_exclusive());
    back.as_mut_slice::<i32>().unwrap()[0] = 9;
    assert_eq!(t.to_vec::<f32>().unwrap()[0], 100.0);
}

#[test]
fn a_tensor_crosses_processes_both_ways_without_a_copy() {
    let dir = std::env::temp_dir().join(format!("dlbridge-rust-ipc-{}", std::process::id()));
    let path = dir.join("channel.sock");
    let listener = Listener::bind(&path).unwrap();
    let mut producer = spawn(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "producer", "--test-threads=1"])
            .env(SOCKET, &path),
    );
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
        "the tensor's memory is not shareable: allocate it as shareable memory, or send a copy"
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
    // Unique per call, not only per process: a folder left by an earlier run whose process had
    // the same pid must not make this one fail.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "dlbridge-rust-{name}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
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
    assert_eq!(e.status(), status::PEER_CLOSED);
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
            "the cuda send takes cuda tensors, not cpu ones: send it without a stream"
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

/// A shareable float32 [4] tensor holding 0, 1, 2, 3.
fn shareable_iota4() -> Tensor {
    let mut t = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[4]).unwrap();
    t.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0]).unwrap();
    t
}

fn assert_error(e: dlbridge::Error, want_status: i32, want_message: &str) {
    assert_eq!(
        (e.status_name(), e.message()),
        (dlbridge::status_name(want_status), want_message)
    );
}

/// Section 5 of issue 31: the same refusal as every other language where the cause is the same
/// (the core's checks, READ_ONLY first), and Rust's own aliasing rule, which says so and names
/// the unsafe call, only after them.
#[test]
fn writes_into_received_tensors_meet_the_cores_checks_first_then_rusts_aliasing_rule() {
    let (dir, path) = scratch_socket("writes");
    let listener = Listener::bind(&path).unwrap();
    let sender = Channel::connect(&path).unwrap();
    let receiver = listener.accept().unwrap();
    let mut t = shareable_iota4();
    assert!(t.is_exclusive()); // not sent yet
    sender.send(&t.share_read_only().unwrap()).unwrap();
    sender.send(&t).unwrap();
    let source = Tensor::from_vec(vec![5.0f32; 4], &[4]).unwrap();

    // Sent READ_ONLY: mapped read-only; every write is the core's READ_ONLY, as in C, C++,
    // Java, C# and Go.
    let mut ro = receiver.receive().unwrap();
    assert!(ro.is_read_only());
    let read_only = "the tensor is read-only";
    let copy_read_only = "cannot copy into a read-only tensor";
    assert_error(
        ro.as_mut_slice::<f32>().unwrap_err(),
        status::READ_ONLY,
        read_only,
    );
    // SAFETY: refused before any slice exists.
    let e = unsafe { ro.as_mut_slice_aliased::<f32>() }.unwrap_err();
    assert_error(e, status::READ_ONLY, read_only);
    assert_error(
        ro.copy_from_slice(&[9.0f32; 4]).unwrap_err(),
        status::READ_ONLY,
        copy_read_only,
    );
    assert_error(
        source.copy_into(&mut ro).unwrap_err(),
        status::READ_ONLY,
        copy_read_only,
    );
    assert_eq!(ro.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);

    // Sent writable: the peer maps the same memory. A wrong element type is still the core's
    // message; then Rust refuses a safe write, says why, and names the unsafe call.
    let mut rw = receiver.receive().unwrap();
    assert!(!rw.is_read_only());
    assert!(!rw.is_exclusive());
    assert_error(
        rw.as_mut_slice::<i32>().unwrap_err(),
        status::INVALID_ARGUMENT,
        "the tensor holds float32 elements, not int32",
    );
    let aliasing = |call: &str| {
        format!(
            "Rust's aliasing rule refuses a safe write into memory another process may write \
             (shareable memory sent or received on a channel, or a view or share of it): copy \
             it (copy_to) or use the unsafe {call}"
        )
    };
    assert_error(
        rw.as_mut_slice::<f32>().unwrap_err(),
        status::INVALID_ARGUMENT,
        &aliasing("as_mut_slice_aliased"),
    );
    assert_error(
        rw.copy_from_slice(&[9.0f32; 4]).unwrap_err(),
        status::INVALID_ARGUMENT,
        &aliasing("copy_from_slice_aliased"),
    );
    assert_error(
        source.copy_into(&mut rw).unwrap_err(),
        status::INVALID_ARGUMENT,
        &aliasing("copy_into_aliased"),
    );
    // The sender's tensor is shared with the other end now too.
    assert!(!t.is_exclusive());
    assert_error(
        t.as_mut_slice::<f32>().unwrap_err(),
        status::INVALID_ARGUMENT,
        &aliasing("as_mut_slice_aliased"),
    );
    // Memory that is not shareable keeps the message about other tensors.
    let mut plain = Tensor::zeros::<f32>(&[4]).unwrap();
    let view = plain.share().unwrap();
    assert_error(
        plain.as_mut_slice::<f32>().unwrap_err(),
        status::INVALID_ARGUMENT,
        "tensor memory is shared with other tensors (a view, a share or an import); copy it \
         (copy_to) or use the unsafe as_mut_slice_aliased",
    );
    drop(view);
    // The unsafe call writes, and the sender sees it: the same memory.
    // SAFETY: no other thread or process touches the memory during the call.
    unsafe { rw.copy_from_slice_aliased(&[9.0f32, 8.0, 7.0, 6.0]) }.unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![9.0, 8.0, 7.0, 6.0]);
    // A copy is this process's own: writable through safe code.
    let mut own = rw.copy_to(Device::CPU).unwrap();
    own.as_mut_slice::<f32>().unwrap()[0] = 1.0;
    drop((ro, rw, receiver, sender, listener));
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn connecting_where_nothing_listens_is_no_listener() {
    let (dir, path) = scratch_socket("absent");
    let want = format!(
        "nothing listens at '{}' (No such file or directory)",
        path.display()
    );
    assert_error(
        Channel::connect(&path).map(|_| ()).unwrap_err(),
        status::NO_LISTENER,
        &want,
    );
    let e = Channel::connect_with(&path, None, Some(Duration::from_secs(1)))
        .map(|_| ())
        .unwrap_err();
    assert_error(e, status::NO_LISTENER, &want);
    // A socket file nobody accepts on (its listener went away without removing it); no child
    // starting meanwhile may hold a copy of the listener, which would accept.
    let _no_child_starts = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir(&dir).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    assert_error(
        Channel::connect(&path).map(|_| ()).unwrap_err(),
        status::NO_LISTENER,
        &format!(
            "nothing listens at '{}' (Connection refused)",
            path.display()
        ),
    );
    std::fs::remove_file(&path).ok();
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn listening_in_a_folder_others_can_enter_is_permission() {
    let (dir, path) = scratch_socket("open-folder");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_error(
        Listener::bind(&path).map(|_| ()).unwrap_err(),
        status::PERMISSION,
        &format!(
            "folder '{}' can be entered by other users (mode 0755): a channel's socket must \
             live in a folder only its user can enter (mode 0700)",
            dir.display()
        ),
    );
    std::fs::remove_dir(&dir).ok();
}

/// The first 16 bytes of a tensor descriptor (magic, major 1, minor 1): half a frame.
fn half_descriptor() -> Vec<u8> {
    let mut bytes = b"dlbridge".to_vec();
    bytes.extend_from_slice(&1u32.to_ne_bytes());
    bytes.extend_from_slice(&1u32.to_ne_bytes());
    bytes
}

/// The size of one descriptor frame on the wire (the core's `Wire`: 64 bytes, then shape and
/// strides of 64 dimensions).
const DESCRIPTOR_BYTES: usize = 64 + 2 * 64 * 8;

#[test]
fn a_receive_times_out_on_a_peer_that_sends_half_a_frame_and_the_channel_is_then_out_of_step() {
    let (dir, path) = scratch_socket("half-frame");
    let listener = Listener::bind(&path).unwrap();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let peer_path = path.clone();
    let peer = std::thread::spawn(move || {
        let mut stream = UnixStream::connect(&peer_path).unwrap();
        stream.write_all(&half_descriptor()).unwrap();
        wait_done.recv().ok(); // then nothing, until the test is over
    });
    let channel = listener.accept().unwrap();
    channel
        .set_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let start = Instant::now();
    let e = channel.receive().map(|_| ()).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert_error(
        e,
        status::TIMEOUT,
        "receiving on the channel: the time limit ran out",
    );
    // Half a tensor came in: the stream has lost its place, whatever the limit is now.
    channel.set_timeout(None).unwrap();
    let lost = "the channel lost its place in the stream when a time limit ran out in the middle \
                of a tensor: close it";
    assert_error(
        channel.receive().map(|_| ()).unwrap_err(),
        status::PROTOCOL,
        lost,
    );
    assert_error(
        channel.send(&shareable_iota4()).unwrap_err(),
        status::PROTOCOL,
        lost,
    );
    done.send(()).unwrap();
    peer.join().unwrap();
    drop((channel, listener));
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn time_limits_on_accept_connect_and_receive_leave_the_channel_usable_when_nothing_had_come() {
    let (dir, path) = scratch_socket("limits");
    let listener = Listener::bind(&path).unwrap();
    // Accept: nobody connects in time; the listener keeps serving.
    listener
        .set_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    assert_error(
        listener.accept().map(|_| ()).unwrap_err(),
        status::TIMEOUT,
        "waiting for a connection: the time limit ran out",
    );
    // The limit given to connect_with stays the channel's; the accepted channel takes the
    // listener's.
    let sender = Channel::connect_with(&path, None, Some(Duration::from_millis(50))).unwrap();
    let receiver = listener.accept().unwrap();
    let nothing = "receiving on the channel: the time limit ran out";
    assert_error(
        sender.receive().map(|_| ()).unwrap_err(),
        status::TIMEOUT,
        nothing,
    );
    assert_error(
        receiver.receive().map(|_| ()).unwrap_err(),
        status::TIMEOUT,
        nothing,
    );
    // Zero does not wait at all; nothing of a tensor had come, so the channel is still in step.
    receiver.set_timeout(Some(Duration::ZERO)).unwrap();
    assert_error(
        receiver.receive().map(|_| ()).unwrap_err(),
        status::TIMEOUT,
        nothing,
    );
    sender.send(&shareable_iota4()).unwrap();
    receiver.set_timeout(None).unwrap();
    assert_eq!(
        receiver.receive().unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0]
    );
    // A shut-down channel refuses a new limit.
    let stop = receiver.shutdown_handle();
    stop.shutdown();
    assert_closed(receiver.set_timeout(None).unwrap_err());
    drop((sender, receiver, listener));
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn a_peer_that_goes_away_is_peer_closed_also_in_the_middle_of_a_frame() {
    let (dir, path) = scratch_socket("peer-closed");
    let listener = Listener::bind(&path).unwrap();
    drop(Channel::connect(&path).unwrap());
    let channel = listener.accept().unwrap();
    assert_error(
        channel.receive().map(|_| ()).unwrap_err(),
        status::PEER_CLOSED,
        "the peer closed the channel",
    );
    // Half a descriptor, then the peer closes.
    let mut stream = UnixStream::connect(&path).unwrap();
    stream.write_all(&half_descriptor()).unwrap();
    drop(stream);
    let channel = listener.accept().unwrap();
    assert_error(
        channel.receive().map(|_| ()).unwrap_err(),
        status::PEER_CLOSED,
        &format!(
            "the peer closed the channel after 16 of the {DESCRIPTOR_BYTES} bytes of a descriptor"
        ),
    );
    // Sending to a peer that has gone.
    let gone = Channel::connect(&path).unwrap();
    drop(listener.accept().unwrap());
    assert_error(
        gone.send(&shareable_iota4()).unwrap_err(),
        status::PEER_CLOSED,
        "sending on the channel failed: the peer closed the channel (Broken pipe)",
    );
    drop((channel, gone, listener));
    std::fs::remove_dir(&dir).ok();
}

/// The server loop of docs/ipc.md: a misbehaving peer (a half frame and silence, a forged
/// frame, a peer that leaves at once) is skipped on its own status, and the server goes on to
/// serve the next.
#[test]
fn a_server_loop_skips_misbehaving_peers_and_keeps_serving() {
    let (dir, path) = scratch_socket("server-loop");
    let listener = Listener::bind(&path).unwrap();
    listener.set_timeout(Some(Duration::from_secs(10))).unwrap();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let peer_path = path.clone();
    let peers = std::thread::spawn(move || {
        let mut silent = UnixStream::connect(&peer_path).unwrap();
        silent.write_all(&half_descriptor()).unwrap();
        let mut forged = UnixStream::connect(&peer_path).unwrap();
        forged.write_all(&[0x5a; DESCRIPTOR_BYTES]).unwrap();
        drop(UnixStream::connect(&peer_path).unwrap());
        let good = Channel::connect(&peer_path).unwrap();
        good.send(&shareable_iota4()).unwrap();
        wait_done.recv().ok();
        drop((silent, forged, good));
    });
    let mut skipped = Vec::new();
    let served = loop {
        let channel = match listener.accept() {
            Ok(channel) => channel,
            Err(e) if e.status() == status::PERMISSION => {
                skipped.push(e);
                continue;
            }
            Err(e) => panic!("accept: {e}"),
        };
        channel
            .set_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        match channel.receive() {
            Ok(t) => break t,
            Err(e)
                if [
                    status::PEER_CLOSED,
                    status::PROTOCOL,
                    status::TIMEOUT,
                    status::PERMISSION,
                ]
                .contains(&e.status()) =>
            {
                skipped.push(e)
            }
            Err(e) => panic!("receive: {e}"),
        }
    };
    assert_eq!(served.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    let got: Vec<(&str, &str)> = skipped
        .iter()
        .map(|e| (e.status_name(), e.message()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "DLB_ERR_TIMEOUT",
                "receiving on the channel: the time limit ran out"
            ),
            (
                "DLB_ERR_PROTOCOL",
                "not a dlbridge tensor descriptor (bad magic)"
            ),
            ("DLB_ERR_PEER_CLOSED", "the peer closed the channel"),
        ]
    );
    done.send(()).unwrap();
    peers.join().unwrap();
    drop(listener);
    std::fs::remove_dir(&dir).ok();
}

// ---- two users: the test binary runs itself again as uid 65534 (root only) ----------------

const UID_PEER: &str = "DLBRIDGE_IPC_UID_PEER";
const OTHER_UID: u32 = 65534;
const READY: &str = "dlbridge-uid-peer-listening";
/// No call between the two users waits longer than this: a failure fails, it does not hang.
const LIMIT: Duration = Duration::from_secs(10);

extern "C" {
    fn setgroups(size: usize, list: *const u32) -> i32;
    fn setgid(gid: u32) -> i32;
    fn setuid(uid: u32) -> i32;
}

/// Drops this whole process to `uid` (and its group to the same number, no others).
fn become_user(uid: u32) {
    // SAFETY: plain system calls on integers; glibc applies them to every thread.
    unsafe {
        assert_eq!(setgroups(0, std::ptr::null()), 0, "setgroups");
        assert_eq!(setgid(uid), 0, "setgid");
        assert_eq!(setuid(uid), 0, "setuid");
    }
    assert_eq!(unsafe_geteuid(), uid);
}

/// Lets another user reach a listener's socket: folder 0711 (enter, not list), socket 0666.
/// The listener's allowed uids still decide who is accepted.
fn widen(path: &Path) {
    let dir = path.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// This test binary again, as uid 65534, running `uid_peer` with `part` at `path`.
fn spawn_other_user(part: &str, path: &Path) -> Child {
    spawn(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "uid_peer", "--test-threads=1", "--nocapture"])
            .env(UID_PEER, format!("{part}:{}", path.display()))
            .stdout(Stdio::piped()),
    )
}

fn running_as_root() -> bool {
    if unsafe_geteuid() == 0 {
        return true;
    }
    eprintln!("skipped: needs root to run a peer as another user (uid {OTHER_UID})");
    false
}

/// The peer of another user (does nothing unless UID_PEER is set):
/// - `connect:PATH`: connects naming the listener's uid 0, receives a tensor, sends it back,
///   and waits for the other end to close;
/// - `connect-refused:PATH`: connects naming uid 0, and is closed by the listener;
/// - `listen:PATH`: listens at PATH in a folder of its own, allows uid 0, widens the folder
///   and socket, prints READY, and serves peers until one echoes the tensor it sends
///   (float32 [4] 0, 1, 2, 3); a peer that goes away first is skipped.
#[test]
fn uid_peer() {
    let Ok(part) = std::env::var(UID_PEER) else {
        return; // run as a test of its own: nothing to do
    };
    become_user(OTHER_UID);
    let (part, path) = part.split_once(':').expect("PART:PATH");
    match part {
        "connect" => {
            let channel = Channel::connect_with(path, Some(0), Some(LIMIT)).unwrap();
            let t = channel.receive().unwrap();
            channel.send(&t).unwrap();
            let e = channel.receive().map(|_| ()).unwrap_err();
            assert_eq!(e.status(), status::PEER_CLOSED, "{e}");
        }
        "connect-refused" => {
            let channel = Channel::connect_with(path, Some(0), Some(LIMIT)).unwrap();
            assert_error(
                channel.receive().map(|_| ()).unwrap_err(),
                status::PEER_CLOSED,
                "the peer closed the channel",
            );
        }
        "listen" => {
            let listener = Listener::bind(path).unwrap();
            listener.allow_uid(0).unwrap();
            listener.set_timeout(Some(LIMIT)).unwrap();
            widen(Path::new(path));
            println!("{READY}");
            std::io::stdout().flush().unwrap();
            loop {
                let channel = listener.accept().unwrap();
                if let Err(e) = channel.send(&shareable_iota4()) {
                    assert_eq!(e.status(), status::PEER_CLOSED, "{e}");
                    continue;
                }
                match channel.receive() {
                    Ok(echo) => {
                        assert_eq!(echo.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
                        break;
                    }
                    Err(e) => assert_eq!(e.status(), status::PEER_CLOSED, "{e}"),
                }
            }
            drop(listener);
            std::fs::remove_dir(Path::new(path).parent().unwrap()).unwrap();
        }
        other => panic!("unknown part {other}"),
    }
}

#[test]
fn two_users_share_a_tensor_when_we_listen_and_allow_the_other_uid() {
    if !running_as_root() {
        return;
    }
    let (dir, path) = scratch_socket("uid-listen");
    let listener = Listener::bind(&path).unwrap();
    listener.set_timeout(Some(LIMIT)).unwrap();
    widen(&path);
    // Not allowed yet: refused at accept with its own status; the listener keeps serving.
    let mut refused = spawn_other_user("connect-refused", &path);
    assert_error(
        listener.accept().map(|_| ()).unwrap_err(),
        status::PERMISSION,
        "the peer runs as uid 65534, which this channel does not accept (allow that uid on the \
         listener)",
    );
    assert!(refused.wait().unwrap().success());
    listener.allow_uid(OTHER_UID).unwrap();
    let mut peer = spawn_other_user("connect", &path);
    let channel = listener.accept().unwrap();
    assert_eq!(channel.peer().unwrap(), (peer.id() as i32, OTHER_UID));
    let sent = shareable_iota4();
    channel.send(&sent).unwrap();
    let back = channel.receive().unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    drop(channel);
    assert!(peer.wait().unwrap().success());
    drop(listener);
    std::fs::remove_dir(&dir).ok();
}

#[test]
fn two_users_share_a_tensor_when_we_connect_naming_the_listeners_uid() {
    if !running_as_root() {
        return;
    }
    let dir: PathBuf =
        std::env::temp_dir().join(format!("dlbridge-rust-uid-peer-{}", std::process::id()));
    let path = dir.join("channel.sock");
    let mut peer = spawn_other_user("listen", &path);
    let mut out = BufReader::new(peer.stdout.take().unwrap());
    let mut line = String::new();
    // The harness prints "test uid_peer ... " before the test's own output, on the same line.
    while !line.trim_end().ends_with(READY) {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the peer ended before it listened"
        );
    }
    // A plain connect accepts only a listener of this user.
    assert_error(
        Channel::connect(&path).map(|_| ()).unwrap_err(),
        status::PERMISSION,
        "the listener runs as uid 65534, which this channel does not accept (name that uid \
         when connecting)",
    );
    let channel = Channel::connect_with(&path, Some(OTHER_UID), Some(LIMIT)).unwrap();
    assert_eq!(channel.peer().unwrap(), (peer.id() as i32, OTHER_UID));
    let t = channel.receive().unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    channel.send(&t).unwrap();
    assert!(peer.wait().unwrap().success());
    drop(channel);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_channel_statuses_have_their_names() {
    let names: Vec<&str> = [
        status::NO_LISTENER,
        status::PERMISSION,
        status::PEER_CLOSED,
        status::PROTOCOL,
        status::TIMEOUT,
        status::LIMIT,
    ]
    .iter()
    .map(|&s| dlbridge::status_name(s))
    .collect();
    assert_eq!(
        names,
        [
            "DLB_ERR_NO_LISTENER",
            "DLB_ERR_PERMISSION",
            "DLB_ERR_PEER_CLOSED",
            "DLB_ERR_PROTOCOL",
            "DLB_ERR_TIMEOUT",
            "DLB_ERR_LIMIT"
        ]
    );
    assert_eq!((status::NO_LISTENER, status::LIMIT), (11, 16));
}

/// Issue 33: a channel's pool. A tensor lent by it is filled by safe code, sent, and its slot
/// comes back when the receiver drops what it received; a lent tensor cannot be sent on.
#[test]
fn a_pool_tensor_is_filled_sent_and_its_slot_comes_back() {
    let (dir, path) = scratch_socket("pool");
    let listener = Listener::bind(&path).unwrap();
    let sender = Channel::connect(&path).unwrap();
    let receiver = listener.accept().unwrap();
    let stats = sender.pool_stats().unwrap();
    assert_eq!(
        (stats.segments, stats.limit),
        (0, dlbridge::ipc::POOL_DEFAULT_LIMIT)
    );
    {
        let mut t = sender.allocate(DType::FLOAT32, &[2, 3]).unwrap();
        assert!(t.is_exclusive()); // not sent yet
        t.copy_from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
            .unwrap();
        sender.send(&t).unwrap();
        assert!(!t.is_exclusive()); // the peer holds it now
        let got = receiver.receive().unwrap();
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        assert!(!got.is_shareable());
        assert_error(
            receiver.send(&got).unwrap_err(),
            status::UNSUPPORTED,
            "the tensor was lent by its sender's pool and goes back to it when freed: it cannot \
             be sent on; send a copy",
        );
        assert_eq!(sender.pool_stats().unwrap().lent, 1);
    }
    let stats = sender.pool_stats().unwrap();
    assert_eq!(
        (stats.lent, stats.returned, stats.live, stats.segments),
        (0, 1, 0, 1)
    );
    assert!(matches!(
        stats.huge_pages,
        dlbridge::ipc::huge_pages::NONE
            | dlbridge::ipc::huge_pages::TRANSPARENT
            | dlbridge::ipc::huge_pages::HUGETLB
    ));
    assert_error(
        sender.set_pool_limit(0).unwrap_err(),
        status::INVALID_ARGUMENT,
        "a pool limit of 0 bytes leaves no room",
    );
    sender.set_pool_limit(1 << 20).unwrap();
    assert_error(
        sender.allocate(DType::UINT8, &[4]).unwrap_err(),
        status::LIMIT,
        "a tensor of 4 bytes needs a pool segment of 2097152 bytes, more than the channel's pool \
         limit of 1048576 bytes (dlb_channel_set_pool_limit)",
    );
    drop((sender, receiver, listener));
    let _ = std::fs::remove_dir_all(dir);
}
