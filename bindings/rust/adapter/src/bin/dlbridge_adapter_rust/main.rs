//! The Rust adapter's one program (dlbridge_adapter_rust), beside its library: each
//! cross-language check that needs a Rust process is one of its subcommands.
//!
//! ```text
//! dlbridge_adapter_rust interop-host [--self-test] ADAPTER.so...   the interop matrix's Rust host
//! dlbridge_adapter_rust parity [--steps STEPS]    the parity rows (suite parity), or one row of
//!                                                 steps: a channel's peer (suites ipc-languages
//!                                                 and remote)
//! ```

mod host;
mod parity;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let status = match args.first().map(String::as_str) {
        Some("interop-host") => host::run(&args[1..]),
        Some("parity") if args.len() == 1 => parity::run(),
        Some("parity") if args.len() == 3 && args[1] == "--steps" => {
            parity::run_steps("steps", &args[2], "rust");
            0
        }
        _ => {
            eprintln!(
                "usage: dlbridge_adapter_rust interop-host [--self-test] ADAPTER.so...\n       \
                 dlbridge_adapter_rust parity [--steps STEPS]"
            );
            2
        }
    };
    std::process::exit(status);
}
