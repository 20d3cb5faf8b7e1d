//! The parity rows (tests/parity/parity_table.tsv) through the safe Rust API. One line per row:
//! `ROW<TAB>STATUS<TAB>DETAIL`; suite `parity` compares them with the table and the other
//! languages. The rows with steps are read from the table ($DLBRIDGE_PARITY_TABLE) and performed
//! by one interpreter of the step language (tests/parity/README.md, "Steps"); the rows without
//! (the races, CUDA and OpenCL, the live count) are written out below. The subcommand `parity`
//! of the Rust adapter's program.

#[path = "../../../../dlbridge/tests/common/mod.rs"]
mod common;

use dlbridge::ipc::{Channel, ChannelOptions, Listener};
use dlbridge::{cuda, opencl, status, status_name, DType, Device, Error, Slice, Tensor};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(","))
}

fn layout(t: &Tensor) -> String {
    format!("shape={} strides={}", list(t.shape()), list(t.strides()))
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

/// Performs every row and prints its line; returns the exit status.
pub fn run() -> i32 {
    let live_at_start = dlbridge::live_count();
    let Some(path) = std::env::var_os("DLBRIDGE_PARITY_TABLE") else {
        eprintln!("parity: DLBRIDGE_PARITY_TABLE is not set (run_parity.py sets it to the table)");
        return 2;
    };
    let rows = match read_table(Path::new(&path)) {
        Ok(rows) => rows,
        Err(message) => {
            eprintln!("parity: {message}");
            return 2;
        }
    };
    for [id, steps, may_skip] in &rows {
        run_steps(id, steps, may_skip);
    }

    skip(
        "close_during_call",
        "Rust's borrow checker forbids dropping a Tensor while a call borrows it",
    );
    skip(
        "export_during_call",
        "Rust's borrow checker forbids into_raw on a Tensor while a call borrows it",
    );
    let empty = |available: Result<(), Error>| available.map(|()| String::new());
    row("cuda_available", empty(cuda::is_available()));
    let cuda = Tensor::allocate(Device::cuda(0), DType::FLOAT32, &[2]);
    row("cuda_allocate", cuda.map(|t| layout(&t)));
    row("opencl_available", empty(opencl::is_available()));

    // Last: every other row has closed its tensors by now.
    row(
        "live_count_balance",
        Ok(format!("live={}", dlbridge::live_count() - live_at_start)),
    );
    0
}

/// The table's rows that have steps, each [row, steps, may_skip]: the columns are found by the
/// header's names; comments and empty lines are skipped; missing fields are empty.
fn read_table(path: &Path) -> Result<Vec<[String; 3]>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the table {}: {e}", path.display()))?;
    let mut lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let column = |name| header.iter().position(|h| *h == name);
    let columns = [column("row"), column("steps"), column("may_skip")];
    let Some(columns) = columns.into_iter().collect::<Option<Vec<usize>>>() else {
        return Err(format!(
            "{}: no row, steps or may_skip column",
            path.display()
        ));
    };
    let rows = lines.map(|line| {
        let fields: Vec<&str> = line.split('\t').collect();
        [0, 1, 2].map(|c| fields.get(columns[c]).unwrap_or(&"").to_string())
    });
    Ok(rows.filter(|r| !r[1].is_empty()).collect())
}

// ---- the steps (README.md, "Steps"). A mistake in the table (an unknown step or fact, a missing
// or malformed argument) is this program's bug to fix, not a row's outcome: it panics. ----------

