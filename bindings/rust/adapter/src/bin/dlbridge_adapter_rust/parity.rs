//! The parity rows (tests/parity/parity_table.tsv) through the safe Rust API. One line per row:
//! `ROW<TAB>STATUS<TAB>DETAIL`; suite `parity` compares them with the table and the other
//! languages. The subcommand `parity` of the Rust adapter's program.

#[path = "../../../../dlbridge/tests/common/mod.rs"]
mod common;

use dlbridge::ipc::{Channel, Listener};
use dlbridge::{cuda, opencl, status, status_name, DType, Device, Error, Slice, Tensor};
use std::io::BufRead;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(","))
}

fn values(v: &[f32]) -> String {
    let whole: Vec<i64> = v.iter().map(|&x| x as i64).collect();
    format!("values={}", list(&whole))
}

fn layout(t: &Tensor) -> String {
    format!("shape={} strides={}", list(t.shape()), list(t.strides()))
}

fn iota(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).expect("iota")
}

/// Prints a row: the detail of a success, or the error's status name and message.
fn row(id: &str, outcome: Result<String, Error>) {
    match outcome {
        Ok(detail) => println!("{id}\tDLB_OK\t{detail}"),
        Err(e) => println!("{id}\t{}\t{}", status_name(e.status()), e.message()),
    }
}

fn skip(id: &str, reason: &str) {
    println!("{id}\tSKIP\t{reason}");
}

static FOREIGN_DELETES: AtomicUsize = AtomicUsize::new(0);

fn deleted_since(start: usize) -> usize {
    FOREIGN_DELETES.load(Ordering::SeqCst) - start
}

