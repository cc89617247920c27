//! `serve --bundle-url`, end to end: a real bundle server on 127.0.0.1 (a
//! thread on a std `TcpListener` that honours `If-None-Match`, counts what
//! it answers, and can cut a download short), bundles made by `regent bundle
//! build`, a real stdio client. A new revision is picked up and announced;
//! a bundle signed with another key, a tampered file and a truncated
//! download keep the last good catalog and say why in the status; a restart
//! without the server serves the copy kept in `--bundle-dir`; the bundle's
//! revision is in the decision log, `/healthz` and `/metrics`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::{self, Era, Server, http::HttpServer};
use crate::reload_support::eventually;

const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// What the bundle server serves, and what it saw.
#[derive(Default)]
struct Served {
    body: Vec<u8>,
    etag: String,
    /// Send the headers and half the body, then close.
    truncate: bool,
    requests: usize,
    not_modified: usize,
    /// Set when the server is dropped: the listener closes.
    stopped: bool,
}

/// A bundle server on 127.0.0.1: every GET gets the current bundle, or
/// `304` when `If-None-Match` names its ETag.
struct BundleServer {
    url: String,
    addr: std::net::SocketAddr,
    served: Arc<Mutex<Served>>,
}

impl BundleServer {
    fn start(body: Vec<u8>, etag: &str) -> BundleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let served = Arc::new(Mutex::new(Served {
            body,
            etag: etag.to_string(),
            ..Served::default()
        }));
        let shared = served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                if shared.lock().unwrap().stopped {
                    break;
                }
                let shared = shared.clone();
                std::thread::spawn(move || answer(stream, &shared));
            }
        });
        BundleServer {
            url: format!("http://{addr}/bundles/prod.tar.gz"),
            addr,
            served,
        }
    }

    fn serve(&self, body: Vec<u8>, etag: &str, truncate: bool) {
        let mut s = self.served.lock().unwrap();
        s.body = body;
        s.etag = etag.to_string();
        s.truncate = truncate;
    }

    fn requests(&self) -> (usize, usize) {
        let s = self.served.lock().unwrap();
        (s.requests, s.not_modified)
    }
}

impl Drop for BundleServer {
    /// Closes the listener: the accept loop wakes on one last connection,
    /// sees `stopped` and ends, dropping it.
    fn drop(&mut self) {
        self.served.lock().unwrap().stopped = true;
        let _ = TcpStream::connect(self.addr);
    }
}

fn answer(stream: TcpStream, served: &Mutex<Served>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut if_none_match = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("if-none-match")
        {
            if_none_match = Some(v.trim().to_string());
        }
    }
    let mut out = stream;
    let mut s = served.lock().unwrap();
    s.requests += 1;
    if if_none_match.as_deref() == Some(s.etag.as_str()) {
        s.not_modified += 1;
        let _ = write!(
            out,
            "HTTP/1.1 304 Not Modified\r\nETag: {}\r\nConnection: close\r\n\r\n",
            s.etag
        );
        return;
    }
    let body = s.body.clone();
    let sent = if s.truncate {
        body.len() / 2
    } else {
        body.len()
    };
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nETag: {}\r\nConnection: close\r\n\r\n",
        body.len(),
        s.etag
    );
    drop(s);
    let _ = out.write_all(&body[..sent]);
    let _ = out.flush();
    let _ = out.shutdown(std::net::Shutdown::Both);
    // Drain what the client may still send, so the close is clean.
    let _ = reader.read_to_end(&mut Vec::new());
}

fn tool(name: &str) -> String {
    format!(
        "tools:\n  - name: {name}\n    description: A tool\n    inputSchema:\n      type: object\n      properties: {{}}\n    annotations:\n      readOnlyHint: true\n    policy: tools.{name}\n"
    )
}

fn policy(name: &str, answer: &str) -> String {
    format!("package tools.{name}\n\nimport rego.v1\n\nmeta := {{\"answer\": \"{answer}\"}}\n")
}

/// A bundle of a catalog with `tools`, built by `regent bundle build` with
/// `revision`, signed with the fixture key `key` (key id `ci`).
fn bundle(tools: &[&str], revision: &str, key: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    for t in tools {
        std::fs::write(dir.path().join(format!("{t}.yaml")), tool(t)).unwrap();
        std::fs::write(dir.path().join(format!("{t}.rego")), policy(t, revision)).unwrap();
    }
    let out = dir.path().join("out.tar.gz");
    let key = key_path(key);
    let o = common::regent()
        .args(["bundle", "build"])
        .arg(dir.path())
        .arg("-o")
        .arg(&out)
        .arg("--signing-key")
        .arg(&key)
        .args(["--key-id", "ci", "--revision", revision])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(out).unwrap()
}

