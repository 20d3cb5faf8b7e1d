//! The Rust peer of suite ipc's exchange across languages (tests/ipc/README.md, "The peer
//! protocol"): `ipc_peer_rust consume PATH` or `ipc_peer_rust produce PATH`, with the `dlbridge`
//! crate's public API alone.
use dlbridge::ipc::{Channel, Listener};
use dlbridge::{status, DType, Device, Tensor};
use std::io::Write;

type Outcome = std::result::Result<(), String>;

fn expect(ok: bool, what: &str) -> Outcome {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

fn consume(path: &str) -> Outcome {
    let listener = Listener::bind(path).map_err(|e| format!("listen: {e}"))?;
    println!("ready");
    std::io::stdout().flush().ok();
    let channel = listener.accept().map_err(|e| format!("accept: {e}"))?;
    let (pid, uid) = channel.peer().map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions.
    expect(pid > 0 && uid == unsafe { geteuid() }, "the peer's pid and uid")?;
    let mut t = channel.receive().map_err(|e| format!("receive: {e}"))?;
    expect(t.dtype() == DType::FLOAT32 && t.shape() == [2, 3], "not a float32 [2, 3]")?;
    expect(t.is_shareable(), "a received tensor is shareable")?;
    let mut values = t.to_vec::<f32>().map_err(|e| e.to_string())?;
    expect(values == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "the values are not 0..5")?;
    values[0] = 100.0;
    // A received tensor's memory is the producer's too, so the checked copy_from_slice refuses
    // it. SAFETY: the producer neither reads nor writes it until this tensor is sent back.
    unsafe { t.copy_from_slice_aliased(&values) }.map_err(|e| e.to_string())?;
    channel.send(&t).map_err(|e| format!("send back: {e}"))?;
    let copied = channel.receive().map_err(|e| format!("receive the copy: {e}"))?;
    expect(copied.to_vec::<i32>().map_err(|e| e.to_string())? == [7, 8], "the copy's values")?;
    expect(copied.is_copied(), "IS_COPIED is not set")?;
    match channel.receive() {
        Err(e) if e.status() == status::PEER_CLOSED && e.message() == "the peer closed the channel" => {}
        other => return Err(format!("after the peer closed: {:?}", other.err())),
    }
    println!("consume ok");
    Ok(())
}

fn produce(path: &str) -> Outcome {
    let channel = Channel::connect(path).map_err(|e| format!("connect: {e}"))?;
    let mut x = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[2, 3])
        .map_err(|e| e.to_string())?;
    x.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).map_err(|e| e.to_string())?;
    channel.send(&x).map_err(|e| format!("send: {e}"))?;
    let back = channel.receive().map_err(|e| format!("receive back: {e}"))?;
    let first = |t: &Tensor| t.to_vec::<f32>().map(|v| v[0]).unwrap_or(f32::NAN);
    expect(first(&x) == 100.0, "the consumer's write is not in our tensor")?;
    expect(first(&back) == 100.0, "the tensor sent back")?;
    let plain = Tensor::from_slice(&[7i32, 8], &[2]).map_err(|e| e.to_string())?;
    channel.send_copy(&plain).map_err(|e| format!("send a copy: {e}"))?;
    drop(channel);
    println!("produce ok");
    Ok(())
}

extern "C" {
    fn geteuid() -> u32;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let outcome = match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("consume"), Some(path)) if args.len() == 3 => consume(path),
        (Some("produce"), Some(path)) if args.len() == 3 => produce(path),
        _ => {
            eprintln!("usage: ipc_peer_rust consume|produce PATH");
            std::process::exit(2);
        }
    };
    if let Err(what) = outcome {
        eprintln!("rust {}: {what}", args[1]);
        std::process::exit(1);
    }
}
