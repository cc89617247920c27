//! The scan and the refusals, on texts and values (a child file: it
//! installs `budget`'s guards on an engine, and `budget` calls `check`).

use super::*;

fn texts(s: &str) -> Vec<String> {
    scan(s.as_bytes()).map_or_else(Vec::new, |s| {
        s.texts().into_iter().map(str::to_string).collect()
    })
}

#[test]
fn canonical_numbers_are_not_kept() {
    for s in [
        r#"{"a": 1, "b": -2, "c": 0.5, "d": 100.0, "e": [3, 4.25], "f": "1.50 1E2 -0"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/resolve","params":{"name":"t","arguments":{"n":123456789012345678}}}"#,
        r#"{"a": 1e-7, "b": 0.00001, "c": 1e16, "d": "\"1.50\\", "e": 0.1}"#,
        "not json at all 12 ]",
    ] {
        assert_eq!(texts(s), Vec::<String>::new(), "{s}");
    }
}

#[test]
fn plain_decimals_are_known_without_parsing() {
    // Each answer of `written_so` is the parse's (`hand`) where it says
    // yes; where it says no, the parse decides.
    for t in [
        "1.5",
        "-0.5",
        "100.0",
        "0.0",
        "-0.0",
        "0.0001",
        "123456789.12345",
        "2.25",
    ] {
        assert!(written_so(t.as_bytes()), "{t}");
        assert_eq!(hand(t.as_bytes()), None, "{t}");
    }
    for t in [
        "1.50",
        "0.00001",
        "1234567890.1234567",
        "1e2",
        "1.5E0",
        "100.00",
        "0.10",
    ] {
        assert!(!written_so(t.as_bytes()), "{t}");
    }
    assert_eq!(hand(b"0.00001"), None, "refused whatever its spelling");
    assert!(hand(b"100.00").is_some());
}

#[test]
fn hand_spelled_numbers_are_kept_once() {
    assert_eq!(
        texts(r#"{"a": 1.50, "b": [1E2, -0, 1.50], "c": {"d": 100.00}, "e": "x\"1.5"}"#),
        ["1.50", "1E2", "-0", "100.00"]
    );
    assert_eq!(
        texts(r#"{"big": 123456789012345678901, "l": 0.1000000000000000000001}"#),
        ["123456789012345678901", "0.1000000000000000000001"]
    );
}

fn eval(rego: &str, input: &str) -> Result<String, String> {
    let mut engine = regorus::Engine::new();
    engine.set_strict_builtin_errors(true);
    crate::policy::budget::install(&mut engine, Default::default()).unwrap();
    engine
        .add_policy("p.rego".into(), format!("package p\n{rego}"))
        .unwrap();
    engine.set_input_json(input).unwrap();
    let spelled = scan(input.as_bytes());
    with(spelled.as_ref(), || {
        let _scope = crate::policy::budget::Scope::begin();
        engine
            .eval_rule("data.p.x".into())
            .map(|v| serde_json::to_string(&v).unwrap())
            .map_err(|e| e.to_string())
    })
}

#[test]
fn writing_a_hand_spelled_number_is_refused() {
    for (rego, input) in [
        ("x := json.marshal(input.a)", r#"{"a": 1.50}"#),
        ("x := json.marshal([input.a])", r#"{"a": 1E2}"#),
        (
            r#"x := sprintf("%v", [input.b])"#,
            r#"{"a": 1.00, "b": 1E0}"#,
        ),
        ("x := json.marshal({input.a: 1})", r#"{"a": -0}"#),
        (r#"x := sprintf("%v", [input.a])"#, r#"{"a": 1E2}"#),
        (r#"x := sprintf("%v", [[input.a]])"#, r#"{"a": 1.50}"#),
        (r#"x := sprintf("%d", [input.a])"#, r#"{"a": 2.0e0}"#),
        (r#"x := substring("abcdef", 0, input.a)"#, r#"{"a": 2E0}"#),
        (
            r#"x := array.slice([1, 2, 3], input.a, 2)"#,
            r#"{"a": 0e0}"#,
        ),
        ("x := yaml.marshal(input.a)", r#"{"a": 1.50}"#),
    ] {
        let err = eval(rego, input).expect_err(rego);
        assert!(
            err.contains("the request spelled the number"),
            "{rego}: {err}"
        );
    }
    let err = eval("x := json.marshal(input.a)", r#"{"a": 1.50}"#).unwrap_err();
    assert!(err.contains("1.50") && err.contains("(1.5)"), "{err}");
}

#[test]
fn the_rest_is_answered() {
    for (rego, input, want) in [
        ("x := input.a == 1.5", r#"{"a": 1.50}"#, "true"),
        ("x := input.a > 99", r#"{"a": 1E2}"#, "true"),
        (
            r#"x := sprintf("%v", [input.a])"#,
            r#"{"a": 1.50}"#,
            r#""1.5""#,
        ),
        (
            r#"x := sprintf("%d", [input.a])"#,
            r#"{"a": 100.00}"#,
            r#""100""#,
        ),
        (
            "x := json.marshal(input.b)",
            r#"{"a": 1.50, "b": 2.5}"#,
            r#""2.5""#,
        ),
        ("x := json.marshal(input.a)", r#"{"a": 1.5}"#, r#""1.5""#),
        (
            r#"x := sprintf("%v", [input.a])"#,
            r#"{"a": 1.5e0}"#,
            r#""1.5""#,
        ),
        (
            r#"x := substring("abcdef", 0, input.a)"#,
            r#"{"a": 2.00}"#,
            r#""ab""#,
        ),
        ("x := abs(input.a)", r#"{"a": -2.5e0}"#, "2.5"),
        (
            "x := json.marshal(input.a)",
            r#"{"a": 100.0}"#,
            r#""100.0""#,
        ),
    ] {
        assert_eq!(eval(rego, input).as_deref(), Ok(want), "{rego} {input}");
    }
}

#[test]
fn a_callers_claims_join_the_requests_numbers() {
    let claims = claim_numbers(br#"{"sub": "a", "level": 1E2, "ratio": 2.50, "n": 7, "x": 1.5}"#);
    assert_eq!(claims, vec!["1E2".into(), "2.50".into()] as Vec<Box<str>>);
    // Without a request's own numbers: the claims', no request text.
    let joined = Spelled::joined(None, &claims).unwrap();
    assert_eq!(joined.texts(), ["1E2", "2.50"]);
    assert_eq!(joined.text(), None);
    // With them: both, the request's text kept, a number in both once.
    let request = scan(br#"{"n": 1.50, "m": 2.50}"#);
    let joined = Spelled::joined(request.as_ref(), &claims).unwrap();
    assert_eq!(joined.texts(), ["1.50", "2.50", "1E2"]);
    assert_eq!(
        joined.text().map(|t| &t[..]),
        Some(&br#"{"n": 1.50, "m": 2.50}"#[..])
    );
    // No claims: the request's own, as they were.
    assert!(Arc::ptr_eq(
        &Spelled::joined(request.as_ref(), &[]).unwrap(),
        request.as_ref().unwrap()
    ));
    assert_eq!(Spelled::joined(None, &[]), None);
}

#[test]
fn current_is_the_numbers_of_the_request_being_evaluated() {
    assert_eq!(current(), None);
    let spelled = scan(b"[1.50]");
    with(spelled.as_ref(), || {
        assert_eq!(current().unwrap().texts(), ["1.50"]);
    });
    assert_eq!(current(), None);
}