/// Why a row's steps stopped: the binding's error, or a step Rust cannot express (and why).
enum Stop {
    Failed(Error),
    Skip(&'static str),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

const USE_AFTER_CLOSE: &str = "Rust's ownership forbids using a dropped Tensor at compile time";
const CLOSE_TWICE: &str = "Rust's ownership drops a Tensor exactly once, at compile time";
const NEEDS_ROOT: &str = "needs root to run a peer as another user";

/// Performs one row's steps and prints its line; the row ends when it returns (State's drop).
pub fn run_steps(id: &str, steps: &str, may_skip: &str) {
    let steps: Vec<Vec<&str>> = steps.split(" ; ").map(|s| s.split(' ').collect()).collect();
    let mut state = State::default();
    state.deleted_before = FOREIGN_DELETES.load(Ordering::SeqCst);
    let outcome = steps.iter().try_for_each(|s| state.step(s[0], &s[1..]));
    // A refused import still calls its deleter: the count follows the message.
    let deleted = steps
        .iter()
        .any(|s| s[0] == "report" && s.contains(&"deleted"));
    let skip_allowed = may_skip.split(',').any(|l| l == "rust" || l == "*");
    match outcome {
        Ok(()) => println!("{id}\tDLB_OK\t{}", state.report),
        Err(Stop::Failed(e)) => {
            let mut message = e.message().to_string();
            if let Some(dir) = &state.folder {
                message = message.replace(dir.as_str(), "DIR");
            }
            if deleted {
                message += &format!(" deleted={}", state.deleted());
            }
            println!("{id}\t{}\t{message}", e.status_name());
        }
        Err(Stop::Skip(why)) if skip_allowed => skip(id, why),
        Err(Stop::Skip(why)) => {
            let e = harness_error(&format!("the table allows Rust no SKIP here: {why}"));
            row(id, Err(e));
        }
    }
}

/// What a row's steps made and read.
#[derive(Default)]
struct State {
    /// Every tensor the row made, in order: None once closed or moved into an export.
    tensors: Vec<Option<Tensor>>,
    /// The tensor the next step uses (in `tensors`).
    current: usize,
    /// The address of the buffer `wrap` gave.
    wrapped: usize,
    /// What steps read (values, count, value, the parsed dtype and device, names), by fact.
    facts: HashMap<&'static str, String>,
    deleted_before: usize,
    /// What `report` printed.
    report: String,
    /// The row's folder (`folder`), listener, channel and peer.
    folder: Option<String>,
    listener: Option<Listener>,
    channel: Option<Channel>,
    peer: Option<Child>,
}

/// The row's end: its channel and listener close, its peer ends (killed after `PEER_LIMIT`), its
/// folder goes; its tensors close after.
impl Drop for State {
    fn drop(&mut self) {
        self.channel = None;
        self.listener = None;
        if let Some(peer) = &mut self.peer {
            reap(peer);
        }
        if let Some(dir) = &self.folder {
            std::fs::remove_dir_all(dir).ok();
        }
    }
}

impl State {
    /// The foreign producer's deleter calls since the row began.
    fn deleted(&self) -> usize {
        FOREIGN_DELETES.load(Ordering::SeqCst) - self.deleted_before
    }

    /// The tensor the next step uses: a closed one is a use Rust's ownership cannot express.
    fn tensor(&self) -> Result<&Tensor, Stop> {
        self.tensors[self.current]
            .as_ref()
            .ok_or(Stop::Skip(USE_AFTER_CLOSE))
    }

    fn tensor_mut(&mut self) -> Result<&mut Tensor, Stop> {
        self.tensors[self.current]
            .as_mut()
            .ok_or(Stop::Skip(USE_AFTER_CLOSE))
    }

    /// A step's new tensor: the tensor the next step uses.
    fn push(&mut self, t: Tensor) {
        self.tensors.push(Some(t));
        self.current = self.tensors.len() - 1;
    }

    /// The row's folder, DIR.
    fn folder(&self) -> &str {
        self.folder.as_deref().expect("parity table: no folder")
    }

    /// The row's socket path, `DIR/s`.
    fn socket(&self) -> String {
        format!("{}/s", self.folder())
    }

    fn listener(&self) -> &Listener {
        self.listener.as_ref().expect("parity table: no listener")
    }

    fn channel(&self) -> &Channel {
        self.channel.as_ref().expect("parity table: no channel")
    }

    fn step(&mut self, name: &str, a: &[&str]) -> Result<(), Stop> {
        match name {
            "allocate" => {
                let strides = a.get(2).map(|l| ints(l)).filter(|s| !s.is_empty());
                let flags = a.get(3).map_or(0, |n| int(n) as u64);
                let dtype = DType::parse(a[0])?;
                let shape = ints(a[1]);
                let t =
                    Tensor::allocate_with(Device::CPU, dtype, &shape, strides.as_deref(), flags);
                self.push(t?);
            }
            "wrap" => {
                let buffer = floats(0, int(a[0]));
                self.wrapped = buffer.as_ptr() as usize;
                self.push(Tensor::from_vec(buffer, &ints(a[1]))?);
            }
            "iota" => {
                let shape = ints(a[0]);
                self.push(Tensor::from_vec(floats(0, shape.iter().product()), &shape)?);
            }
            "import" => {
                let data = floats(0, int(a[1]));
                let n = [data.len() as i64];
                let t = if a[0] == "legacy" {
                    let raw = common::foreign_legacy(data, &n, &FOREIGN_DELETES);
                    // SAFETY: a foreign producer's tensor, owned here and consumed by the call.
                    unsafe { Tensor::from_raw_legacy(raw) }
                } else {
                    let major = int(a[2]) as u32;
                    let raw = common::foreign_versioned(data, &n, None, major, 0, &FOREIGN_DELETES);
                    // SAFETY: as above; the producer stamps minor 0: the row's is set first.
                    unsafe {
                        (*raw).version.minor = int(a[3]) as u32;
                        Tensor::from_raw(raw)
                    }
                };
                self.push(t?);
            }
            "share_read_only" => self.push(self.tensor()?.share_read_only()?),
            "export" => {
                // The tensor moves into the export: its place stays empty.
                let t = self.tensors[self.current].take();
                let t = t.ok_or(Stop::Skip(USE_AFTER_CLOSE))?;
                // SAFETY: our own export, handed straight back.
                let back = if a[0] == "legacy" {
                    let raw = t.into_raw_legacy().map_err(Error::from)?;
                    unsafe { Tensor::from_raw_legacy(raw) }
                } else {
                    unsafe { Tensor::from_raw(t.into_raw()) }
                };
                self.push(back?);
            }
            "slice" => {
                let spec: Vec<Slice> = a[0].split(',').map(axis_slice).collect();
                self.push(self.tensor()?.slice(&spec)?);
            }
            "select" => self.push(self.tensor()?.select(int(a[0]) as i32, int(a[1]))?),
            "reshape" => self.push(self.tensor()?.reshape(&ints(a[0]))?),
            "transpose" => self.push(self.tensor()?.transpose()?),
            "permute" => {
                let axes: Vec<i32> = ints(a[0]).into_iter().map(|x| x as i32).collect();
                self.push(self.tensor()?.permute(&axes)?);
            }
            "copy_out" => {
                let values = copy_out(self.tensor()?, a[0])?;
                self.facts.insert("values", list(&values));
            }
            "copy_in" => {
                let data = floats(int(a[0]), int(a[1]));
                // SAFETY: the row runs on this thread alone and reads no other tensor meanwhile.
                unsafe { self.tensor_mut()?.copy_from_slice_aliased(&data) }?;
            }
            "view" => {
                let t = self.tensor_mut()?;
                // SAFETY: as copy_in's, while the array lives (this step).
                let count = match a[0] {
                    "float32" => write(unsafe { t.as_mut_slice_aliased() }?, a, |v| v as f32),
                    "int32" => write(unsafe { t.as_mut_slice_aliased() }?, a, |v| v as i32),
                    dt => panic!("parity table: no array of {dt}"),
                };
                self.facts.insert("count", count.to_string());
            }
            "element" => {
                let value = self.tensor()?.get::<f32>(&ints(a[0]))?;
                self.facts.insert("value", (value as i64).to_string());
            }
            "close" => {
                let t = self.tensors[self.current].take();
                t.ok_or(Stop::Skip(CLOSE_TWICE))?;
            }
            "base" => self.current = 0,
            "dtype" => {
                let d = DType::parse(a[0])?;
                self.facts.insert("code", d.code.to_string());
                self.facts.insert("bits", d.bits.to_string());
                self.facts.insert("lanes", d.lanes.to_string());
            }
            "device" => {
                let d = Device::parse(a[0])?;
                self.facts.insert("type", d.device_type.to_string());
                self.facts.insert("id", d.device_id.to_string());
                self.facts.insert("name", d.to_string());
            }
            "status_names" => {
                let names: Vec<&str> = ints(a[0])
                    .into_iter()
                    .map(|s| status_name(s as i32))
                    .collect();
                self.facts.insert("names", names.join(","));
            }
            "needs_root" if geteuid() != 0 => return Err(Stop::Skip(NEEDS_ROOT)),
            "needs_root" => {}
            "folder" => {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, Ordering::SeqCst);
                let dir = format!("/tmp/dlbridge-parity-rust-{}-{n}", std::process::id());
                let made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
                made.map_err(|e| harness_error(&format!("cannot make {dir}: {e}")))?;
                chmod(self.folder.insert(dir), a[0])?;
            }
            "listen" => self.listener = Some(Listener::bind(self.socket())?),
            "folder_mode" => chmod(self.folder(), a[0])?,
            "socket_mode" => chmod(&self.socket(), a[0])?,
            "allow_uid" => self.listener().allow_uid(int(a[0]) as u32)?,
            "peer" => {
                let args = a.iter().map(|&arg| match arg {
                    "PATH" => self.socket(),
                    _ => arg.to_string(),
                });
                self.peer = Some(spawn_peer(args)?);
            }
            "accept" => {
                let limit = a.first().map(|s| Duration::from_secs(int(s) as u64));
                self.listener()
                    .set_timeout(Some(limit.unwrap_or(PEER_LIMIT)))?;
                self.channel = Some(self.listener().accept()?);
            }
            "listen_at" => {
                let listener = match a.get(1) {
                    Some(hex) => Listener::bind_with_options(a[0], &keyed(hex)?)?,
                    None => Listener::bind(a[0])?,
                };
                match listener.port() {
                    Some(port) => println!("ready {port}"),
                    None => println!("ready"),
                }
                self.listener = Some(listener);
            }
            "connect" => {
                self.channel = Some(match a.get(1) {
                    Some(hex) => Channel::connect_with_options(a[0], &keyed(hex)?)?,
                    None => Channel::connect(a[0])?,
                })
            }
            "connect_peer" => {
                let uid = a.first().map(|n| int(n) as u32);
                let path = peer_path(self.peer.as_mut())?;
                self.channel = Some(Channel::connect_with(path, uid, Some(PEER_LIMIT))?);
            }
            "timeout" => {
                let limit = Duration::from_millis(int(a[0]) as u64);
                self.channel().set_timeout(Some(limit))?;
            }
            "send" => self.channel().send(self.tensor()?)?,
            "send_copy" => self.channel().send_copy(self.tensor()?)?,
            "receive" => self.push(self.channel().receive()?),
            "shareable" => {
                let shape = ints(a[0]);
                let mut t = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &shape)?;
                t.copy_from_slice(&floats(0, shape.iter().product()))?;
                self.push(t);
            }
            // Rust's stdout is line-buffered: each line goes out at once.
            "print" => println!("{}", self.facts(a)?),
            "report" => self.report = self.facts(a)?,
            _ => panic!("parity table: unknown step {name}"),
        }
        Ok(())
    }