fn key_path(name: &str) -> PathBuf {
    common::repo_path(&format!("tests/fixtures/bundle/{name}"))
}

fn args<'a>(url: &'a str, dir: &'a Path, log: &'a Path, public: &'a Path) -> Vec<&'a str> {
    vec![
        "--bundle-url",
        url,
        "--bundle-dir",
        dir.to_str().unwrap(),
        "--bundle-public-key",
        public.to_str().unwrap(),
        "--bundle-poll",
        "1",
        "--decision-log",
        log.to_str().unwrap(),
    ]
}

fn start(args: &[&str]) -> Server {
    let mut cmd = common::regent();
    cmd.arg("serve")
        .args(args)
        .env("RUST_LOG", "regent=info,rmcp=error");
    Server::spawn(Era::Legacy, cmd)
}

/// The `bundles` of the decision-log lines written so far.
fn logged_bundles(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    common::decision_lines(&text)
        .into_iter()
        .map(|l| l["bundles"].clone())
        .collect()
}

/// Waits until the status's `lastError` holds `what`; returns the status.
fn wait_error(server: &mut Server, what: &str) -> Value {
    eventually(&format!("lastError with `{what}`"), || {
        let s = server.status();
        s["lastError"]
            .as_str()
            .is_some_and(|e| e.contains(what))
            .then_some(s)
    })
}

#[test]
fn a_polled_bundle_is_picked_up_bad_ones_keep_the_last_good_and_a_restart_serves_the_kept_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundles");
    let log = tmp.path().join("decisions.log");
    let public = key_path("rsa.pub");
    let r1 = bundle(&["alpha"], "r1", "rsa.pem");
    let bundles = BundleServer::start(r1, "\"r1\"");
    let mut server = start(&args(&bundles.url, &dir, &log, &public));

    assert_eq!(server.tool_names(), ["alpha"]);
    let status = server.status();
    assert_eq!(
        status["bundle"],
        json!({"name": "prod", "revision": "r1", "keyId": "ci", "verified": true,
               "url": bundles.url, "etag": "\"r1\""}),
        "{status}"
    );
    server.resolve("alpha", json!({}));
    eventually("a decision line", || {
        logged_bundles(&log)
            .last()
            .filter(|b| **b == json!({"prod": {"revision": "r1"}}))
            .cloned()
    });
    // Unchanged polls are answered 304.
    eventually("a 304", || (bundles.requests().1 > 0).then_some(()));

    // A new revision with another tool: swapped in and announced.
    let r2 = bundle(&["alpha", "beta"], "r2", "rsa.pem");
    bundles.serve(r2.clone(), "\"r2\"", false);
    server.wait_notification(LIST_CHANGED, 0);
    assert_eq!(server.tool_names(), ["alpha", "beta"]);
    assert_eq!(server.status()["bundle"]["revision"], "r2");
    let resolved = server.resolve("beta", json!({}));
    assert_eq!(resolved["_meta"]["answer"], "r2", "{resolved}");
    eventually("a decision line of r2", || {
        logged_bundles(&log)
            .last()
            .filter(|b| **b == json!({"prod": {"revision": "r2"}}))
            .cloned()
    });

    // Signed with another key: refused, r2 keeps serving.
    bundles.serve(bundle(&["gamma"], "r3", "other.pem"), "\"r3\"", false);
    let s = wait_error(&mut server, "signature does not verify");
    assert_eq!(s["bundle"]["revision"], "r2", "{s}");
    assert_eq!(server.tool_names(), ["alpha", "beta"]);

    // A file changed after signing: refused, naming the file.
    let signed = bundle(&["alpha", "beta"], "r4", "rsa.pem");
    let entries: Vec<(String, Vec<u8>)> = crate::bundle::unpack(&signed)
        .into_iter()
        .map(|(p, d)| {
            if p == "beta.rego" {
                (p, policy("beta", "tampered").into_bytes())
            } else {
                (p, d)
            }
        })
        .collect();
    let tampered = crate::bundle::pack(&crate::bundle::regular(entries));
    bundles.serve(tampered, "\"r4\"", false);
    let s = wait_error(&mut server, "beta.rego");
    assert!(
        s["lastError"]
            .as_str()
            .unwrap()
            .contains("changed after signing"),
        "{s}"
    );
    assert_eq!(s["bundle"]["revision"], "r2", "{s}");

    // A download cut short: refused, r2 keeps serving.
    bundles.serve(bundle(&["gamma"], "r5", "rsa.pem"), "\"r5\"", true);
    let s = wait_error(&mut server, "cannot download the bundle");
    assert_eq!(s["bundle"]["revision"], "r2", "{s}");
    assert_eq!(server.tool_names(), ["alpha", "beta"]);
    assert_eq!(server.count_notifications(LIST_CHANGED), 1);
    let resolved = server.resolve("beta", json!({}));
    assert_eq!(resolved["_meta"]["answer"], "r2", "{resolved}");

    // The server has r2 again (a 304): the error no longer applies.
    bundles.serve(r2, "\"r2\"", false);
    let s = eventually("the error cleared", || {
        let s = server.status();
        (s["ok"] == true).then_some(s)
    });
    assert_eq!(s["lastError"], Value::Null, "{s}");
    server.finish();

    // Restarted with the server gone: the kept copy (r2) serves.
    let url = bundles.url.clone();
    drop(bundles);
    eventually("the bundle server closed", || {
        TcpStream::connect(url.trim_start_matches("http://").split('/').next().unwrap())
            .is_err()
            .then_some(())
    });
    let mut again = start(&args(&url, &dir, &log, &public));
    assert_eq!(again.tool_names(), ["alpha", "beta"]);
    let s = again.status();
    assert_eq!(s["bundle"]["revision"], "r2", "{s}");
    again.finish();
}

