//! The conformance suite's upstream (`regent_testkit::suite`, the binary
//! `regent-suite-upstream` that `.ci/conformance` serves through regent):
//! the fixture in tests/conformance/tools checks clean and pins exactly what
//! the kit lists, and through regent over stdio, in both eras, its image,
//! audio and resource content reaches the client unchanged and its progress
//! and log messages are relayed. `.ci/conformance` runs the suite's own
//! scenarios against the same server over HTTP; these fail here, in
//! `cargo test`, when the fixture or the kit's tools drift.
//!
//! The upstream runs in this test binary, as `upstream_edges::edge_upstream`
//! does (see there why): [`suite_upstream`] serves when
//! `REGENT_SUITE_UPSTREAM` is set.

use crate::common;
use crate::upstream_edges;

use std::path::Path;

use common::suite::{PNG, WAV};
use common::{Era, Server, regent};
use serde_json::{Value, json};

const MODE_ENV: &str = "REGENT_SUITE_UPSTREAM";

/// Not a test: the upstream the tests below start. Run alone (without
/// `REGENT_SUITE_UPSTREAM`) it does nothing.
#[test]
#[ignore = "the upstream the upstream_suite tests start, not a test"]
fn suite_upstream() {
    if std::env::var_os(MODE_ENV).is_none() {
        return;
    }
    common::suite::serve(std::io::stdin().lock(), upstream_edges::pipe_to_regent());
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/tools")
}

#[test]
fn the_conformance_fixture_checks_clean_and_pins_what_the_kit_lists() {
    // serve refuses what check refuses: an error here stops .ci/conformance
    // before the suite runs.
    let out = regent().arg("check").arg(fixture()).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains(": 0 errors, 0 warnings"), "{said}");

    let pin = std::fs::read_to_string(fixture().join("suite.snapshot.json")).unwrap();
    let pin: Value = serde_json::from_str(&pin).unwrap();
    assert_eq!(
        pin["upstreams"]["suite"]["tools"],
        common::suite::tools(),
        "the pin differs from the kit's tools: pin again with `regent upstream snapshot tests/conformance/tools -o tests/conformance/tools/suite.snapshot.json` (regent-suite-upstream on PATH)"
    );
}

/// regent over stdio in `era`, serving the kit's suite upstream whole.
fn serve(dir: &Path, era: Era) -> Server {
    let hosted = upstream_edges::hosted(
        "upstream_suite::suite_upstream",
        &format!("{MODE_ENV}: \"1\""),
    );
    std::fs::write(
        dir.join("upstreams.yaml"),
        format!("upstreams:\n  - name: suite\n{hosted}"),
    )
    .unwrap();
    let mut cmd = regent();
    cmd.arg("serve").arg("--no-watch").arg(dir);
    Server::spawn(era, cmd)
}

/// A `tools/call` of `tool` with `meta` added to the `_meta` of `era`.
fn call_line(era: Era, id: i64, tool: &str, extra_meta: Value) -> String {
    let mut meta = match era {
        Era::Legacy => json!({}),
        Era::Modern => json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "regent-tests", "version": "1"}
        }),
    };
    for (k, v) in extra_meta.as_object().unwrap() {
        meta[k] = v.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}, "_meta": meta}})
    .to_string()
}

#[test]
fn its_content_passes_through_unchanged_and_what_it_says_is_relayed_in_both_eras() {
    for era in Era::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut s = serve(dir.path(), era);
        let mut id = 0;
        let mut call = |s: &mut Server, tool: &str, meta: Value| {
            id += 1;
            s.notifications.clear();
            s.send_line(&call_line(era, id, tool, meta));
            let r = s.wait_for_id(&json!(id));
            (r, std::mem::take(&mut s.notifications))
        };

        let image = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
        for (tool, content) in [
            ("test_image_content", json!([image])),
            (
                "test_audio_content",
                json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]),
            ),
            (
                "test_embedded_resource",
                json!([{"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain",
                    "text": "This is an embedded resource content."}}]),
            ),
            (
                "test_multiple_content_types",
                json!([
                    {"type": "text", "text": "Multiple content types test:"},
                    image,
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource", "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"}},
                ]),
            ),
        ] {
            let (r, _) = call(&mut s, tool, json!({}));
            assert_eq!(r["result"]["content"], content, "{era:?} {tool}: {r}");
            assert_eq!(r["result"].get("isError"), None, "{era:?} {tool}: {r}");
            assert_eq!(
                r["result"]["_meta"]["regent/execution"]["upstream"], "suite",
                "{r}"
            );
        }

        let (r, notes) = call(
            &mut s,
            "test_tool_with_progress",
            json!({"progressToken": "conf-1"}),
        );
        assert_eq!(
            common::text(&r["result"]),
            "Progress tool completed: 3 steps",
            "{r}"
        );
        let progress: Vec<_> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .map(|n| n["params"].clone())
            .collect();
        // rmcp types progress as a float: regent writes 50 as 50.0.
        let step = |p: f64| json!({"progressToken": "conf-1", "progress": p, "total": 100.0});
        assert_eq!(
            progress,
            [step(0.0), step(50.0), step(100.0)],
            "{era:?}: {notes:?}"
        );

        // On 2026-07-28 only a request that names a level gets log messages.
        let level = match era {
            Era::Legacy => json!({}),
            Era::Modern => json!({"io.modelcontextprotocol/logLevel": "debug"}),
        };
        let (r, notes) = call(&mut s, "test_tool_with_logging", level);
        assert_eq!(
            common::text(&r["result"]),
            "Logging tool completed: 3 log messages sent",
            "{r}"
        );
        let logs: Vec<_> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .map(|n| (n["params"]["level"].clone(), n["params"]["data"].clone()))
            .collect();
        let info = |d: &str| (json!("info"), json!(d));
        assert_eq!(
            logs,
            [
                info("Tool execution started"),
                info("Tool processing data"),
                info("Tool execution completed")
            ],
            "{era:?}: {notes:?}"
        );
    }
}