    /// The facts `names` names, as `report` and `print` write them.
    fn facts(&self, names: &[&str]) -> Result<String, Stop> {
        let facts: Vec<String> = names
            .iter()
            .map(|f| self.fact(f))
            .collect::<Result<_, _>>()?;
        Ok(facts.join(" "))
    }

    /// `FACT=VALUE` for one fact `report` names.
    fn fact(&self, name: &str) -> Result<String, Stop> {
        let value = match name {
            "shape" => list(self.tensor()?.shape()),
            "strides" => list(self.tensor()?.strides()),
            "dtype" => self.tensor()?.dtype().to_string(),
            "device" => self.tensor()?.device().to_string(),
            "flags" => self.tensor()?.flags().to_string(),
            "same_memory" => {
                u8::from(self.tensor()?.data_ptr() as usize == self.wrapped).to_string()
            }
            "deleted" => self.deleted().to_string(),
            _ => match self.facts.get(name) {
                Some(value) => value.clone(),
                None => panic!("parity table: no step before report reads {name}"),
            },
        };
        Ok(format!("{name}={value}"))
    }
}

fn int(text: &str) -> i64 {
    let bad = || panic!("parity table: '{text}' is not an integer");
    text.parse().unwrap_or_else(|_| bad())
}

/// A LIST: integers separated by commas, `V*N` for N times V, `-` for none.
fn ints(text: &str) -> Vec<i64> {
    let items = text.split(',').filter(|_| text != "-"); // "-": no items
    let runs = items.map(|item| item.split_once('*').unwrap_or((item, "1")));
    runs.flat_map(|(v, n)| vec![int(v); int(n) as usize])
        .collect()
}

