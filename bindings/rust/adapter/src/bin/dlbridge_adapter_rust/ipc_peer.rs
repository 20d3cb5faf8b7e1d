//! The Rust peer of suite ipc's exchange across languages (tests/ipc/README.md, "The peer
//! protocol"), the subcommand `ipc-peer` of the Rust adapter's program: `ipc-peer consume PATH`
//! or `ipc-peer produce PATH`, and of suite remote's pairs (`ipc-peer remote-consume KEYHEX
//! [SCHEME]`, `ipc-peer remote-produce ADDRESS KEYHEX`), with the `dlbridge` crate's public API
//! alone.
use dlbridge::ipc::{Channel, ChannelOptions, Listener};
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

/// Options holding the key KEYHEX spells (two hex digits a byte); the core checks its length.
fn options_with_key(hex: &str) -> std::result::Result<ChannelOptions, String> {
    let digits = hex.as_bytes();
    if digits.len() % 2 != 0 {
        return Err("KEYHEX has an odd number of hex digits".to_string());
    }
    let key = digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|text| u8::from_str_radix(text, 16).ok())
                .ok_or_else(|| "KEYHEX holds a character that is not a hex digit".to_string())
        })
        .collect::<std::result::Result<Vec<u8>, String>>()?;
    ChannelOptions::new()
        .and_then(|options| options.key(&key))
        .map_err(|e| format!("the key: {e}"))
}

/// True for a compact `dtype` tensor of `shape` on the CPU with IS_COPIED set.
fn is_copied_tensor(t: &Tensor, dtype: DType, shape: &[i64]) -> bool {
    t.dtype() == dtype && t.shape() == shape && t.device() == Device::CPU && t.is_copied()
}

fn remote_consume(hex: &str, scheme: &str) -> Outcome {
    let options = options_with_key(hex)?;
    let listener = Listener::bind_with_options(format!("{scheme}://127.0.0.1:0"), &options)
        .map_err(|e| format!("listen: {e}"))?;
    let port = listener.port().ok_or("the listener has no port")?;
    println!("ready {port}");
    std::io::stdout().flush().ok();
    let channel = listener.accept().map_err(|e| format!("accept: {e}"))?;
    expect(channel.is_remote(), "the accepted channel is not remote")?;
    let mut first = channel.receive().map_err(|e| format!("receive: {e}"))?;
    expect(
        is_copied_tensor(&first, DType::FLOAT32, &[2, 3]),
        "the first tensor is not a float32 [2, 3] with IS_COPIED",
    )?;
    let values = first.to_vec::<f32>().map_err(|e| e.to_string())?;
    expect(values == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "the first tensor does not hold 0..5")?;
    // A remote receive is this process's own memory: safe code writes it.
    first.as_mut_slice::<f32>().map_err(|e| e.to_string())?[0] = 100.0;
    channel.send(&first).map_err(|e| format!("send back: {e}"))?;
    let second = channel.receive().map_err(|e| format!("receive the second tensor: {e}"))?;
    expect(
        is_copied_tensor(&second, DType::INT32, &[7, 8]),
        "the second tensor is not an int32 [7, 8] with IS_COPIED",
    )?;
    let grid = second.to_vec::<i32>().map_err(|e| e.to_string())?;
    expect(
        grid.iter().enumerate().all(|(k, &v)| v == 8 * (k as i32 / 8) + k as i32 % 8),
        "the second tensor does not hold 8 * i + j",
    )?;
    match channel.receive() {
        Err(e) if e.status() == status::PEER_CLOSED => {}
        other => {
            return Err(format!(
                "receiving after the peer closed did not give PEER_CLOSED: {:?}",
                other.err()
            ))
        }
    }
    println!("consume ok");
    Ok(())
}

fn remote_produce(address: &str, hex: &str) -> Outcome {
    let options = options_with_key(hex)?;
    let channel =
        Channel::connect_with_options(address, &options).map_err(|e| format!("connect: {e}"))?;
    let x = Tensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])
        .map_err(|e| e.to_string())?;
    channel.send(&x).map_err(|e| format!("send: {e}"))?;
    let back = channel.receive().map_err(|e| format!("receive back: {e}"))?;
    let first = |t: &Tensor| t.to_vec::<f32>().map(|v| v[0]).unwrap_or(f32::NAN);
    expect(
        first(&back) == 100.0 && first(&x) == 0.0,
        "element [0, 0] is not 100 in the tensor received and 0 in our own",
    )?;
    let grid: Vec<i32> = (0..7).flat_map(|i| (0..8).map(move |j| 8 * i + j)).collect();
    let grid = Tensor::from_vec(grid, &[7, 8]).map_err(|e| e.to_string())?;
    channel.send(&grid).map_err(|e| format!("send the second tensor: {e}"))?;
    drop(channel);
    println!("produce ok");
    Ok(())
}

extern "C" {
    fn geteuid() -> u32;
}

/// Performs the peer's part `args` names (the words after `ipc-peer`); returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let outcome = match (args.first().map(String::as_str), args.get(1)) {
        (Some("consume"), Some(path)) if args.len() == 2 => consume(path),
        (Some("produce"), Some(path)) if args.len() == 2 => produce(path),
        (Some("remote-consume"), Some(hex)) if args.len() == 2 || args.len() == 3 => {
            remote_consume(hex, args.get(2).map_or("tcp", String::as_str))
        }
        (Some("remote-produce"), Some(address)) if args.len() == 3 => {
            remote_produce(address, &args[2])
        }
        _ => {
            eprintln!(
                "usage: dlbridge_adapter_rust ipc-peer consume|produce PATH\n       \
                 dlbridge_adapter_rust ipc-peer remote-consume KEYHEX [SCHEME]\n       \
                 dlbridge_adapter_rust ipc-peer remote-produce ADDRESS KEYHEX"
            );
            return 2;
        }
    };
    if let Err(what) = outcome {
        eprintln!("rust {}: {what}", args[0]);
        return 1;
    }
    0
}
