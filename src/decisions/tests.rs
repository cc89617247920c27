//! Unit tests of the decision line: its fields, masks, cuts and digests.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::cut::{CUT_REASONS, json_size};
use super::*;
use crate::caller::Caller;
use crate::timestamp::rfc3339;

fn line_of(e: &Entry, format: &Format) -> (usize, Value) {
    let mut out = Vec::new();
    e.line(UNIX_EPOCH, format, &mut out);
    let v = serde_json::from_slice(&out).expect("an oversized line is still JSON");
    (out.len(), v)
}

#[test]
fn an_oversized_line_has_its_arguments_cut_and_says_so() {
    let big = "x".repeat(2 << 20);
    let args = json!({"path": "a.txt", "blob": big});
    let mut e = Entry::new(Kind::Call, "tools/call", "t", args.clone(), "rev");
    e.verdict = Verdict::Allowed;
    let format = Format::new(true, &[]).limiting(64 << 10);
    let (len, v) = line_of(&e, &format);
    assert!(len <= 64 << 10, "{len} bytes");
    let digest = arguments_digest(&args);
    assert_eq!(v["argumentsDigest"], json!(digest));
    let marker = json!({"truncated": true, "bytes": json_size(&args), "digest": digest});
    assert_eq!(v["arguments"], marker);
    assert_eq!(v["input"]["arguments"], marker);
    assert_eq!(v["truncated"], json!(["arguments"]));
    assert_eq!(v["decision"], "allowed");
    assert_eq!(v["result"]["allowed"], json!(true));

    // Arguments that fit alone but not twice (half the limit) are cut
    // up front; ones that fit twice are kept whole, with no `truncated`.
    let fits = json!({"blob": "y".repeat(20 << 10)});
    let e2 = Entry::new(Kind::Resolve, "tools/resolve", "t", fits.clone(), "rev");
    let (len, v) = line_of(&e2, &format);
    assert!(len <= 64 << 10);
    assert_eq!(v["arguments"], fits);
    assert!(v.get("truncated").is_none(), "{v}");
    let half = json!({"blob": "y".repeat(40 << 10)});
    let e3 = Entry::new(Kind::Resolve, "tools/resolve", "t", half, "rev");
    let (len, v) = line_of(&e3, &format);
    assert!(len <= 64 << 10);
    assert_eq!(v["truncated"], json!(["arguments"]));
}

#[test]
fn every_large_field_is_cut_when_the_arguments_are_not_enough() {
    let huge = "r".repeat(300 << 10);
    // Without --log-arguments, a tool name, deny reasons and an outcome
    // made of client input still make a line too long.
    let mut e = Entry::new(
        Kind::Call,
        "tools/call",
        &"n".repeat(100 << 10),
        json!({}),
        "rev",
    );
    e.verdict = Verdict::Denied(vec![huge.clone(); 10]);
    e.outcome = Some(json!({"stderr": huge}));
    e.refused = Some("é".repeat(10_000));
    let mut annotations = Map::new();
    annotations.insert("title".into(), json!("a".repeat(5000)));
    e.annotations = Some(annotations);
    let format = Format::new(false, &[]).limiting(MIN_LINE_BYTES);
    let (len, v) = line_of(&e, &format);
    assert!(len <= MIN_LINE_BYTES, "{len} bytes");
    let cut: Vec<&str> = v["truncated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for field in ["tool", "annotations", "reasons", "refused", "outcome"] {
        assert!(cut.contains(&field), "{field} not in {cut:?}");
    }
    assert!(!cut.contains(&"arguments"));
    assert_eq!(v["reasons"].as_array().unwrap().len(), CUT_REASONS);
    assert_eq!(v["result"]["deny"], v["reasons"]);
    assert!(v["reasons"][0].as_str().unwrap().ends_with('…'));
    assert!(
        v["refused"].as_str().unwrap().ends_with('…'),
        "clipped at a char boundary"
    );
    assert_eq!(v["outcome"]["truncated"], json!(true));
    assert_eq!(v["annotations"]["truncated"], json!(true));
    assert_eq!(v["decision"], "denied");
    assert!(v["path"].as_str().unwrap().starts_with("tools/nnn"));
}

