//! The Rust adapter's one program (dlbridge_adapter_rust), beside its library: each
//! cross-language check that needs a Rust process is one of its subcommands.
//!
//! ```text
//! dlbridge_adapter_rust interop-host [--self-test] ADAPTER.so...   the interop matrix's Rust host
//! dlbridge_adapter_rust parity                                     the parity rows (suite parity)
//! dlbridge_adapter_rust ipc-peer consume|produce|remote-... ARGS   suite ipc-languages' Rust peer
//! ```

mod host;
mod ipc_peer;
mod parity;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let status = match args.first().map(String::as_str) {
        Some("interop-host") => host::run(&args[1..]),
        Some("parity") if args.len() == 1 => parity::run(),
        Some("ipc-peer") => ipc_peer::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: dlbridge_adapter_rust interop-host [--self-test] ADAPTER.so...\n       \
                 dlbridge_adapter_rust parity\n       \
                 dlbridge_adapter_rust ipc-peer consume|produce|remote-consume|remote-produce ARGS"
            );
            2
        }
    };
    std::process::exit(status);
}
