//! Numbers a user gives in an elicitation reply (issue 27): OPA writes a
//! number back as its text spelled it (`json.marshal` of `1.50` is
//! `1.50`), regent as it holds it, so an evaluation that would write one
//! spelled otherwise fails closed (`policy::spelled`). On 2026-07-28 the
//! reply rides in the retry's text (`inputResponses`), which the transport
//! scans as any request's, and an answer of an earlier round keeps its
//! spelling in the sealed `requestState`; on 2025-11-25 rmcp parses the reply before
//! regent sees it, so every number but a plain integer is refused where
//! any spelling of it would be (`Spelled::with_unseen`). The fixture,
//! tests/fixtures/elicit_numbers, asks for a `factor` and denies with
//! `json.marshal(factor)` above 1. Replies go as raw JSON lines, so the
//! spelling on the wire is the test's own.

use crate::common;

use common::{Era, Server, state_of, text};
use serde_json::{Value, json};

fn catalog() -> String {
    common::repo_path("tests/fixtures/elicit_numbers")
        .to_str()
        .unwrap()
        .to_string()
}

/// What became of a call: the policy answered (its deny reasons, from the
/// refusal's text), or its evaluation failed with `why` on stderr.
#[derive(Debug, PartialEq)]
enum Seen {
    Denied(String),
    Refused,
}

fn seen(response: &Value) -> Seen {
    if response.get("error").is_some() {
        return Seen::Refused;
    }
    let result = &response["result"];
    assert_eq!(result["isError"], json!(true), "{response}");
    Seen::Denied(text(result))
}

/// A 2025-11-25 session calling `scale`, the user answering `factor` with
/// `spelled`, the reply's JSON text as the client writes it.
fn legacy(spelled: &str) -> (Value, String) {
    let caps = json!({"elicitation": {"form": {}}});
    let mut server = Server::start_with(Era::Legacy, &[&catalog()], caps);
    let id = server.send_request("tools/call", json!({"name": "scale", "arguments": {}}));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let asked = loop {
        let m = server.next_message(deadline);
        if m["method"] == json!("elicitation/create") {
            break m;
        }
    };
    assert_eq!(asked["params"]["message"], json!("By how much?"), "{asked}");
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"factor": "@N@"}}});
    server.send_line(&reply.to_string().replace("\"@N@\"", spelled));
    outcome(&mut server, id)
}

#[test]
fn a_2025_reply_answers_a_plain_integer_and_refuses_any_other_number() {
    let (r, _) = legacy("2");
    assert_eq!(
        seen(&r),
        Seen::Denied("regent refused to run scale: this call is denied\n- factor 2".into()),
        "{r}"
    );
    // `2.0`, `1.50`, `2E0` and `1.5` reach regent as the same kind of
    // double: OPA would write each as spelled, and compare one with more
    // digits exactly; regent cannot see which. `json.marshal` refuses to
    // write it (or, were the plan run on regorus, the evaluation refuses
    // such a number before it starts: it compares where regent cannot
    // watch); either way the refusal names the reply.
    for spelled in ["2.0", "1.50", "2E0", "1.5"] {
        let (r, log) = legacy(spelled);
        assert_eq!(seen(&r), Seen::Refused, "{spelled}: {r}");
        assert!(
            log.contains("policy evaluation failed: ")
                && log.contains("an elicitation reply spelled the number")
                && log.contains("(regent cannot see its text"),
            "{spelled}: {log}"
        );
    }
}

/// A 2026-07-28 session whose client declared form elicitation.
fn modern_server() -> Server {
    Server::start_with(
        Era::Modern,
        &[&catalog()],
        json!({"elicitation": {"form": {}}}),
    )
}

/// Sends a 2026-07-28 retry of `tool` (request `id`) with `state`,
/// answering `responses`, whose `"@N@"` is written `spelled` on the wire.
fn send_retry(
    server: &mut Server,
    id: i64,
    tool: &str,
    state: &str,
    responses: Value,
    spelled: &str,
) {
    let retry = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        },
        "requestState": state,
        "inputResponses": responses,
    }});
    server.send_line(&retry.to_string().replace("\"@N@\"", spelled));
}