/// Performs every row and prints its line; returns the exit status.
pub fn run() -> i32 {
    let live_at_start = dlbridge::live_count();

    row(
        "create",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[2, 3])
            .map(|t| format!("{} dtype={} device={}", layout(&t), t.dtype(), t.device())),
    );
    row(
        "create_negative_extent",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[2, -3]).map(|t| layout(&t)),
    );
    row(
        "create_ndim_65",
        Tensor::allocate(Device::CPU, DType::FLOAT32, &[1; 65]).map(|t| layout(&t)),
    );
    row(
        "create_strides_length",
        Tensor::allocate_with(Device::CPU, DType::FLOAT32, &[2, 3], Some(&[1]), 0)
            .map(|t| layout(&t)),
    );
    row(
        "create_is_copied",
        Tensor::allocate_with(
            Device::CPU,
            DType::FLOAT32,
            &[2, 3],
            None,
            dlbridge::flags::IS_COPIED,
        )
        .map(|t| layout(&t)),
    );

    row("wrap", {
        let buffer: Vec<f32> = (0..6).map(|i| i as f32).collect();
        let memory = buffer.as_ptr();
        Tensor::from_vec(buffer, &[2, 3]).and_then(|t| {
            Ok(format!(
                "{} {} same_memory={}",
                layout(&t),
                values(&t.to_vec::<f32>()?),
                i32::from(t.data_ptr().cast_const().cast::<f32>() == memory)
            ))
        })
    });
    row(
        "wrap_beyond_buffer",
        Tensor::from_vec(vec![0.0f32; 5], &[2, 3]).map(|t| layout(&t)),
    );
    row(
        "wrap_ndim_5",
        Tensor::from_vec(
            (0..6).map(|i| i as f32).collect::<Vec<f32>>(),
            &[1, 1, 1, 2, 3],
        )
        .and_then(|t| Ok(format!("{} {}", layout(&t), values(&t.to_vec::<f32>()?)))),
    );
    row(
        "wrap_ndim_65",
        Tensor::from_vec(vec![0.0f32], &[1; 65]).map(|t| layout(&t)),
    );

    row("import_versioned", {
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw =
            common::foreign_versioned(vec![0.0, 1.0, 2.0, 3.0], &[4], None, 1, 0, &FOREIGN_DELETES);
        // SAFETY: a foreign producer's tensor, owned here and consumed by the call.
        unsafe { Tensor::from_raw(raw) }.and_then(|t| {
            let read = values(&t.to_vec::<f32>()?);
            drop(t);
            Ok(format!("{read} deleted={}", deleted_since(start)))
        })
    });
    row("import_legacy", {
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw = common::foreign_legacy(vec![0.0, 1.0, 2.0, 3.0], &[4], &FOREIGN_DELETES);
        // SAFETY: as above, the legacy struct.
        unsafe { Tensor::from_raw_legacy(raw) }.and_then(|t| {
            let read = values(&t.to_vec::<f32>()?);
            drop(t);
            Ok(format!("{read} deleted={}", deleted_since(start)))
        })
    });
    {
        // The refused tensor's deleter has run: the detail follows the message on this row.
        let start = FOREIGN_DELETES.load(Ordering::SeqCst);
        let raw = common::foreign_versioned(vec![0.0; 4], &[4], None, 2, 0, &FOREIGN_DELETES);
        // SAFETY: as above; refused, and its deleter called.
        match unsafe { Tensor::from_raw(raw) } {
            Ok(_) => println!("import_major_2\tDLB_OK\t"),
            Err(e) => println!(
                "import_major_2\t{}\t{} deleted={}",
                status_name(e.status()),
                e.message(),
                deleted_since(start)
            ),
        }
    }
    row("export_import_legacy", {
        iota(&[2, 3])
            .into_raw_legacy()
            .map_err(Error::from)
            .and_then(|raw| {
                // SAFETY: our own export, handed straight back.
                let back = unsafe { Tensor::from_raw_legacy(raw) }?;
                Ok(format!(
                    "{} {}",
                    layout(&back),
                    values(&back.to_vec::<f32>()?)
                ))
            })
    });
    row("export_import_versioned", {
        // SAFETY: our own export, handed straight back.
        unsafe { Tensor::from_raw(iota(&[2, 3]).into_raw()) }.and_then(|back| {
            Ok(format!(
                "{} {} flags={}",
                layout(&back),
                values(&back.to_vec::<f32>()?),
                back.flags()
            ))
        })
    });
    row(
        "export_legacy_read_only",
        iota(&[2, 3]).share_read_only().and_then(|ro| {
            ro.into_raw_legacy().map_err(Error::from)?;
            Ok(String::new())
        }),
    );
    row(
        "export_versioned_read_only",
        iota(&[2, 3]).share_read_only().and_then(|ro| {
            // SAFETY: our own export, handed straight back.
            let back = unsafe { Tensor::from_raw(ro.into_raw()) }?;
            Ok(format!("flags={}", back.flags()))
        }),
    );

    row(
        "slice",
        iota(&[3, 4])
            .slice(&[(1..3).into(), Slice::step(2)])
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "slice_step_zero",
        iota(&[3, 4])
            .slice(&[Slice::new(Some(0), Some(2), 0)])
            .map(|v| layout(&v)),
    );
    row(
        "select",
        iota(&[3, 4])
            .select(1, -1)
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "select_out_of_range",
        iota(&[3, 4]).select(0, 3).map(|v| layout(&v)),
    );
    row(
        "reshape",
        iota(&[3, 4])
            .reshape(&[2, -1])
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "reshape_non_contiguous",
        iota(&[3, 4])
            .transpose()
            .and_then(|t| t.reshape(&[12]))
            .map(|v| layout(&v)),
    );
    row(
        "transpose",
        iota(&[3, 4])
            .transpose()
            .and_then(|v| Ok(format!("{} {}", layout(&v), values(&v.to_vec::<f32>()?)))),
    );
    row(
        "permute",
        iota(&[2, 3, 4]).permute(&[2, 0, 1]).map(|v| layout(&v)),
    );
    row(
        "permute_invalid",
        iota(&[2, 3, 4]).permute(&[0, 0, 1]).map(|v| layout(&v)),
    );

    row(
        "copy_out",
        iota(&[2, 3]).to_vec::<f32>().map(|v| values(&v)),
    );
    row(
        "copy_out_transposed",
        iota(&[2, 3])
            .transpose()
            .and_then(|t| t.to_vec::<f32>())
            .map(|v| values(&v)),
    );
    row(
        "copy_out_wrong_type",
        iota(&[2, 3]).to_vec::<i32>().map(|_| String::new()),
    );
    row(
        "copy_out_negative_strides",
        iota(&[3, 4])
            .slice(&[Slice::step(-1), Slice::step(2)])
            .and_then(|t| t.to_vec::<f32>())
            .map(|v| values(&v)),
    );
    row("copy_in_transposed", {
        let t = iota(&[3, 4]);
        let input: Vec<f32> = (100..112).map(|i| i as f32).collect();
        t.transpose().and_then(|mut tr| {
            // SAFETY: nothing else reads or writes the memory during the call.
            unsafe { tr.copy_from_slice_aliased(&input) }?;
            Ok(values(&t.to_vec::<f32>()?))
        })
    });
    row("copy_in_count_mismatch", {
        let t = iota(&[3, 4]);
        t.transpose().and_then(|mut tr| {
            // SAFETY: as above.
            unsafe { tr.copy_from_slice_aliased(&[0.0f32; 5]) }?;
            Ok(String::new())
        })
    });

    row("typed_view", {
        let mut t = iota(&[2, 3]);
        t.as_mut_slice::<f32>()
            .map(|s| {
                s[4] = 40.0;
                s.len()
            })
            .and_then(|count| Ok(format!("count={count} {}", values(&t.to_vec::<f32>()?))))
    });
    row(
        "typed_view_wrong_type",
        iota(&[2, 3]).as_slice::<i32>().map(|_| String::new()),
    );
    row(
        "typed_view_transposed",
        iota(&[2, 3])
            .transpose()
            .and_then(|t| t.as_slice::<f32>().map(|_| String::new())),
    );
    row("write_read_only", {
        let t = iota(&[2, 3]);
        t.share_read_only().and_then(|mut ro| {
            // SAFETY: nothing else touches the memory while the slice lives.
            unsafe { ro.as_mut_slice_aliased::<f32>() }.map(|_| String::new())
        })
    });
    row("copy_into_read_only", {
        let t = iota(&[2, 3]);
        t.share_read_only().and_then(|mut ro| {
            // SAFETY: as above.
            unsafe { ro.copy_from_slice_aliased(&[0.0f32; 6]) }.map(|_| String::new())
        })
    });
    row(
        "element_get",
        iota(&[2, 3])
            .select(0, 1)
            .and_then(|r| r.select(0, 2))
            .and_then(|e| Ok(format!("value={}", e.to_vec::<f32>()?[0] as i64))),
    );
    row(
        "element_out_of_range",
        iota(&[2, 3]).select(0, 2).map(|v| layout(&v)),
    );

    skip(
        "use_after_close",
        "Rust's ownership forbids using a dropped Tensor at compile time",
    );
    skip(
        "double_close",
        "Rust's ownership drops a Tensor exactly once, at compile time",
    );
    skip(
        "close_during_call",
        "Rust's borrow checker forbids dropping a Tensor while a call borrows it",
    );
    skip(
        "export_during_call",
        "Rust's borrow checker forbids into_raw on a Tensor while a call borrows it",
    );

    row(
        "cuda_available",
        cuda::is_available().map(|()| String::new()),
    );
    row(
        "cuda_allocate",
        Tensor::allocate(Device::cuda(0), DType::FLOAT32, &[2]).map(|t| layout(&t)),
    );
    row(
        "opencl_available",
        opencl::is_available().map(|()| String::new()),
    );
    row(
        "dtype_parse_unknown",
        DType::parse("float33").map(|d| format!("{d}")),
    );
    row(
        "dtype_parse",
        DType::parse("bfloat16x4")
            .map(|d| format!("code={} bits={} lanes={}", d.code, d.bits, d.lanes)),
    );
    row(
        "device_unknown_type",
        Device::parse("device_type_99:3")
            .map(|d| format!("type={} id={} name={d}", d.device_type, d.device_id)),
    );
    row(
        "device_parse_unknown",
        Device::parse("gpu:0").map(|d| format!("{d:?}")),
    );
    row(
        "status_name",
        Ok(format!(
            "name={} unknown={}",
            status_name(dlbridge::status::READ_ONLY),
            status_name(99)
        )),
    );
    channel_rows();

    row(
        "live_count_balance",
        Ok(format!("live={}", dlbridge::live_count() - live_at_start)),
    );
    0
}