#[test]
fn healthz_and_metrics_name_the_bundle_and_a_first_download_that_fails_refuses_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundles");
    let log = tmp.path().join("decisions.log");
    let public = key_path("rsa.pub");
    let bundles = BundleServer::start(bundle(&["alpha"], "r1", "rsa.pem"), "\"r1\"");
    let server = HttpServer::start(&args(&bundles.url, &dir, &log, &public));
    let health: Value =
        serde_json::from_slice(&server.send(&common::http::Req::get("/healthz")).body).unwrap();
    assert_eq!(health["bundle"]["revision"], "r1", "{health}");
    assert_eq!(health["bundle"]["keyId"], "ci", "{health}");
    let metrics = server.metrics(None);
    assert!(
        metrics.contains(r#"regent_bundle_info{bundle="prod",revision="r1",key_id="ci"} 1"#),
        "{metrics}"
    );
    drop(server);

    // No kept copy and no server: the server does not start, and says why.
    let empty = tmp.path().join("empty");
    let closed = common::ClosedPort::new();
    let gone = format!("http://{}/b.tar.gz", closed.addr());
    let o = common::regent()
        .arg("serve")
        .args(args(&gone, &empty, &log, &public))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("cannot download the bundle") && err.contains("after 3 tries"),
        "{err}"
    );
}

/// `bytes` with `.signatures.json` taken out and `change` applied to each
/// file: a bundle as an unsigned pipeline would serve it.
fn unsigned(bytes: &[u8], change: impl Fn(&str, Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let entries: Vec<(String, Vec<u8>)> = crate::bundle::unpack(bytes)
        .into_iter()
        .filter(|(p, _)| p != ".signatures.json")
        .map(|(p, d)| {
            let d = change(&p, d);
            (p, d)
        })
        .collect();
    crate::bundle::pack(&crate::bundle::regular(entries))
}

#[test]
fn an_unsigned_bundle_whose_catalog_does_not_build_keeps_the_last_good_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundles");
    let good = unsigned(&bundle(&["alpha"], "r1", "rsa.pem"), |_, d| d);
    let bundles = BundleServer::start(good, "\"r1\"");
    // No --bundle-public-key: unsigned bundles serve.
    let server = HttpServer::start(&[
        "--bundle-url",
        &bundles.url,
        "--bundle-dir",
        dir.to_str().unwrap(),
        "--bundle-poll",
        "1",
    ]);
    let broken = unsigned(&bundle(&["alpha"], "r2", "rsa.pem"), |p, d| {
        if p == "alpha.rego" {
            b"package tools.alpha\n\nmeta := {\n".to_vec()
        } else {
            d
        }
    });
    bundles.serve(broken, "\"r2\"", false);
    server.wait_for_metric(
        None,
        r#"regent_bundle_failures_total{reason="catalog"}"#,
        1.0,
    );
    let health: Value =
        serde_json::from_slice(&server.send(&common::http::Req::get("/healthz")).body).unwrap();
    assert_eq!(health["bundle"]["revision"], "r1", "{health}");
    assert_eq!(health["bundle"]["verified"], false, "{health}");
    assert!(
        health["lastReloadError"]
            .as_str()
            .is_some_and(|e| e.contains("alpha.rego")),
        "{health}"
    );
}

/// An HTTPS bundle server on 127.0.0.1 (rustls, with the certificate
/// tests/fixtures/jwks' CA issued for 127.0.0.1): every request gets `body`.
fn https_bundle_server(body: Vec<u8>) -> String {
    let config = crate::jwt_support::loopback_tls_config();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let (config, body) = (config.clone(), body.clone());
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut request = Vec::new();
                let mut chunk = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nETag: \"r1\"\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(&body);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    format!("https://{addr}/bundles/prod.tar.gz")
}

