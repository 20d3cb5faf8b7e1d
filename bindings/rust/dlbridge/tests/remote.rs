//! Remote channels through the safe API (`ipc::ChannelOptions`, `Listener::bind_with_options`,
//! `Channel::connect_with_options`): the options' checks are the core's, with its messages;
//! over tcp://127.0.0.1:0, with the listener on one thread and the connecting side on another,
//! tensors come back as new IS_COPIED tensors, a wrong key is PERMISSION at both ends and a
//! missing one INVALID_ARGUMENT. The remote cases skip (printing the core's reason) where
//! `remote_available` says remote channels cannot be made.

use dlbridge::ipc::{self, Channel, ChannelOptions, Listener};
use dlbridge::{device_type, status, DType, Device, Error, Tensor};
use std::thread;
use std::time::Duration;

const KEY: &[u8] = b"a key of thirty-two bytes, for tests";

fn keyed(key: &[u8]) -> ChannelOptions {
    // A broken peer fails the test instead of hanging it.
    ChannelOptions::new()
        .and_then(|o| o.key(key))
        .and_then(|o| o.timeout(Some(Duration::from_secs(30))))
        .unwrap()
}

/// False, after saying why, when this process cannot make remote channels.
fn remote_or_skip() -> bool {
    match ipc::remote_available() {
        Ok(()) => true,
        Err(e) => {
            assert_eq!(e.status(), status::UNSUPPORTED);
            eprintln!("skipped: {}", e.message());
            false
        }
    }
}

fn assert_error(result: Result<impl Sized, Error>, expected_status: i32, expected_message: &str) {
    match result {
        Ok(_) => panic!(
            "expected {}: {expected_message}",
            dlbridge::status_name(expected_status)
        ),
        Err(e) => {
            assert_eq!(e.status_name(), dlbridge::status_name(expected_status));
            assert_eq!(e.message(), expected_message);
        }
    }
}

#[test]
fn the_options_are_checked_by_the_core() {
    let options = ChannelOptions::new().unwrap();
    assert_error(
        options.key(&[7u8; 15]),
        status::INVALID_ARGUMENT,
        "a key of 15 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)",
    );
    assert_error(
        ChannelOptions::new().unwrap().key(&[1u8; 1025]),
        status::INVALID_ARGUMENT,
        "a key of 1025 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)",
    );
    assert_error(
        ChannelOptions::new()
            .unwrap()
            .receive_device(Device::opencl(0)),
        status::UNSUPPORTED,
        "a remote channel receives into cpu, cuda_host, cuda or cuda_managed memory, not opencl",
    );
    assert_error(
        ChannelOptions::new().unwrap().max_tensor_bytes(0),
        status::INVALID_ARGUMENT,
        "a maximum tensor size of 0 bytes: at least 1",
    );
    assert_error(
        ChannelOptions::new().unwrap().max_in_flight(65537),
        status::INVALID_ARGUMENT,
        "a maximum of 65537 tensors in flight: 1 to 65536",
    );
    // Every setter chains; the bounds themselves are accepted.
    let options = ChannelOptions::new()
        .unwrap()
        .key(&[3u8; ipc::MIN_KEY_BYTES])
        .unwrap()
        .key(&vec![3u8; ipc::MAX_KEY_BYTES])
        .unwrap()
        .receive_device(Device::CPU)
        .unwrap()
        .receive_device(Device::new(device_type::CUDA_HOST, 0))
        .unwrap()
        .max_tensor_bytes(1)
        .unwrap()
        .max_in_flight(65536)
        .unwrap()
        .timeout(Some(Duration::ZERO))
        .unwrap()
        .timeout(None)
        .unwrap()
        .listener_uid(None)
        .unwrap();
    assert_eq!(format!("{options:?}"), "ChannelOptions { .. }"); // no key in logs
    assert_eq!(ipc::MIN_KEY_BYTES, 16);
    assert_eq!(ipc::MAX_KEY_BYTES, 1024);
    assert_eq!(ipc::DEFAULT_MAX_TENSOR_BYTES, 1 << 30);
}