/// The answer to request `id`, and regent's log up to its failure (if any).
fn outcome(server: &mut Server, id: i64) -> (Value, String) {
    let r = server.wait_for_id(&json!(id));
    let log = server
        .stderr_until(|l| l.contains("policy evaluation failed") || seen(&r) != Seen::Refused);
    (r, log)
}

/// A 2026-07-28 retry of `scale` answering `factor` with `spelled`, as raw
/// text, after a first round that asked.
fn modern(spelled: &str) -> (Value, String) {
    let mut server = modern_server();
    let first = server.request("tools/call", json!({"name": "scale", "arguments": {}}));
    assert_eq!(
        first["result"]["resultType"],
        json!("input_required"),
        "{first}"
    );
    let factor =
        json!({"regent/elicit/factor": {"action": "accept", "content": {"factor": "@N@"}}});
    send_retry(
        &mut server,
        900,
        "scale",
        &state_of(&first),
        factor,
        spelled,
    );
    outcome(&mut server, 900)
}

#[test]
fn a_2026_reply_is_read_as_its_retry_spelled_it() {
    for (spelled, reason) in [
        ("2", "factor 2"),
        ("1.5", "factor 1.5"),
        ("2.0", "factor 2.0"),
    ] {
        let (r, _) = modern(spelled);
        assert_eq!(
            seen(&r),
            Seen::Denied(format!(
                "regent refused to run scale: this call is denied\n- {reason}"
            )),
            "{spelled}: {r}"
        );
    }
    for (spelled, written) in [("1.50", "1.5"), ("2E0", "2.0")] {
        let (r, log) = modern(spelled);
        assert_eq!(seen(&r), Seen::Refused, "{spelled}: {r}");
        let why = format!(
            "json.marshal: the request spelled the number {spelled}, which OPA writes back as spelled where regent would write {written}"
        );
        assert!(log.contains(&why), "{spelled}: {log}");
    }
}

/// A 2026-07-28 `scale_noted` whose factor is answered `spelled` in one
/// round and the note in the next: the decision reads the factor from the
/// sealed `requestState`, as regent wrote it.
fn two_rounds(spelled: &str) -> (Value, String) {
    let mut server = modern_server();
    let first = server.request(
        "tools/call",
        json!({"name": "scale_noted", "arguments": {}}),
    );
    let factor =
        json!({"regent/elicit/factor": {"action": "accept", "content": {"factor": "@N@"}}});
    send_retry(
        &mut server,
        900,
        "scale_noted",
        &state_of(&first),
        factor,
        spelled,
    );
    let second = server.wait_for_id(&json!(900));
    assert_eq!(
        second["result"]["resultType"],
        json!("input_required"),
        "{spelled}: {second}"
    );
    assert!(
        second["result"]["inputRequests"]["regent/elicit/note"].is_object(),
        "{spelled}: {second}"
    );
    let note = json!({"regent/elicit/note": {"action": "accept", "content": {"note": "why not"}}});
    send_retry(
        &mut server,
        901,
        "scale_noted",
        &state_of(&second),
        note,
        spelled,
    );
    outcome(&mut server, 901)
}

#[test]
fn a_2026_reply_keeps_its_spelling_across_rounds() {
    for (spelled, reason) in [
        ("2", "factor 2"),
        ("2.0", "factor 2.0"),
        ("1.5", "factor 1.5"),
    ] {
        let (r, _) = two_rounds(spelled);
        assert_eq!(
            seen(&r),
            Seen::Denied(format!(
                "regent refused to run scale_noted: this call is denied\n- {reason}"
            )),
            "{spelled}: {r}"
        );
    }
    let (r, log) = two_rounds("1.50");
    assert_eq!(seen(&r), Seen::Refused, "{r}");
    assert!(
        log.contains("json.marshal: the request spelled the number 1.50, which OPA writes back as spelled where regent would write 1.5"),
        "{log}"
    );
}