#[test]
fn digests_ignore_key_order() {
    let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":[1,"z"]}}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a":{"x":[1,"z"],"y":2},"b":1}"#).unwrap();
    assert_eq!(arguments_digest(&a), arguments_digest(&b));
    assert_ne!(arguments_digest(&a), arguments_digest(&json!({"b": 2})));
}

#[test]
fn the_digest_is_of_these_bytes() {
    // What a log reader recomputes: sha256 of
    // {"a":1,"b":[true,null,"é\n"],"c":{"x":2.5,"y":""}}
    // (users compare it across versions, so it must not change).
    let v = json!({"c": {"y": "", "x": 2.5}, "b": [true, null, "é\n"], "a": 1});
    assert_eq!(
        arguments_digest(&v),
        "sha256:06843a8cfe78cb22e919838a0e220a4c2679b687b2dde9d22c0bac1f0840a36a"
    );
}

#[test]
fn formats_utc_times() {
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
    assert_eq!(rfc3339(t), "2024-02-29T12:34:56.789Z");
}

#[test]
fn arguments_appear_only_when_asked() {
    let mut e = Entry::new(
        Kind::Call,
        "tools/call",
        "t",
        json!({"p": "secret-ish"}),
        "r",
    );
    e.verdict = Verdict::Denied(vec!["no".into()]);
    let quiet = e.to_json(UNIX_EPOCH, false).to_string();
    assert!(!quiet.contains("secret-ish"), "{quiet}");
    assert!(
        e.to_json(UNIX_EPOCH, true)
            .to_string()
            .contains("secret-ish")
    );
}

#[test]
fn opa_fields_carry_confirm_timer_caller_and_labels() {
    let mut e = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
    e.verdict = Verdict::Denied(vec!["no".into()]);
    e.confirm = Some("sure?".into());
    e.eval = Some(Duration::from_nanos(1234));
    e.caller = Some(Arc::new(Caller {
        subject: "alice".into(),
        issuer: "https://idp".into(),
        claims: Default::default(),
        spelled: Vec::new(),
    }));
    let format = Format::new(false, &[("env".into(), "prod".into())]);
    let mut out = Vec::new();
    e.line(UNIX_EPOCH, &format, &mut out);
    let line: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        line["result"],
        json!({"allowed": false, "deny": ["no"], "confirm": "sure?"})
    );
    assert_eq!(line["metrics"], json!({"timer_regent_eval_ns": 1234}));
    assert_eq!(
        line["input"]["caller"],
        json!({"subject": "alice", "issuer": "https://idp"})
    );
    assert_eq!(line["labels"]["env"], json!("prod"));
    assert!(
        parse_label("id=x")
            .unwrap_err()
            .contains("choose another key")
    );
    assert!(parse_label("novalue").unwrap_err().contains("KEY=VALUE"));
    assert_eq!(parse_label("a=b=c").unwrap(), ("a".into(), "b=c".into()));
}

#[test]
fn masks_erase_what_they_name_and_list_it() {
    let mut e = Entry::new(
        Kind::Resolve,
        "tools/resolve",
        "t",
        json!({"a/b": 1, "c": 2, "d": "x"}),
        "r",
    );
    e.caller = Some(Arc::new(Caller {
        subject: "alice".into(),
        issuer: "https://idp".into(),
        claims: Default::default(),
        spelled: Vec::new(),
    }));
    let mask = [
        "/input/arguments/a~1b",
        "/input/caller",
        "/input/caller/claims/email",
    ]
    .map(|m| parse_mask(m).unwrap())
    .to_vec();
    let mut out = Vec::new();
    e.line(UNIX_EPOCH, &Format::new(true, &[]).masking(mask), &mut out);
    let line: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(line["arguments"], json!({"c": 2, "d": "x"}));
    assert_eq!(
        line["input"],
        json!({"tool": "t", "arguments": {"c": 2, "d": "x"}})
    );
    assert!(line.get("caller").is_none(), "{line}");
    assert_eq!(
        line["erased"],
        json!(["/input/arguments/a~1b", "/input/caller"])
    );
    // Without masks nothing changes, `erased` included.
    let plain = e.to_json(UNIX_EPOCH, true);
    assert!(plain.get("erased").is_none());
    assert_eq!(
        plain["argumentsDigest"],
        json!(arguments_digest(&e.arguments))
    );
    assert!(parse_mask("/input/tool").is_err());
    assert!(parse_mask("input/arguments/x").is_err());
}