/// One axis of a slice SPEC: `start:stop:step`, any part empty for none (a step of 1).
fn axis_slice(text: &str) -> Slice {
    let mut parts = text.split(':').map(|p| (!p.is_empty()).then(|| int(p)));
    let (start, stop) = (parts.next().flatten(), parts.next().flatten());
    Slice::new(start, stop, parts.next().flatten().unwrap_or(1))
}

/// The language's own float32 buffer of the `n` values `from`, `from + 1`, ...
fn floats(from: i64, n: i64) -> Vec<f32> {
    (from..from + n).map(|v| v as f32).collect()
}

/// Every element, in C order, copied into the language's own array of `dt`.
fn copy_out(t: &Tensor, dt: &str) -> Result<Vec<i64>, Error> {
    Ok(match dt {
        "float32" => t.to_vec::<f32>()?.into_iter().map(|v| v as i64).collect(),
        "int32" => t.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        _ => panic!("parity table: no array of {dt}"),
    })
}

/// A view's length, after setting element I to V when the step gives them (after DT).
fn write<T>(array: &mut [T], a: &[&str], from: fn(i64) -> T) -> usize {
    if let [_, i, v] = a {
        array[int(i) as usize] = from(int(v));
    }
    array.len()
}

// ---- the channel steps' helpers: the peer is $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc)

