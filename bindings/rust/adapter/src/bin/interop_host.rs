//! The Rust host of the interop matrix: the Rust agent runs in this process (the crate's own
//! `interop_agent_get`), the other agents are loaded from the libraries named on the command
//! line, and the C runner runs every ordered pair with Rust on one side.
//! Usage: interop_host_rust [--self-test] AGENT.so...

fn main() {
    use dlbridge_adapter_rust::{interop_agent_get, Agent};
    use std::ffi::{c_char, c_int, CString};

    extern "C" {
        fn interop_load_agent(path: *const c_char) -> *const Agent;
        fn interop_run_matrix(
            agents: *const *const Agent,
            count: c_int,
            host: *const c_char,
            must_include: *const c_char,
            sabotage: c_int,
        ) -> c_int;
    }

    let mut agents = vec![interop_agent_get()];
    let mut sabotage = 0;
    for arg in std::env::args().skip(1) {
        if arg == "--self-test" {
            sabotage = 1;
            continue;
        }
        let path = CString::new(arg).expect("a path without NUL");
        // SAFETY: a NUL-terminated path; the runner dlopens it and returns its table or NULL.
        let agent = unsafe { interop_load_agent(path.as_ptr()) };
        if agent.is_null() {
            std::process::exit(1);
        }
        agents.push(agent);
    }
    // SAFETY: valid agent tables for the whole call; static NUL-terminated strings.
    let failed = unsafe {
        interop_run_matrix(
            agents.as_ptr(),
            agents.len() as c_int,
            c"rust".as_ptr(),
            c"rust".as_ptr(),
            sabotage,
        )
    };
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
