//! `tools/call` of command-line tools, through rmcp's client against the real
//! binary in both protocol eras: hostile arguments reach the program as one
//! inert argument or are refused with a clear message, no shell is ever
//! started, timeouts kill whole process groups, output is capped, and the
//! environment holds only what the tool allows.

use crate::common;
use crate::exec_support;

use std::time::{Duration, Instant};

use common::{Era, decision_id, is_error, repo_path, text};
use exec_support::{Start, alive, catalog};
use serde_json::{Value, json};

const TOOLS: &str = r#"
tools:
  - name: echo_args
    description: prints each argument followed by a NUL byte
    inputSchema:
      type: object
      properties:
        a: {type: string}
        many: {type: array, items: {type: string}}
      required: [a]
    run:
      cli:
        program: printf
        args: ["%s\\000", "{a}", ["{many}"]]
        cwd: work
  - name: parent
    description: prints its own /proc stat line, whose fourth field is the parent pid
    inputSchema: {type: object}
    run: {cli: {program: cat, args: [/proc/self/stat]}}
  - name: count_stdin
    inputSchema:
      type: object
      properties: {data: {type: string}}
      required: [data]
    run: {cli: {program: wc, args: [-c], stdin: data}}
  - name: environment
    inputSchema: {type: object}
    run:
      cli:
        program: env
        env:
          inherit: [PATH]
          set:
            LITERAL: plain
            FROM_ENV: {env: REGENT_TEST_SECRET}
            FROM_FILE: {file: secret.txt}
            MISSING_OK: {env: REGENT_TEST_UNSET, optional: true}
  - name: needs_secret
    inputSchema: {type: object}
    run:
      cli:
        program: env
        env: {set: {TOKEN: {file: no-such-secret.txt}}}
  - name: sleepy
    description: leaves two background children (one ignoring SIGTERM), then sleeps past its timeout
    inputSchema: {type: object}
    run:
      cli:
        program: sh
        args:
          - -c
          - |
            sleep 300 & echo $! >> pids
            (trap '' TERM; exec sleep 301) & echo $! >> pids
            echo $$ >> pids
            exec sleep 302
        cwd: work
        timeout: 1s
  - name: sleepy_long
    description: like sleepy, with a timeout far away
    inputSchema: {type: object}
    run:
      cli:
        program: sh
        args:
          - -c
          - |
            sleep 310 & echo $! >> pids
            echo $$ >> pids
            exec sleep 311
        cwd: work
        timeout: 10m
  - name: leaves_child
    description: exits at once, leaving a background child holding its output open
    inputSchema: {type: object}
    run:
      cli:
        program: sh
        args: [-c, "sleep 303 & echo $! > leftover; echo started"]
        cwd: work
  - name: endless
    inputSchema: {type: object}
    run: {cli: {program: yes, maxOutput: 64KiB}}
  - name: read_pipe
    description: reads a named pipe to its end, so a test decides when the call ends
    inputSchema:
      type: object
      properties: {path: {type: string}}
      required: [path]
    run: {cli: {program: cat, args: ["--", "{path}"], timeout: 60s}}
  - name: fails
    inputSchema: {type: object}
    run: {cli: {program: sh, args: [-c, "echo partial; echo something broke >&2; exit 3"]}}
"#;

fn setup() -> tempfile::TempDir {
    let dir = catalog(&[("tools.yaml", TOOLS), ("secret.txt", "file-secret-4711\n")]);
    std::fs::create_dir(dir.path().join("work")).unwrap();
    dir
}

/// Splits printf's `%s\0` output back into the arguments it received.
fn argv_of(result: &Value) -> Vec<String> {
    let out = result["content"][0]["text"].as_str().unwrap_or_default();
    let mut args: Vec<String> = out.split('\0').map(str::to_string).collect();
    assert_eq!(
        args.pop().as_deref(),
        Some(""),
        "output not NUL-terminated: {out:?}"
    );
    args
}

