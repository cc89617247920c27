//! Single-use 2026-07-28 `requestState` across replicas
//! (`serve --request-state-store redis://…`), against a real `redis-server`
//! on 127.0.0.1 and two replicas of `regent serve --http` sharing the key
//! file and the store: a confirmation's state spent on one replica is
//! refused on the other, and the tool ran once (a marker file); with Redis
//! stopped a retry is refused with the store's error and nothing runs; with
//! Redis back on the same port retries work again. Also: a password from a
//! file, the environment or the URL (`--requirepass`), a password never
//! shown, and the start-up refusals (no key file, another scheme).
//!
//! The confirmation catalog and its answer are `confirm`'s.
//!
//! Without `redis-server` on PATH the tests print why and pass, unless `CI`
//! is set: there a missing server fails them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::http::{HttpServer, McpHttp};
use crate::common::{self, Era, WAIT};
use crate::confirm::{accept, tools};

/// A `redis-server` of the test's own on 127.0.0.1, no persistence; killed
/// on drop.
struct Redis {
    child: Child,
    /// The server's port, held by the test from before the first start to
    /// after the last stop ([`common::ClosedPort::for_server`]), so that no
    /// other process can take it while the server is down and "Redis down"
    /// stays a refused connection.
    port: common::ClosedPort,
    password: Option<String>,
    dir: tempfile::TempDir,
    /// Serving TLS only (with tests/fixtures/jwks' certificate for 127.0.0.1).
    tls: bool,
}

impl Redis {
    /// A server on a free port, or `None` (printed) when `redis-server` is
    /// not installed and `CI` is not set.
    fn start(password: Option<&str>) -> Option<Redis> {
        Redis::start_with(password, false)
    }