#[test]
fn a_local_channel_made_with_options_is_not_remote() {
    let dir = std::env::temp_dir().join(format!("dlbridge-rust-remote-{}", std::process::id()));
    let path = dir.join("s.sock");
    let options = keyed(KEY); // a local channel ignores the key
    let listener = Listener::bind_with_options(&path, &options).unwrap();
    let client = Channel::connect_with_options(&path, &options).unwrap();
    let server = listener.accept().unwrap();
    assert!(!listener.is_remote() && !client.is_remote() && !server.is_remote());
    assert_eq!(listener.port(), None);
    assert_eq!(client.port(), None);
    let mut t = Tensor::allocate_shareable(Device::CPU, DType::INT32, &[2]).unwrap();
    t.copy_from_slice(&[4i32, 5]).unwrap();
    client.send(&t).unwrap();
    assert_eq!(
        server.receive().unwrap().to_vec::<i32>().unwrap(),
        vec![4, 5]
    );
    drop(listener);
    std::fs::remove_dir(&dir).unwrap(); // the listener removed its socket file
}

#[test]
fn remote_available_says_what_the_core_says() {
    let mut err = dlbridge::ffi::dlb_error { message: [0; 512] };
    // SAFETY: err is valid for writes.
    let status = unsafe { dlbridge::ffi::dlb_remote_available(&mut err) };
    match ipc::remote_available() {
        Ok(()) => assert_eq!(status, status::OK),
        Err(e) => {
            assert_eq!(e.status(), status);
            // SAFETY: the core wrote a NUL-terminated message.
            let message = unsafe { std::ffi::CStr::from_ptr(err.message.as_ptr()) };
            assert_eq!(e.message(), message.to_str().unwrap());
        }
    }
}