#[tokio::test]
async fn hostile_arguments_reach_the_program_as_one_inert_argument() {
    let dir = setup();
    let inert = [
        "; rm -rf /",
        "; touch MARKER",
        "$(touch MARKER)",
        "`touch MARKER`",
        "a && touch MARKER || touch MARKER",
        "| touch MARKER",
        "> MARKER",
        "line one\nline two\ntouch MARKER",
        "*",
        "~",
        "$HOME ${IFS} $0",
        "'\"\\",
        "\\xff\\xfe\\x00",
        "%00%ff%2e%2e",
        "\u{FFFD}\u{202E}é漢字",
        "",
        " leading and trailing spaces ",
    ];
    for era in Era::ALL {
        let r = Start::new(dir.path()).connect(era).await;
        for value in inert {
            let res = r.call("echo_args", json!({"a": value})).await;
            assert!(!is_error(&res), "{era:?} {value:?}: {res}");
            assert_eq!(
                argv_of(&res),
                [value],
                "{era:?}: {value:?} did not arrive as exactly one argument"
            );
        }
        // An array argument is one element per item, never split further.
        let res = r
            .call(
                "echo_args",
                json!({"a": "x", "many": ["a b", "$(id)", "c\nd"]}),
            )
            .await;
        assert_eq!(argv_of(&res), ["x", "a b", "$(id)", "c\nd"], "{era:?}");
        r.close().await;
    }
    assert!(
        !dir.path().join("work/MARKER").exists(),
        "something interpreted an argument as shell code"
    );
}

#[tokio::test]
async fn arguments_that_cannot_be_inert_are_refused_with_a_clear_message() {
    let dir = setup();
    let big = "x".repeat(1024 * 1024);
    for era in Era::ALL {
        let r = Start::new(dir.path()).connect(era).await;
        for (value, expect) in [
            ("--upload-pack=touch MARKER", "starts with `-`"),
            ("-rf", "starts with `-`"),
            ("-", "starts with `-`"),
            ("a\u{0}b", "NUL byte"),
            (big.as_str(), "holds at most 131071 bytes"),
        ] {
            let res = r.call("echo_args", json!({"a": value})).await;
            assert!(is_error(&res), "{era:?}: {res}");
            let msg = text(&res);
            assert!(
                msg.contains(expect) && msg.contains("argument `a`"),
                "{era:?}: refusal of {:?} should say {expect:?}, said {msg:?}",
                &value[..value.len().min(30)]
            );
            assert!(
                msg.len() < 1000,
                "the refusal echoes the whole value: {} bytes",
                msg.len()
            );
            let id = decision_id(&res);
            let logged = r.decision(&id);
            assert_eq!(logged["decision"], json!("allowed"), "{logged}");
            assert!(
                logged["refused"].as_str().unwrap().contains(expect),
                "{logged}"
            );
        }
        // The same megabyte passes intact where the tool takes it on stdin.
        let res = r.call("count_stdin", json!({"data": big})).await;
        assert!(!is_error(&res), "{era:?}: {}", text(&res));
        assert_eq!(text(&res).trim(), "1048576", "{era:?}");
        r.close().await;
    }
    assert!(!dir.path().join("work/MARKER").exists());
}