// ---- the channel rows: the peer is $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc) -------

/// The longest any channel row waits for its peer: a row fails, it never hangs.
const PEER_LIMIT: Duration = Duration::from_secs(10);
const OTHER_UID: &str = "65534";

fn geteuid() -> u32 {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid has no preconditions.
    unsafe { geteuid() }
}

/// An error of this program's own (not the library's) for a row that could not run.
fn harness_error(message: &str) -> Error {
    Error::new(status::DEVICE, message)
}

/// A new folder of `mode` under /tmp (as mkdtemp makes one), removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(mode: u32) -> Result<TempDir, Error> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = PathBuf::from(format!(
            "/tmp/dlbridge-parity-rust-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)))
            .map_err(|e| harness_error(&format!("cannot make {}: {e}", dir.display())))?;
        Ok(TempDir(dir))
    }

    fn socket(&self) -> PathBuf {
        self.0.join("s")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// The peer program, started with `args`; its stdout piped when `piped`.
fn spawn_peer(args: &[&str], piped: bool) -> Result<Child, Error> {
    let peer = std::env::var_os("DLBRIDGE_PARITY_PEER").ok_or_else(|| {
        harness_error("DLBRIDGE_PARITY_PEER is not set: the channel rows need the parity peer")
    })?;
    Command::new(&peer)
        .args(args)
        .stdout(if piped {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .spawn()
        .map_err(|e| harness_error(&format!("cannot start the parity peer: {e}")))
}

/// Waits for a peer to end (every spawned peer is reaped); one still running after
/// `PEER_LIMIT` is killed first, so that no row can hang on it.
fn reap(peer: Option<Child>) {
    let Some(mut child) = peer else { return };
    let start = std::time::Instant::now();
    while let Ok(None) = child.try_wait() {
        if start.elapsed() > PEER_LIMIT {
            child.kill().ok();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().ok();
}

/// listen at DIR/s; the peer (`mode PATH`) connects; accept; a time limit (100 ms for `half`);
/// receive: the row's outcome.
fn row_receive_from(id: &str, mode: &str) {
    let mut peer = None;
    let outcome = TempDir::new(0o700).and_then(|dir| {
        let path = dir.socket();
        let listener = Listener::bind(&path)?;
        peer = Some(spawn_peer(&[mode, &path.to_string_lossy()], false)?);
        listener.set_timeout(Some(PEER_LIMIT))?;
        let channel = listener.accept()?;
        channel.set_timeout(Some(if mode == "half" {
            Duration::from_millis(100)
        } else {
            PEER_LIMIT
        }))?;
        let result = channel.receive().map(|_| String::new());
        drop((channel, listener)); // the `half` peer waits for this close
        reap(peer.take());
        result
    });
    reap(peer);
    row(id, outcome);
}

/// We listen (allowing uid 65534 when `allow`); the peer connects as 65534 and echoes what we
/// send (float32 [4] 0..3); read the echo.
fn row_other_uid_connects(id: &str, allow: bool) {
    let mut peer = None;
    let outcome = TempDir::new(0o700).and_then(|dir| {
        let path = dir.socket();
        let listener = Listener::bind(&path)?;
        if allow {
            listener.allow_uid(65534)?;
        }
        // The other user's way in; the allowed uids still decide who is accepted.
        for (p, mode) in [(&dir.0, 0o711), (&path, 0o666)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
                .map_err(|e| harness_error(&format!("chmod {}: {e}", p.display())))?;
        }
        peer = Some(spawn_peer(
            &["connect-as", OTHER_UID, "0", &path.to_string_lossy()],
            false,
        )?);
        listener.set_timeout(Some(PEER_LIMIT))?;
        let channel = listener.accept()?;
        channel.set_timeout(Some(PEER_LIMIT))?;
        let mut t = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[4])?;
        t.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0])?;
        channel.send(&t)?;
        let back = channel.receive()?;
        let detail = values(&back.to_vec::<f32>()?);
        drop((channel, listener));
        reap(peer.take());
        Ok(detail)
    });
    reap(peer);
    row(id, outcome);
}

/// The peer listens as uid 65534 and prints its socket's path; we connect to it, naming its uid
/// when `name_uid` (a plain connect otherwise), and read the float32 [4] it sends.
fn row_connect_to_other_uid(id: &str, name_uid: bool) {
    let mut peer = None;
    let outcome = (|| {
        let child = peer.insert(spawn_peer(&["listen-as", OTHER_UID, "0"], true)?);
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| harness_error(&format!("reading the peer's socket path: {e}")))?;
        let path = Path::new(line.trim_end_matches('\n'));
        if path.as_os_str().is_empty() {
            return Err(harness_error("the peer printed no socket path"));
        }
        let channel = if name_uid {
            Channel::connect_with(path, Some(65534), Some(PEER_LIMIT))?
        } else {
            Channel::connect(path)?
        };
        channel.set_timeout(Some(PEER_LIMIT))?;
        let t = channel.receive()?;
        Ok(values(&t.to_vec::<f32>()?))
    })();
    reap(peer);
    row(id, outcome);
}

fn channel_rows() {
    row(
        "channel_no_listener",
        Channel::connect("dlbridge-parity-absent.sock").map(|_| String::new()),
    );
    match TempDir::new(0o755) {
        Err(e) => row("channel_permission", Err(e)),
        Ok(dir) => {
            let dir_text = dir.0.to_string_lossy().into_owned();
            // The message names the row's folder: it is written DIR.
            row(
                "channel_permission",
                Listener::bind(dir.socket())
                    .map(|_| String::new())
                    .map_err(|e| Error::new(e.status(), e.message().replace(&dir_text, "DIR"))),
            );
        }
    }
    row_receive_from("channel_peer_closed", "connect-close");
    row_receive_from("channel_forged", "forge");
    row_receive_from("channel_timeout", "half");
    let root_rows = [
        "channel_refused_uid_accept",
        "channel_refused_uid_connect",
        "channel_second_uid_accept",
        "channel_second_uid_connect",
    ];
    if geteuid() != 0 {
        for id in root_rows {
            skip(id, "needs root to run a peer as another user");
        }
    } else {
        row_other_uid_connects("channel_refused_uid_accept", false);
        row_connect_to_other_uid("channel_refused_uid_connect", false);
        row_other_uid_connects("channel_second_uid_accept", true);
        row_connect_to_other_uid("channel_second_uid_connect", true);
    }
    let names: Vec<&str> = [
        status::NO_LISTENER,
        status::PERMISSION,
        status::PEER_CLOSED,
        status::PROTOCOL,
        status::TIMEOUT,
        status::LIMIT,
    ]
    .into_iter()
    .map(status_name)
    .collect();
    row(
        "status_names_channel",
        Ok(format!("names={}", names.join(","))),
    );
}