fn round_trip(scheme: &str) {
    if !remote_or_skip() {
        return;
    }
    let listener =
        Listener::bind_with_options(format!("{scheme}://127.0.0.1:0"), &keyed(KEY)).unwrap();
    assert!(listener.is_remote());
    let port = listener.port().unwrap();
    assert!(port > 0);
    let server = thread::spawn(move || {
        let channel = listener.accept().unwrap();
        assert!(channel.is_remote());
        let mut got = channel.receive().unwrap();
        assert!(got.is_copied() && got.is_exclusive());
        assert_eq!(got.shape(), &[2, 3]);
        assert_eq!(got.dtype(), DType::FLOAT32);
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        got.as_mut_slice::<f32>().unwrap()[0] = 100.0; // its own memory: safe code writes it
        channel.send(&got).unwrap();
        channel.receive().unwrap_err().status()
    });
    let client =
        Channel::connect_with_options(format!("{scheme}://127.0.0.1:{port}"), &keyed(KEY)).unwrap();
    assert!(client.is_remote());
    assert!(client.port().is_some());
    // Ordinary (not shareable) memory: a remote channel sends any tensor.
    let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
    client.send(&x).unwrap();
    let back = client.receive().unwrap();
    assert!(back.is_copied());
    assert_eq!(
        back.to_vec::<f32>().unwrap(),
        vec![100.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    assert_eq!(x.to_vec::<f32>().unwrap()[0], 0.0); // the bytes were copied, not shared
    drop(client);
    assert_eq!(
        dlbridge::status_name(server.join().unwrap()),
        "DLB_ERR_PEER_CLOSED"
    );
}

#[test]
fn a_tensor_round_trip_over_tcp() {
    round_trip("tcp");
}

#[test]
fn a_tensor_round_trip_over_ucx() {
    round_trip("ucx");
}

#[test]
fn a_transpose_arrives_compact_or_with_its_strides_when_sent_keeping_layout() {
    if !remote_or_skip() {
        return;
    }
    let listener = Listener::bind_with_options("tcp://127.0.0.1:0", &keyed(KEY)).unwrap();
    let port = listener.port().unwrap();
    let server = thread::spawn(move || {
        let channel = listener.accept().unwrap();
        let packed = channel.receive().unwrap();
        let kept = channel.receive().unwrap();
        (
            packed.strides().to_vec(),
            packed.to_vec::<f32>().unwrap(),
            kept.strides().to_vec(),
            kept.to_vec::<f32>().unwrap(),
        )
    });
    let client =
        Channel::connect_with_options(format!("tcp://127.0.0.1:{port}"), &keyed(KEY)).unwrap();
    let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
    let xt = x.transpose().unwrap();
    client.send(&xt).unwrap();
    client.send_keeping_layout(&xt).unwrap();
    let (packed_strides, packed, kept_strides, kept) = server.join().unwrap();
    let want = vec![0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0];
    assert_eq!(packed_strides, vec![2, 1]);
    assert_eq!(packed, want);
    assert_eq!(kept_strides, vec![1, 3]);
    assert_eq!(kept, want);
}

#[test]
fn a_stream_sent_with_send_more_arrives_whole_and_in_order() {
    if !remote_or_skip() {
        return;
    }
    const COUNT: usize = 20;
    let listener = Listener::bind_with_options("tcp://127.0.0.1:0", &keyed(KEY)).unwrap();
    let port = listener.port().unwrap();
    let server = thread::spawn(move || {
        let channel = listener.accept().unwrap();
        (0..COUNT)
            .map(|_| {
                let got = channel.receive().unwrap();
                (
                    got.shape().to_vec(),
                    got.to_vec::<f32>().unwrap(),
                    got.is_copied(),
                )
            })
            .collect::<Vec<_>>()
    });
    let client =
        Channel::connect_with_options(format!("tcp://127.0.0.1:{port}"), &keyed(KEY)).unwrap();
    let values = |i: usize| (0..=i).map(|j| (i * 100 + j) as f32).collect::<Vec<f32>>();
    for i in 0..COUNT {
        // Each tensor is dropped right after its send: its bytes were copied.
        let x = Tensor::from_vec(values(i), &[i as i64 + 1]).unwrap();
        if i + 1 < COUNT {
            client.send_more(&x).unwrap();
        } else {
            client.send(&x).unwrap();
        }
    }
    let received = server.join().unwrap();
    assert_eq!(received.len(), COUNT);
    for (i, (shape, got, copied)) in received.into_iter().enumerate() {
        assert_eq!(shape, vec![i as i64 + 1], "tensor {i}");
        assert_eq!(got, values(i), "tensor {i}");
        assert!(copied, "tensor {i}");
    }
}

#[test]
fn a_wrong_key_is_refused_at_both_ends_and_the_listener_keeps_serving() {
    if !remote_or_skip() {
        return;
    }
    let listener = Listener::bind_with_options("tcp://127.0.0.1:0", &keyed(KEY)).unwrap();
    let address = format!("tcp://127.0.0.1:{}", listener.port().unwrap());
    let server = thread::spawn(move || {
        let refused = listener.accept().map(|_| ()).unwrap_err();
        // The next peer has the key.
        let channel = listener.accept().unwrap();
        (refused, channel.receive().unwrap().to_vec::<i32>().unwrap())
    });
    assert_error(
        Channel::connect_with_options(&address, &keyed(&[b'w'; 32])),
        status::PERMISSION,
        &format!("the listener at {address} refused this channel's key"),
    );
    let client = Channel::connect_with_options(&address, &keyed(KEY)).unwrap();
    client
        .send(&Tensor::from_vec(vec![7i32, 8], &[2]).unwrap())
        .unwrap();
    let (refused, served) = server.join().unwrap();
    assert_eq!(served, vec![7, 8]);
    assert_eq!(refused.status_name(), "DLB_ERR_PERMISSION");
    // "refused the peer at tcp://127.0.0.1:PORT: ...", PORT the connecting side's.
    let port = refused
        .message()
        .strip_prefix("refused the peer at tcp://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix(": it did not prove it holds the channel's key"))
        .unwrap_or_else(|| panic!("unexpected message: {}", refused.message()));
    assert!(port.parse::<u16>().is_ok(), "not a port: {port}");
}

#[test]
fn no_key_is_invalid_to_listen_and_to_connect() {
    if !remote_or_skip() {
        return;
    }
    let message = "a remote channel needs a key that its peers share (dlb_channel_options_set_key)";
    let no_key = ChannelOptions::new().unwrap();
    assert_error(
        Listener::bind_with_options("tcp://127.0.0.1:0", &no_key),
        status::INVALID_ARGUMENT,
        message,
    );
    let listener = Listener::bind_with_options("tcp://127.0.0.1:0", &keyed(KEY)).unwrap();
    assert_error(
        Channel::connect_with_options(
            format!("tcp://127.0.0.1:{}", listener.port().unwrap()),
            &no_key,
        ),
        status::INVALID_ARGUMENT,
        message,
    );
}