/// The longest a channel row waits for its peer: a row fails, it never hangs.
const PEER_LIMIT: Duration = Duration::from_secs(10);

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

/// Channel options holding the key KEYHEX spells (two hex digits a byte).
fn keyed(hex: &str) -> Result<ChannelOptions, Error> {
    let byte = |i| u8::from_str_radix(&hex[i..i + 2], 16).expect("KEYHEX: hex digits");
    ChannelOptions::new()?.key(&(0..hex.len()).step_by(2).map(byte).collect::<Vec<u8>>())
}

/// Sets the mode of `path` to `mode`, an octal number.
fn chmod(path: &str, mode: &str) -> Result<(), Error> {
    let bad = || panic!("parity table: '{mode}' is not an octal mode");
    let mode = u32::from_str_radix(mode, 8).unwrap_or_else(|_| bad());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| harness_error(&format!("chmod {path}: {e}")))
}

/// The peer program, started with `args`; its stdout piped (connect_peer reads it), its stderr
/// ours.
fn spawn_peer(args: impl Iterator<Item = String>) -> Result<Child, Error> {
    let peer = std::env::var_os("DLBRIDGE_PARITY_PEER").ok_or_else(|| {
        harness_error("DLBRIDGE_PARITY_PEER is not set: the channel rows need the parity peer")
    })?;
    Command::new(&peer)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| harness_error(&format!("cannot start the parity peer: {e}")))
}

/// The socket path the peer printed on its first line of output.
fn peer_path(peer: Option<&mut Child>) -> Result<String, Error> {
    let stdout = peer.and_then(|p| p.stdout.take());
    let stdout = stdout.expect("parity table: connect_peer needs a peer of its own");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| harness_error(&format!("reading the peer's socket path: {e}")))?;
    let path = line.trim_end_matches('\n');
    if path.is_empty() {
        return Err(harness_error("the peer printed no socket path"));
    }
    Ok(path.to_string())
}

/// Waits for a peer to end; one still running after `PEER_LIMIT` is killed first, so that no
/// row can hang on it.
fn reap(child: &mut Child) {
    let start = Instant::now();
    while let Ok(None) = child.try_wait() {
        if start.elapsed() > PEER_LIMIT {
            child.kill().ok();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().ok();
}