    fn start_with(password: Option<&str>, tls: bool) -> Option<Redis> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var_os("CI").is_none(),
                "redis-server is not on PATH under CI: install it (apt-get install redis-server)"
            );
            eprintln!("skipped: redis-server is not on PATH (install the redis-server package)");
            return None;
        }
        let port = common::ClosedPort::for_server();
        let dir = tempfile::tempdir().unwrap();
        Some(Redis::spawn(port, password.map(str::to_string), dir, tls))
    }

    fn spawn(
        port: common::ClosedPort,
        password: Option<String>,
        dir: tempfile::TempDir,
        tls: bool,
    ) -> Redis {
        let mut cmd = Command::new("redis-server");
        if tls {
            let fixture = |f: &str| common::repo_path(&format!("tests/fixtures/jwks/{f}"));
            cmd.args(["--port", "0", "--tls-port", &port.port().to_string()])
                .arg("--tls-cert-file")
                .arg(fixture("server.pem"))
                .arg("--tls-key-file")
                .arg(fixture("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(fixture("ca.pem"))
                .args(["--tls-auth-clients", "no"]);
        } else {
            cmd.args(["--port", &port.port().to_string()]);
        }
        cmd.args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = &password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd.spawn().expect("start redis-server");
        let redis = Redis {
            child,
            port,
            password,
            dir,
            tls,
        };
        redis.wait_ready();
        redis
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port.port())
    }

    /// Until the server answers PING (or asks for the password).
    fn wait_ready(&self) {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port.port())) {
                // The TLS port listens once the server is ready.
                if self.tls {
                    return;
                }
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok()
                    && let Ok(n) = s.read(&mut buf)
                {
                    let answer = String::from_utf8_lossy(&buf[..n]);
                    if answer.starts_with("+PONG") || answer.contains("NOAUTH") {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server (SIGKILL: as a crash looks to regent); its port
    /// stays held, refusing connections, for [`Redis::spawn`] again.
    fn stop(mut self) -> (common::ClosedPort, Option<String>, tempfile::TempDir, bool) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port = std::mem::replace(&mut self.port, common::ClosedPort::new());
        let password = self.password.take();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        (port, password, dir, self.tls)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn key_file(dir: &Path) -> PathBuf {
    let key = dir.join("state.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef-shared-key\n").unwrap();
    key
}

/// `regent serve --http` on the confirmation catalog with `extra`.
fn replica(catalog: &Path, extra: &[&str]) -> HttpServer {
    let mut args = vec![catalog.to_str().unwrap()];
    args.extend_from_slice(extra);
    HttpServer::start(&args)
}

/// One 2026-07-28 `tools/call` of `mark_policy` on `replica`.
fn call(
    replica: &HttpServer,
    args: &Value,
    responses: Option<Value>,
    state: Option<&str>,
) -> Value {
    let caps = json!({"elicitation": {"form": {}}});
    let mut client = McpHttp::connect_caps(replica.addr, Era::Modern, Vec::new(), caps);
    let mut params = json!({"name": "mark_policy", "arguments": args});
    if let Some(r) = responses {
        params["inputResponses"] = r;
    }
    if let Some(s) = state {
        params["requestState"] = json!(s);
    }
    client.request("tools/call", params)
}

/// The state of a fresh first round on `replica`.
fn first_round(replica: &HttpServer, args: &Value) -> String {
    common::state_of(&call(replica, args, None, None))
}

fn reason(r: &Value) -> &str {
    r["error"]["data"]["reason"].as_str().unwrap_or("")
}

#[test]
fn a_state_is_spent_once_across_replicas_and_refused_while_redis_is_down() {
    let Some(redis) = Redis::start(None) else {
        return;
    };
    let dir = tools();
    let key = key_file(dir.path());
    let key = key.to_str().unwrap();
    let url = redis.url();
    let flags = [
        "--request-state-key-file",
        key,
        "--request-state-store",
        &url,
    ];
    let a = replica(dir.path(), &flags);
    let b = replica(dir.path(), &flags);
    let args = json!({"marker": "fleet.marker", "mode": "danger"});
    let marker = dir.path().join("fleet.marker");

    // Asked on A, answered on A: runs.
    let state = first_round(&a, &args);
    let r = call(&a, &args, Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();

    // The same state replayed on B (a replica that never saw it): refused,
    // and the tool did not run a second time.
    let r = call(&b, &args, Some(accept()), Some(&state));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(
        !marker.exists(),
        "a state spent on A ran the tool again on B"
    );

    // Asked on B, answered on A: one fleet, one key.
    let state = first_round(&b, &args);
    let r = call(&a, &args, Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    std::fs::remove_file(&marker).unwrap();
    let r = call(&b, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(!marker.exists());

    // Redis stopped: a state that was never spent is refused, with the
    // store's error, and nothing runs (fail closed).
    let pending = first_round(&a, &args);
    let (port, password, rdir, tls) = redis.stop();
    let r = call(&b, &args, Some(accept()), Some(&pending));
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    assert_eq!(reason(&r), "state-store-unavailable", "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be reached") && message.contains("nothing ran"),
        "{r}"
    );
    assert!(!marker.exists(), "a retry ran without its single-use check");
    assert_eq!(
        b.metric(None, "regent_request_state_store_errors_total"),
        Some(1.0),
        "{}",
        b.metrics(None)
    );
    // A first round needs no store: questions are still asked.
    first_round(&b, &args);

    // Redis back on the same port: the replica reconnects and the state
    // refused while it was down now runs, once.
    let _redis = Redis::spawn(port, password, rdir, tls);
    let deadline = Instant::now() + WAIT;
    loop {
        let r = call(&b, &args, Some(accept()), Some(&pending));
        if r["result"]["isError"] == json!(false) {
            break;
        }
        assert_eq!(reason(&r), "state-store-unavailable", "{r}");
        assert!(
            Instant::now() < deadline,
            "the replica never reconnected: {r}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    let r = call(&a, &args, Some(accept()), Some(&pending));
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(!marker.exists());
}

#[test]
fn a_password_protected_store_with_the_password_from_a_file_the_environment_or_the_url() {
    let secret = "s3cret-store-pass";
    let Some(redis) = Redis::start(Some(secret)) else {
        return;
    };
    let dir = tools();
    let key = key_file(dir.path());
    let key = key.to_str().unwrap();
    let url = redis.url();
    let args = json!({"marker": "auth.marker", "mode": "danger"});
    let marker = dir.path().join("auth.marker");

    // From a file (its trailing newline removed).
    let pass = dir.path().join("redis.pass");
    std::fs::write(&pass, format!("{secret}\n")).unwrap();
    let from_file = replica(
        dir.path(),
        &[
            "--request-state-key-file",
            key,
            "--request-state-store",
            &url,
            "--request-state-store-password-file",
            pass.to_str().unwrap(),
        ],
    );
    let state = first_round(&from_file, &args);
    let r = call(&from_file, &args, Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();

    // From the environment.
    let mut cmd = common::regent();
    cmd.arg("serve")
        .args(["--http", "127.0.0.1:0"])
        .arg(dir.path())
        .args([
            "--request-state-key-file",
            key,
            "--request-state-store",
            &url,
        ])
        .env("REGENT_REQUEST_STATE_STORE_PASSWORD", secret);
    let from_env = HttpServer::spawn(cmd);
    let state = first_round(&from_env, &args);
    let r = call(&from_env, &args, Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();

    // In the URL: works, and the password shows nowhere in the log.
    let with_pass = format!("redis://:{secret}@127.0.0.1:{}", redis.port.port());
    let in_url = replica(
        dir.path(),
        &[
            "--request-state-key-file",
            key,
            "--request-state-store",
            &with_pass,
        ],
    );
    let r = call(&in_url, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(!marker.exists());
    assert!(in_url.stderr().contains("REDACTED"), "{}", in_url.stderr());
    assert!(!in_url.stderr().contains(secret), "{}", in_url.stderr());

    // A wrong password: the retry is refused as with Redis down, and the
    // wrong password is not logged either.
    let wrong = dir.path().join("wrong.pass");
    std::fs::write(&wrong, "not-the-password").unwrap();
    let refused = replica(
        dir.path(),
        &[
            "--request-state-key-file",
            key,
            "--request-state-store",
            &url,
            "--request-state-store-password-file",
            wrong.to_str().unwrap(),
        ],
    );
    let state = first_round(&refused, &args);
    let r = call(&refused, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "state-store-unavailable", "{r}");
    assert!(!marker.exists());
    assert!(!refused.stderr().contains("not-the-password"));
}

#[test]
fn start_up_needs_a_key_file_and_a_redis_url_and_survives_redis_down() {
    let dir = tools();
    let catalog = dir.path().to_str().unwrap();
    let serve = |extra: &[&str]| {
        let out = common::regent()
            .arg("serve")
            .arg(catalog)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, err) = serve(&["--request-state-store", "redis://:pw@127.0.0.1:6379"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("needs --request-state-key-file") && err.contains("head -c 32"),
        "{err}"
    );
    assert!(!err.contains(":pw@"), "{err}");

    let key = key_file(dir.path());
    let key = key.to_str().unwrap();
    let (code, err) = serve(&[
        "--request-state-key-file",
        key,
        "--request-state-store",
        "memcached://127.0.0.1:11211",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("only redis:// and rediss://"), "{err}");

    // Redis down at start: the replica starts, warns, and refuses retries.
    let closed_port = common::ClosedPort::new();
    let closed = format!("redis://{}", closed_port.addr());
    let down = replica(
        dir.path(),
        &[
            "--request-state-key-file",
            key,
            "--request-state-store",
            &closed,
        ],
    );
    assert!(
        down.stderr().contains("cannot be reached at start"),
        "{}",
        down.stderr()
    );
    let args = json!({"marker": "down.marker", "mode": "danger"});
    let state = first_round(&down, &args);
    let r = call(&down, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "state-store-unavailable", "{r}");
    assert!(!dir.path().join("down.marker").exists());
}

#[test]
fn a_tls_store_with_a_private_ca() {
    let Some(redis) = Redis::start_with(None, true) else {
        return;
    };
    let dir = tools();
    let key = key_file(dir.path());
    let key = key.to_str().unwrap();
    let url = format!("rediss://127.0.0.1:{}", redis.port.port());
    let ca = common::repo_path("tests/fixtures/jwks/ca.pem");
    let ca = ca.to_str().unwrap();
    let flags = [
        "--request-state-key-file",
        key,
        "--request-state-store",
        &url,
        "--request-state-store-ca",
        ca,
    ];
    let a = replica(dir.path(), &flags);
    let b = replica(dir.path(), &flags);
    let args = json!({"marker": "tls.marker", "mode": "danger"});
    let marker = dir.path().join("tls.marker");
    let state = first_round(&a, &args);
    let r = call(&a, &args, Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    std::fs::remove_file(&marker).unwrap();
    let r = call(&b, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(!marker.exists());

    // Without the CA the server's certificate is not trusted: fail closed.
    let untrusted = replica(
        dir.path(),
        &[
            "--request-state-key-file",
            key,
            "--request-state-store",
            &url,
        ],
    );
    let state = first_round(&untrusted, &args);
    let r = call(&untrusted, &args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "state-store-unavailable", "{r}");
    assert!(!marker.exists());

    // A CA for a store without TLS is refused at start.
    let out = common::regent()
        .arg("serve")
        .arg(dir.path())
        .args(["--request-state-key-file", key])
        .args(["--request-state-store", "redis://127.0.0.1:6379"])
        .args(["--request-state-store-ca", ca])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not rediss://"), "{err}");
}

/// `serve` over stdio (a single-threaded runtime) spends in the same store.
#[test]
fn a_stdio_replica_shares_the_store_with_an_http_one() {
    let Some(redis) = Redis::start(None) else {
        return;
    };
    let dir = tools();
    let key = key_file(dir.path());
    let key = key.to_str().unwrap();
    let url = redis.url();
    let flags = [
        "--request-state-key-file",
        key,
        "--request-state-store",
        &url,
    ];
    let mut args = vec![dir.path().to_str().unwrap()];
    args.extend_from_slice(&flags);
    let caps = json!({"elicitation": {"form": {}}});
    let mut stdio = common::Rounds::new(
        common::Server::start_with(Era::Modern, &args, caps),
        "mark_policy",
    );
    let http = replica(dir.path(), &flags);
    let call_args = json!({"marker": "stdio.marker", "mode": "danger"});
    let marker = dir.path().join("stdio.marker");

    let state = common::state_of(&stdio.call(call_args.clone(), None, None));
    let r = stdio.call(call_args.clone(), Some(accept()), Some(&state));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    std::fs::remove_file(&marker).unwrap();
    let r = call(&http, &call_args, Some(accept()), Some(&state));
    assert_eq!(reason(&r), "invalid-request-state", "{r}");
    assert!(!marker.exists());
}