#[test]
fn a_bundle_server_with_a_private_ca_is_trusted_with_bundle_ca_and_refused_without() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("decisions.log");
    let public = key_path("rsa.pub");
    let url = https_bundle_server(bundle(&["alpha"], "r1", "rsa.pem"));
    let ca = common::repo_path("tests/fixtures/jwks/ca.pem");

    // Without --bundle-ca the system's roots do not know the test CA: no
    // kept copy, so the server does not start, and says why.
    let refused = tmp.path().join("refused");
    let o = common::regent()
        .arg("serve")
        .args(args(&url, &refused, &log, &public))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("cannot download the bundle") && err.contains("certificate"),
        "{err}"
    );

    // With it, the bundle is downloaded, verified and served.
    let dir = tmp.path().join("trusted");
    let mut a = args(&url, &dir, &log, &public);
    a.extend(["--bundle-ca", ca.to_str().unwrap()]);
    let mut server = start(&a);
    assert_eq!(server.tool_names(), ["alpha"]);
    assert_eq!(server.status()["bundle"]["revision"], "r1");
    drop(server);

    // A CA file for a server that is not https, or with no certificate in
    // it, is refused before anything is fetched.
    let closed = common::ClosedPort::new();
    let plain = format!("http://{}/b.tar.gz", closed.addr());
    let mut a = args(&plain, &dir, &log, &public);
    a.extend(["--bundle-ca", ca.to_str().unwrap()]);
    let o = common::regent().arg("serve").args(&a).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--bundle-ca") && err.contains("is not https"),
        "{err}"
    );
    let empty = tmp.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let mut a = args(&url, &dir, &log, &public);
    a.extend(["--bundle-ca", empty.to_str().unwrap()]);
    let o = common::regent().arg("serve").args(&a).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("holds no PEM certificate"), "{err}");
}

/// A bundle as `opa build` makes one of Rego and data only: `alpha`'s
/// policy answering `answer`, at `revision`.
fn policy_bundle(revision: &str, answer: &str) -> Vec<u8> {
    let manifest = json!({"revision": revision, "roots": [""], "rego_version": 1});
    crate::bundle::pack(&crate::bundle::regular(vec![
        (".manifest".into(), manifest.to_string().into_bytes()),
        ("data.json".into(), b"{}".to_vec()),
        (
            "policies/alpha.rego".into(),
            policy("alpha", answer).into_bytes(),
        ),
    ]))
}

#[test]
fn a_bundle_of_policies_serves_with_the_tools_given_beside_it_and_either_change_reloads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundles");
    let log = tmp.path().join("decisions.log");
    let tools = tmp.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("alpha.yaml"), tool("alpha")).unwrap();
    let bundles = BundleServer::start(policy_bundle("p1", "p1"), "\"p1\"");
    let d = dir.to_str().unwrap();
    let l = log.to_str().unwrap();
    let t = tools.to_str().unwrap();
    let mut server = start(&[
        "--bundle-url",
        &bundles.url,
        "--bundle-dir",
        d,
        "--bundle-poll",
        "1",
        "--decision-log",
        l,
        t,
    ]);
    assert_eq!(server.tool_names(), ["alpha"]);
    let resolved = server.resolve("alpha", json!({}));
    assert_eq!(resolved["_meta"]["answer"], "p1", "{resolved}");
    assert_eq!(server.status()["bundle"]["revision"], "p1");

    // A new policy bundle: the tools beside it stay, the policy changes.
    bundles.serve(policy_bundle("p2", "p2"), "\"p2\"", false);
    eventually("the policy of p2", || {
        let r = server.resolve("alpha", json!({}));
        (r["_meta"]["answer"] == "p2").then_some(())
    });
    assert_eq!(server.status()["bundle"]["revision"], "p2");

    // A tool file added beside the bundle: watched, reloaded, announced;
    // the bundle's policies stay.
    let seen = server.count_notifications(LIST_CHANGED);
    let beta = tool("beta").replace("    policy: tools.beta\n", "");
    std::fs::write(tools.join("beta.yaml"), beta).unwrap();
    server.wait_notification(LIST_CHANGED, seen);
    assert_eq!(server.tool_names(), ["alpha", "beta"]);
    let resolved = server.resolve("alpha", json!({}));
    assert_eq!(resolved["_meta"]["answer"], "p2", "{resolved}");
    assert_eq!(server.status()["bundle"]["revision"], "p2");
    drop(server);

    // Alone, a bundle of policies serves no tools: refused, saying what to do.
    let alone = tmp.path().join("alone");
    let o = common::regent()
        .args(["serve", "--bundle-url", &bundles.url, "--bundle-dir"])
        .arg(&alone)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("holds no tool files") && err.contains("give the tool files beside it"),
        "{err}"
    );
}
