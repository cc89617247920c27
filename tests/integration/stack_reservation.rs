//! regent evaluates policies on threads with a large reserved stack
//! (`par::STACK_SIZE`): under an address-space limit (`ulimit -v`,
//! `prlimit --as`) a worker thread may not be had. The work goes on with
//! fewer threads, and when not even the main one can be had regent says
//! so and exits 2, where it used to panic with a backtrace.

use std::process::{Command, Output};

use crate::common;

/// A catalog with enough tools that `check` spreads them over threads.
fn many_tools() -> tempfile::TempDir {
    let mut yaml = String::from("tools:\n");
    for i in 0..40 {
        yaml.push_str(&format!(
            "  - name: t{i}\n    description: tool {i}\n    inputSchema:\n      type: object\n      \
             properties:\n        mode: {{type: string, enum: [read, write]}}\n    \
             annotations: {{readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false}}\n    \
             resolve:\n      - when: {{mode: read}}\n        annotations: {{readOnlyHint: true, destructiveHint: false}}\n"
        ));
    }
    common::catalog(&[("tools.yaml", &yaml)])
}

fn check_under(mib: u64, dir: &std::path::Path) -> Output {
    Command::new("prlimit")
        .arg(format!("--as={}", mib << 20))
        .arg("--")
        .arg(common::binary())
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .arg("check")
        .arg(dir)
        .output()
        .expect("run prlimit")
}

#[test]
fn check_goes_on_when_worker_threads_cannot_be_had() {
    let dir = many_tools();
    // The smallest limit (in 100 MiB steps) at which the main thread's
    // stack can be reserved: the machine and build decide it, so it is
    // found, not assumed. Below it, the error says what to do.
    let mut low = None;
    for mib in (1100..=4000).step_by(100) {
        let out = check_under(mib, dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("cannot reserve") {
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(
                stderr.contains("= help: the process's address-space limit"),
                "{stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
            low = Some(mib);
            continue;
        }
        assert!(
            low.is_some(),
            "regent started under {mib} MiB: the test's range starts too high"
        );
        // Here one more 1 GiB stack does not fit: `check`'s workers are
        // refused, and the check still runs every tool.
        let out = check_under(mib + 200, dir.path());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(
            stdout.contains("checked 1 file and 40 tools: 0 errors, 0 warnings"),
            "{stdout}"
        );
        return;
    }
    panic!("regent never started under 4000 MiB of address space");
}
