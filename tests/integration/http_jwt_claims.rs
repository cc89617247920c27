//! What a verified JWT must say beyond its signature: ill-typed registered
//! claims are 401 naming the claim and the problem, a `crit` header is
//! refused, and claims that do not match the catalog's caller schema get no
//! decision.

use crate::common;

use crate::jwt_support::{AUDIENCE, ISSUER, TOOLS, bearer, now};

use crate::http_jwt::{Keys, call, claims, header, refused, wait_for_lines};
use common::draft_client::DECISION;
use common::http::McpHttp;
use common::{Era, regent};
use serde_json::{Value, json};

/// Registered claims of the wrong type or value, one case per row: the
/// claim, the JSON it is set to (`null` is sent as `null`; `ABSENT` removes
/// it; `NOW+N` is now plus N seconds), and the `error_description` of the
/// 401 (`ok` when the token is accepted). Every token is validly signed, so
/// each refusal is the claim check's, not the signature's.
const CLAIM_CASES: &[(&str, &str, &str)] = &[
    ("sub", r#""""#, "the token's sub claim is an empty string"),
    ("sub", "42", "the token's sub claim is not a string"),
    (
        "sub",
        r#"["alice"]"#,
        "the token's sub claim is not a string",
    ),
    ("sub", "null", "the token's sub claim is not a string"),
    ("iss", r#""""#, "the token's iss claim is an empty string"),
    (
        "iss",
        r#"["https://idp.example"]"#,
        "the token's iss claim is not a string",
    ),
    ("iss", "true", "the token's iss claim is not a string"),
    ("aud", "[]", "the token's aud claim is an empty array"),
    ("aud", r#""""#, "the token's aud claim is an empty string"),
    (
        "aud",
        r#"["regent-tests", ""]"#,
        "the token's aud claim holds an empty string",
    ),
    (
        "aud",
        r#"["regent-tests", 7]"#,
        "the token's aud claim is not a string or an array of strings",
    ),
    (
        "aud",
        "7",
        "the token's aud claim is not a string or an array of strings",
    ),
    (
        "aud",
        r#"{"regent-tests": true}"#,
        "the token's aud claim is not a string or an array of strings",
    ),
    ("aud", r#"["someone-else", "regent-tests"]"#, "ok"),
    (
        "exp",
        r#""NOW+300""#,
        "the token's exp claim is not a number (NumericDate)",
    ),
    (
        "exp",
        "true",
        "the token's exp claim is not a number (NumericDate)",
    ),
    (
        "exp",
        "[NOW+300]",
        "the token's exp claim is not a number (NumericDate)",
    ),
    (
        "exp",
        r#"{"at": NOW+300}"#,
        "the token's exp claim is not a number (NumericDate)",
    ),
    (
        "exp",
        "null",
        "the token's exp claim is not a number (NumericDate)",
    ),
    (
        "exp",
        "-1",
        "the token's exp claim is negative or too large",
    ),
    (
        "exp",
        "1e300",
        "the token's exp claim is negative or too large",
    ),
    ("exp", "NOW+300.75", "ok"),
    (
        "nbf",
        r#""0""#,
        "the token's nbf claim is not a number (NumericDate)",
    ),
    (
        "nbf",
        "false",
        "the token's nbf claim is not a number (NumericDate)",
    ),
    (
        "nbf",
        "null",
        "the token's nbf claim is not a number (NumericDate)",
    ),
    (
        "nbf",
        "-5",
        "the token's nbf claim is negative or too large",
    ),
    ("nbf", "NOW+0.5", "ok"),
    (
        "iat",
        r#""NOW+0""#,
        "the token's iat claim is not a number (NumericDate)",
    ),
    (
        "iat",
        "[NOW+0]",
        "the token's iat claim is not a number (NumericDate)",
    ),
    (
        "iat",
        "null",
        "the token's iat claim is not a number (NumericDate)",
    ),
    (
        "iat",
        "-1",
        "the token's iat claim is negative or too large",
    ),
    ("iat", "NOW+600", "the token's iat claim is in the future"),
    ("iat", "NOW+30", "ok"),
    ("iat", "ABSENT", "ok"),
    ("iat", "NOW+0.25", "ok"),
];

/// `text` with every `NOW+N` replaced by now plus N (N may have a fraction).
fn at_now(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("NOW+") {
        out.push_str(&rest[..i]);
        rest = &rest[i + 4..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (n, tail) = rest.split_at(end);
        match n.split_once('.') {
            Some((whole, frac)) => {
                out.push_str(&format!("{}.{frac}", now() + whole.parse::<u64>().unwrap()))
            }
            None => out.push_str(&(now() + n.parse::<u64>().unwrap()).to_string()),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[test]
fn ill_typed_claims_are_401_naming_the_claim_and_the_problem() {
    let keys = Keys::new();
    let http = keys.serve();
    for (claim, value, want) in CLAIM_CASES {
        let mut c = claims("mallory", &["oncall"]);
        if *value == "ABSENT" {
            c.as_object_mut().unwrap().remove(*claim);
        } else {
            c[*claim] = serde_json::from_str(&at_now(value))
                .unwrap_or_else(|e| panic!("{claim} = {value}: {e}"));
        }
        let token = keys.sign(&header("EdDSA", Some("ed-1")), &c);
        let (status, challenge) = refused(&http, Some(&format!("Bearer {token}")));
        let label = format!("{claim} = {value}");
        if *want == "ok" {
            assert_eq!(status, 200, "{label}: {challenge}");
            continue;
        }
        assert_eq!(status, 401, "{label}");
        assert!(
            challenge.starts_with(&format!(
                r#"Bearer realm="regent", error="invalid_token", error_description="{want}"#
            )),
            "{label}: {challenge}"
        );
    }
    // The log line says the same, without the token.
    let stderr = http.stderr();
    assert!(
        stderr.contains(
            "refused a bearer token: the token's exp claim is not a number (NumericDate)"
        ),
        "{stderr}"
    );
    let log = std::fs::read_to_string(keys.decision_log()).unwrap_or_default();
    assert!(!log.contains("mallory"), "{log}");
}

#[test]
fn a_token_with_a_crit_header_is_refused() {
    let keys = Keys::new();
    let http = keys.serve();
    let with_crit = |crit: Value, extra: &[(&str, Value)]| {
        let mut h = header("EdDSA", Some("ed-1"));
        h["crit"] = crit;
        for (k, v) in extra {
            h[*k] = v.clone();
        }
        keys.sign(&h, &claims("mallory", &["oncall"]))
    };
    for (label, token, want) in [
        (
            "an extension regent does not know (RFC 7797's b64)",
            with_crit(json!(["b64"]), &[("b64", json!(false))]),
            "the token's crit header lists an extension regent does not understand",
        ),
        (
            "an extension absent from the header",
            with_crit(json!(["exp"]), &[]),
            "the token's crit header lists an extension regent does not understand",
        ),
        (
            "empty",
            with_crit(json!([]), &[]),
            "the token's crit header is an empty array",
        ),
        (
            "a registered parameter",
            with_crit(json!(["alg"]), &[]),
            "the token's crit header lists a header parameter RFC 7515 registers",
        ),
        (
            "not an array",
            with_crit(json!("b64"), &[("b64", json!(false))]),
            "the token's crit header is not an array of header parameter names",
        ),
        (
            "an array of numbers",
            with_crit(json!([1]), &[]),
            "the token's crit header is not an array of header parameter names",
        ),
    ] {
        let (status, challenge) = refused(&http, Some(&format!("Bearer {token}")));
        assert_eq!(status, 401, "{label}");
        assert!(challenge.contains(want), "{label}: {challenge}");
    }
}

/// A deny-list over a claim (`"banned" in input.caller.claims.groups`) is
/// false for a token whose `groups` is the string "banned", so without a
/// caller schema that token is allowed (and `regent check` warns of it);
/// with one, it gets no decision at all: resolve and call fail closed with
/// `caller-claims-invalid`, it sees no tool, and the refusal is logged.
#[test]
fn a_token_whose_claims_do_not_match_the_caller_schema_gets_no_decision() {
    let keys = Keys::new();
    let catalog = std::path::Path::new(&keys.catalog()).to_path_buf();
    std::fs::write(
        catalog.join("restart.rego"),
        "package tools.restart\n\nimport rego.v1\n\ndeny contains \"banned\" if \"banned\" in input.caller.claims.groups\n",
    )
    .unwrap();
    let mut string = claims("mallory", &[]);
    string["groups"] = json!("banned");
    let string = keys.sign(&header("EdDSA", Some("ed-1")), &string);
    let banned = keys.token("eve", &["banned"]);
    let dev = keys.token("bob", &["dev"]);
    let resolve = |c: &mut McpHttp| {
        c.request(
            "tools/resolve",
            json!({"name": "restart", "arguments": {"service": "web"}}),
        )
    };

    // Without a declaration: the hole, and check's warning about it.
    let out = regent()
        .args(["check", "--format", "json", &keys.catalog()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warned = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "untyped-claim" && d["severity"] == "warning");
    assert!(warned, "{report}");
    {
        let http = keys.serve();
        let mut c = bearer(&http, Era::Legacy, &string);
        let r = call(&mut c, "web");
        assert_eq!(
            r["isError"],
            json!(false),
            "the deny-list let it through: {r}"
        );
    }
    // The first server was killed, its last lines maybe unwritten: the
    // second one's log starts afresh.
    let _ = std::fs::remove_file(keys.decision_log());

    // With one: no decision for that token, the others as before.
    std::fs::write(
        catalog.join("restart.yaml"),
        format!(
            "{TOOLS}caller:\n  claims:\n    type: object\n    properties:\n      groups: {{type: array, items: {{type: string}}}}\n"
        ),
    )
    .unwrap();
    let out = regent()
        .args(["check", "--format", "json", &keys.catalog()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !report.to_string().contains("untyped-claim"),
        "declared: no warning: {report}"
    );
    let http = keys.serve();
    for era in Era::ALL {
        let mut c = bearer(&http, era, &string);
        for r in [
            resolve(&mut c),
            c.request(
                "tools/call",
                json!({"name": "restart", "arguments": {"service": "web"}}),
            ),
        ] {
            let e = &r["error"];
            assert_eq!(e["code"], json!(-32602), "{era:?}: {r}");
            assert_eq!(
                e["data"]["reason"],
                json!("caller-claims-invalid"),
                "{era:?}: {r}"
            );
            assert_eq!(e["data"]["claim"], json!("/groups"), "{era:?}: {r}");
            assert_eq!(e["data"]["keyword"], json!("type"), "{era:?}: {r}");
            let message = e["message"].as_str().unwrap();
            assert!(message.contains("the caller's claim `groups`"), "{message}");
            assert!(!message.contains("banned"), "no claim value: {message}");
        }
        let list = c.request("tools/list", json!({}));
        assert_eq!(list["result"]["tools"], json!([]), "{era:?}: {list}");

        let mut c = bearer(&http, era, &banned);
        let r = c.resolve("restart", json!({"service": "web"}));
        assert_eq!(
            r["_meta"][DECISION]["reasons"],
            json!(["banned"]),
            "{era:?}: {r}"
        );
        let mut c = bearer(&http, era, &dev);
        let r = c.resolve("restart", json!({"service": "web"}));
        assert_eq!(r["_meta"][DECISION]["allowed"], json!(true), "{era:?}: {r}");
    }
    // Per era a refused resolve and call, and two resolves.
    let log = wait_for_lines(&keys.decision_log(), 8);
    let refused: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["caller"]["subject"] == json!("mallory"))
        .collect();
    assert_eq!(refused.len(), 4, "{log}");
    for line in &refused {
        assert!(
            line.to_string()
                .contains("does not match the catalog's caller schema"),
            "{line}"
        );
    }
    assert!(
        http.stderr().contains("caller refused"),
        "{}",
        http.stderr()
    );
}

/// Tools whose policies read the caller's `level` claim: `writes_level`
/// writes it (`json.marshal`), `compares_level` only compares it.
pub(crate) const LEVEL_TOOLS: &str = r#"tools:
  - name: writes_level
    description: writes the caller's level
    inputSchema: {type: object}
    annotations: {readOnlyHint: true}
    policy: tools.writes_level
    run: {cli: {program: "true"}}
  - name: compares_level
    description: compares the caller's level
    inputSchema: {type: object}
    annotations: {readOnlyHint: true}
    policy: tools.compares_level
    run: {cli: {program: "true"}}
"#;

/// Writes [`LEVEL_TOOLS`] and their policies into the catalog `dir`.
pub(crate) fn write_level_tools(dir: &std::path::Path) {
    std::fs::write(dir.join("level.yaml"), LEVEL_TOOLS).unwrap();
    std::fs::write(
        dir.join("writes_level.rego"),
        "package tools.writes_level\n\ndeny contains concat(\"\", [\"level \", json.marshal(input.caller.claims.level)]) if input.caller.claims.level > 50\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("compares_level.rego"),
        "package tools.compares_level\n\ndeny contains \"level over 50\" if input.caller.claims.level > 50\n",
    )
    .unwrap();
}

/// A token's claims are JSON text too: a claim spelled by hand (`1E2`,
/// `2.50`), which OPA given these claims writes back as spelled
/// (`json.marshal` answers `1E2`; asked through tests/opa/oracle.py), fails
/// closed where a policy writes it, as a request's own number does, and is
/// answered where it is only compared. Real tokens (EdDSA and ES256), every
/// era, resolve and call.
#[test]
fn claims_spelled_by_hand_are_refused_where_a_policy_writes_them() {
    let keys = Keys::new();
    write_level_tools(std::path::Path::new(&keys.catalog()));
    let http = keys.serve();
    // The level as the token spells it, and what writing it answers.
    let cases: &[(&str, Option<&str>)] = &[
        ("1E2", None),
        ("6.50e1", None),
        ("75.50", None),
        ("100.0", Some("level 100.0")),
        ("100", Some("level 100")),
        ("60.5", Some("level 60.5")),
    ];
    for (level, written) in cases {
        let payload = format!(
            r#"{{"sub": "alice", "iss": "{ISSUER}", "aud": "{AUDIENCE}", "iat": {}, "exp": {}, "level": {level}}}"#,
            now(),
            now() + 300
        );
        for (alg, kid) in [("EdDSA", "ed-1"), ("ES256", "ec-1")] {
            let token = keys.sign_text(&header(alg, Some(kid)), &payload);
            for era in Era::ALL {
                let mut c = bearer(&http, era, &token);
                let what = format!("{alg} {era:?} level {level}");
                for method in ["tools/resolve", "tools/call"] {
                    let r = c.request(method, json!({"name": "writes_level", "arguments": {}}));
                    match written {
                        Some(reason) => {
                            assert!(r.get("error").is_none(), "{what} {method}: {r}");
                            assert!(r.to_string().contains(reason), "{what} {method}: {r}");
                        }
                        None => {
                            // A resolve fails; a call's failure is its result.
                            let failed =
                                r.get("error").is_some() || r["result"]["isError"] == json!(true);
                            assert!(failed, "{what} {method}: {r}");
                            http.wait_for_stderr(&format!(
                                "json.marshal: the caller's claims spelled the number {level}"
                            ));
                        }
                    }
                    // Compared only: answered, as OPA answers.
                    let r = c.request(method, json!({"name": "compares_level", "arguments": {}}));
                    assert!(r.get("error").is_none(), "{what} {method}: {r}");
                    assert!(
                        r.to_string().contains("level over 50"),
                        "{what} {method}: {r}"
                    );
                }
            }
        }
    }
}