#[tokio::test]
async fn no_shell_is_ever_started() {
    let dir = setup();
    // Shells that announce themselves, first in regent's PATH: a command
    // resolved through PATH as a shell would leave a marker.
    let fake = tempfile::tempdir().unwrap();
    let marker = fake.path().join("SHELL-STARTED");
    for shell in ["sh", "bash", "dash", "zsh"] {
        let p = fake.path().join(shell);
        std::fs::write(
            &p,
            format!("#!/bin/sh\ntouch '{}'\nexit 99\n", marker.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", fake.path().display());
    for era in Era::ALL {
        let r = Start::new(dir.path())
            .env("PATH", path.clone())
            .connect(era)
            .await;
        // The program's parent is regent itself: nothing sits in between.
        let res = r.call("parent", json!({})).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        let stat = text(&res);
        let ppid: u32 = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("cannot read the parent pid from {stat:?}"));
        assert_eq!(ppid, r.pid(), "{era:?}: the program's parent is not regent");
        let comm = stat
            .split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(c, _)| c);
        assert_eq!(comm, Some("cat"), "{era:?}: {stat}");

        let res = r
            .call("echo_args", json!({"a": "$(touch MARKER); `id`"}))
            .await;
        assert_eq!(argv_of(&res), ["$(touch MARKER); `id`"], "{era:?}");
        r.close().await;
    }
    assert!(!marker.exists(), "a shell was started through PATH");
}

/// Waits (boundedly) for every pid to be gone; returns the survivors.
async fn survivors(pids: &[u32]) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn read_pids(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_all_its_children() {
    for era in Era::ALL {
        let dir = setup();
        let r = Start::new(dir.path()).connect(era).await;
        let res = r.call("sleepy", json!({})).await;
        assert!(is_error(&res), "{era:?}: {res}");
        assert!(
            text(&res).contains("longer than its timeout of 1s"),
            "{}",
            text(&res)
        );
        assert_eq!(
            res["_meta"]["regent/execution"]["timedOut"],
            json!(true),
            "{res}"
        );
        let pids = read_pids(&dir.path().join("work/pids"));
        assert_eq!(
            pids.len(),
            3,
            "the script did not record its processes: {pids:?}"
        );
        let left = survivors(&pids).await;
        assert!(
            left.is_empty(),
            "{era:?}: processes survived the timeout: {left:?}"
        );
        let logged = r.decision(&decision_id(&res));
        assert_eq!(logged["outcome"]["timedOut"], json!(true), "{logged}");
        r.close().await;
    }
}

#[tokio::test]
async fn a_cancelled_call_kills_its_process_group() {
    for era in Era::ALL {
        let dir = setup();
        let pid_file = dir.path().join("work/pids");
        let r = Start::new(dir.path()).connect(era).await;
        // Dropping the call future makes rmcp's client send
        // notifications/cancelled for it.
        tokio::select! {
            res = r.try_call("sleepy_long", json!({})) => panic!("{era:?}: the call ended: {res:?}"),
            () = async {
                while read_pids(&pid_file).len() < 2 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            } => {}
        }
        let pids = read_pids(&pid_file);
        let left = survivors(&pids).await;
        assert!(
            left.is_empty(),
            "{era:?}: processes survived cancellation: {left:?}"
        );
        // The server is still serving, and logged how the call ended.
        let res = r.call("leaves_child", json!({})).await;
        assert!(!is_error(&res), "{res}");
        let cancelled: Vec<Value> = r
            .decisions_when(|l| l.iter().any(|d| d["outcome"]["cancelled"] == json!(true)))
            .into_iter()
            .filter(|d| d["outcome"]["cancelled"] == json!(true))
            .collect();
        assert_eq!(cancelled.len(), 1, "{era:?}: {:?}", r.decisions());
        r.close().await;
    }
}

#[tokio::test]
async fn processes_left_behind_by_a_finished_command_are_killed() {
    let dir = setup();
    let r = Start::new(dir.path()).connect(Era::Legacy).await;
    let res = r.call("leaves_child", json!({})).await;
    assert!(!is_error(&res), "{res}");
    assert_eq!(text(&res), "started\n");
    let pids = read_pids(&dir.path().join("work/leftover"));
    assert_eq!(pids.len(), 1);
    assert!(
        survivors(&pids).await.is_empty(),
        "the background child survived"
    );
    r.close().await;
}

#[tokio::test]
async fn endless_output_is_cut_at_the_cap() {
    for era in Era::ALL {
        let dir = setup();
        let r = Start::new(dir.path()).connect(era).await;
        let res = r.call("endless", json!({})).await;
        assert!(is_error(&res), "{era:?}");
        let out = res["content"][0]["text"].as_str().unwrap();
        assert_eq!(out.len(), 64 * 1024, "{era:?}: kept {} bytes", out.len());
        assert!(out.starts_with("y\ny\n"));
        assert!(
            text(&res).contains("passed the cap of 65536 bytes"),
            "{}",
            &text(&res)[65536..]
        );
        assert_eq!(
            res["_meta"]["regent/execution"]["outputCapped"],
            json!(65536)
        );
        r.close().await;
    }
}

#[tokio::test]
async fn a_failing_command_is_a_tool_error_with_status_and_stderr() {
    let dir = setup();
    for era in Era::ALL {
        let r = Start::new(dir.path()).connect(era).await;
        let res = r.call("fails", json!({})).await;
        assert!(is_error(&res), "{era:?}: {res}");
        let t = text(&res);
        assert!(t.contains("partial"), "{t}");
        assert!(t.contains("exited with status 3"), "{t}");
        assert!(t.contains("something broke"), "{t}");
        assert_eq!(res["_meta"]["regent/execution"]["exitCode"], json!(3));
        // An unknown tool is still a JSON-RPC error.
        let e = r.try_call("ghost", json!({})).await.unwrap_err();
        match e {
            rmcp::ServiceError::McpError(e) => assert_eq!(e.code.0, -32602),
            other => panic!("{other:?}"),
        }
        r.close().await;
    }
}

#[tokio::test]
async fn the_environment_holds_only_what_the_tool_allows() {
    let dir = setup();
    let r = Start::new(dir.path())
        .env("REGENT_TEST_SECRET", "env-secret-0815")
        .env("NOT_ALLOWED", "leak")
        .arg("--log-arguments")
        .connect(Era::Modern)
        .await;
    let res = r.call("environment", json!({})).await;
    assert!(!is_error(&res), "{res}");
    let env_text = text(&res);
    let mut vars: Vec<&str> = env_text.lines().collect();
    vars.sort();
    let path = vars.iter().find(|v| v.starts_with("PATH=")).cloned();
    assert!(path.is_some(), "{vars:?}");
    let rest: Vec<&str> = vars
        .into_iter()
        .filter(|v| !v.starts_with("PATH="))
        .collect();
    assert_eq!(
        rest,
        [
            "FROM_ENV=env-secret-0815",
            "FROM_FILE=file-secret-4711",
            "LITERAL=plain"
        ]
    );
    // A missing secret stops the call before anything runs, naming the file only.
    let res = r.call("needs_secret", json!({})).await;
    assert!(is_error(&res));
    assert!(
        text(&res).contains("no-such-secret.txt does not exist"),
        "{}",
        text(&res)
    );
    // Secrets never reach the decision log, even with arguments logged
    // (once this call's line is there, every earlier one is too).
    r.decision(&decision_id(&res));
    let log = std::fs::read_to_string(&r.log).unwrap();
    assert!(
        log.contains("\"arguments\""),
        "--log-arguments had no effect: {log}"
    );
    assert!(
        !log.contains("env-secret-0815") && !log.contains("file-secret-4711"),
        "{log}"
    );
    r.close().await;
}

#[tokio::test]
async fn manage_files_stays_inside_its_root() {
    // A copy of the example, so that its writes land in a temp dir.
    let tmp = tempfile::tempdir().unwrap();
    let example = tmp.path().join("manage_files");
    copy_dir(&repo_path("examples/manage_files"), &example);
    std::fs::write(tmp.path().join("victim.txt"), "outside the root\n").unwrap();
    for era in Era::ALL {
        let r = Start::new(&example).connect(era).await;
        let res = r
            .call(
                "manage_files",
                json!({"path": "notes.txt", "action": "read"}),
            )
            .await;
        assert!(!is_error(&res), "{res}");
        assert!(text(&res).contains("Notes kept by the manage_files example"));

        let new = format!("{era:?}.txt");
        for (action, content) in [("append", "one\n"), ("append", "$(two)\n")] {
            let res = r
                .call(
                    "manage_files",
                    json!({"path": new, "action": action, "content": content}),
                )
                .await;
            assert!(!is_error(&res), "{res}");
        }
        let res = r
            .call("manage_files", json!({"path": new, "action": "read"}))
            .await;
        assert_eq!(text(&res), "one\n$(two)\n");
        let res = r
            .call(
                "manage_files",
                json!({"path": new, "action": "replace", "content": "new\n"}),
            )
            .await;
        assert!(!is_error(&res), "{res}");
        assert_eq!(
            std::fs::read_to_string(example.join(".root").join(&new)).unwrap(),
            "new\n"
        );
        let res = r
            .call("manage_files", json!({"path": new, "action": "delete"}))
            .await;
        assert!(!is_error(&res), "{res}");
        assert!(!example.join(".root").join(&new).exists());
        // Replace and delete each asked once; read and append never did.
        let asked = r.asked();
        assert_eq!(asked.len(), 2, "{era:?}: {asked:?}");
        assert!(asked[0].starts_with("replace \""), "{asked:?}");
        assert!(asked[1].starts_with("delete \""), "{asked:?}");

        for (path, action) in [
            ("../../etc/passwd", "read"),
            ("../../victim.txt", "replace"),
            ("a/../../../victim.txt", "delete"),
            ("/etc/passwd", "read"),
            (tmp.path().join("victim.txt").to_str().unwrap(), "delete"),
        ] {
            let args = json!({"path": path, "action": action, "content": "pwned"});
            let res = r.call("manage_files", args.clone()).await;
            assert!(is_error(&res), "{era:?} {path}: {res}");
            assert_eq!(
                res["_meta"]["regent/decision"]["allowed"],
                json!(false),
                "{res}"
            );
            assert!(!text(&res).contains("root:x:0"), "{res}");
            let resolved = r.resolve("manage_files", args).await;
            assert_eq!(
                resolved["_meta"]["regent/decision"]["reasons"],
                res["_meta"]["regent/decision"]["reasons"],
                "tools/resolve and tools/call disagree"
            );
        }
        r.close().await;
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("victim.txt")).unwrap(),
        "outside the root\n"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Whether a process has `arg` among its arguments.
fn running_with(arg: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
    })
}

fn mkfifo(path: &std::path::Path) -> String {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
    path.display().to_string()
}

#[tokio::test]
async fn calls_past_the_concurrency_limit_are_refused_and_start_nothing() {
    use std::os::unix::fs::OpenOptionsExt;
    for era in Era::ALL {
        let dir = setup();
        let r = Start::new(dir.path())
            .arg("--max-concurrent-calls")
            .arg("2")
            .connect(era)
            .await;
        let pipes: Vec<String> = (0..4)
            .map(|i| mkfifo(&dir.path().join(format!("pipe{i}"))))
            .collect();
        let first = r.call("read_pipe", json!({"path": pipes[0]}));
        let second = r.call("read_pipe", json!({"path": pipes[1]}));
        let more = async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !(running_with(&pipes[0]) && running_with(&pipes[1])) {
                assert!(
                    Instant::now() < deadline,
                    "{era:?}: the first two never ran"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let mut refused = Vec::new();
            for p in &pipes[2..] {
                match r.try_call("read_pipe", json!({"path": p})).await {
                    Err(rmcp::ServiceError::McpError(e)) => refused.push(e),
                    other => panic!("{era:?}: a third call was not refused: {other:?}"),
                }
                assert!(!running_with(p), "{era:?}: a refused call started {p}");
            }
            for p in &pipes[..2] {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(p)
                    .unwrap();
                std::io::Write::write_all(&mut f, b"done").unwrap();
            }
            refused
        };
        let (a, b, refused) = tokio::join!(first, second, more);
        for res in [a, b] {
            assert!(!is_error(&res), "{era:?}: {res}");
            assert_eq!(text(&res), "done", "{era:?}: {res}");
        }
        assert_eq!(refused.len(), 2);
        for e in &refused {
            assert_eq!(e.code.0, -32603, "{era:?}: {e:?}");
            assert!(e.message.contains("server busy"), "{era:?}: {e:?}");
            let data = e.data.clone().unwrap_or_default();
            assert_eq!(data["reason"], json!("capacity"), "{era:?}: {e:?}");
            assert_eq!(data["maxConcurrentCalls"], json!(2), "{era:?}: {e:?}");
        }
        // Both refusals are in the decision log, after the policy allowed them.
        let busy = |lines: &[Value]| {
            lines
                .iter()
                .filter(|l| {
                    l["refused"]
                        .as_str()
                        .is_some_and(|r| r.contains("server busy"))
                })
                .count()
        };
        let lines = r.decisions_when(|l| busy(l) == 2);
        assert_eq!(busy(&lines), 2, "{era:?}: {lines:?}");
        // Room again once the first two ended.
        let p = mkfifo(&dir.path().join("again"));
        let call = r.call("read_pipe", json!({"path": p}));
        let release = async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !running_with(&p) {
                assert!(Instant::now() < deadline, "{era:?}: the call never ran");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            std::io::Write::write_all(&mut f, b"again").unwrap();
        };
        let (res, ()) = tokio::join!(call, release);
        assert_eq!(text(&res), "again", "{era:?}: {res}");
        r.close().await;
    }
}

#[test]
fn a_cancelled_call_does_not_hold_the_exit_at_the_end_of_input() {
    // The client cancels a long call, then closes stdin. MCP says no answer
    // comes for a cancelled request, so the end of input must not wait for
    // one (it once waited the whole 10 s drain).
    // At debug level the end of input says when it stops waiting for an
    // answer that never came ("stopped waiting for answers"): that line is
    // the event this test rules out, not the exit's duration.
    let dir = setup();
    let pid_file = dir.path().join("work/pids");
    let mut cmd = common::regent();
    cmd.env("RUST_LOG", "regent=debug")
        .arg("serve")
        .arg(dir.path());
    let mut server = common::Server::spawn(Era::Legacy, cmd);
    let id = server.send_request(
        "tools/call",
        json!({"name": "sleepy_long", "arguments": {}}),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_pids(&pid_file).len() < 2 {
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the user changed their mind"}),
    );
    let (status, stderr) = server.finish_with_stderr();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        !stderr.contains("stopped waiting for answers"),
        "the end of input waited for the cancelled call's answer:\n{stderr}"
    );
}