#[test]
fn a_shadow_decision_is_shaped_like_the_result() {
    let mut e = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
    e.verdict = Verdict::Allowed;
    e.shadow = Some(ShadowEntry {
        policy: "tools.next".into(),
        verdict: Verdict::Error("boom".into()),
        annotations: None,
        confirm: None,
        eval: Some(Duration::from_nanos(7)),
    });
    let line = e.to_json(UNIX_EPOCH, false);
    assert_eq!(
        line["shadow"],
        json!({"policy": "tools.next", "result": {"allowed": false, "error": "boom"},
            "agrees": false, "metrics": {"timer_regent_eval_ns": 7}})
    );
    e.shadow.as_mut().unwrap().verdict = Verdict::Allowed;
    let line = e.to_json(UNIX_EPOCH, false);
    assert_eq!(line["shadow"]["agrees"], json!(true));
    assert_eq!(line["shadow"]["result"], line["result"]);
}

#[test]
fn a_call_line_has_every_field_in_order() {
    let mut e = Entry::new(Kind::Call, "tools/call", "t", json!({"b": 1, "a": 2}), "r");
    e.annotations = Some(Map::from_iter([("readOnlyHint".to_string(), json!(true))]));
    e.verdict = Verdict::Allowed;
    e.refused = Some("why".into());
    e.outcome = Some(json!({"exitCode": 0}));
    e.duration = Some(Duration::from_micros(12_500));
    let line = e.to_json(UNIX_EPOCH, true);
    let keys: Vec<&str> = line
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "time",
            "id",
            "kind",
            "method",
            "tool",
            "argumentsDigest",
            "arguments",
            "annotations",
            "decision",
            "reasons",
            "revision",
            "refused",
            "outcome",
            "durationMs",
            "decision_id",
            "timestamp",
            "path",
            "input",
            "result",
            "labels",
            "bundles"
        ]
    );
    assert_eq!(line["time"], json!("1970-01-01T00:00:00.000Z"));
    assert_eq!(line["id"], json!(e.id.clone().unwrap()));
    assert_eq!(
        line["argumentsDigest"],
        json!(arguments_digest(&json!({"a": 2, "b": 1})))
    );
    assert_eq!(line["reasons"], json!([]));
    assert_eq!(line["durationMs"], json!(12.5));
    // OPA's event: the same id and time, the input with the arguments
    // (logged here), the decision, the instance and the revision.
    assert_eq!(line["decision_id"], line["id"]);
    assert_eq!(line["timestamp"], line["time"]);
    assert_eq!(line["path"], json!("tools/t"));
    assert_eq!(
        line["input"],
        json!({"tool": "t", "arguments": {"b": 1, "a": 2}})
    );
    assert_eq!(
        line["result"],
        json!({"allowed": true, "deny": [], "annotations": {"readOnlyHint": true}})
    );
    assert_eq!(line["labels"]["id"], json!(instance_id()));
    assert_eq!(line["labels"]["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(line["bundles"], json!({"regent": {"revision": "r"}}));
    assert!(line.get("metrics").is_none(), "no evaluation, no timer");
    let mut denied = Entry::new(Kind::Resolve, "tools/resolve", "t", json!({}), "r");
    denied.verdict = Verdict::Error("boom".into());
    let line = denied.to_json(UNIX_EPOCH, false);
    assert_eq!(line["decision"], json!("error"));
    assert_eq!(line["error"], json!("boom"));
    assert_eq!(line["result"], json!({"allowed": false, "error": "boom"}));
    assert_eq!(
        line["input"],
        json!({"tool": "t"}),
        "no arguments unless asked"
    );
    assert!(
        line["id"].as_str().is_some_and(|id| id.len() == 36),
        "{line}"
    );
}
