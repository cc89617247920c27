//! The differential tests of `policy::builtins`: each `fast` answer against
//! regorus' through the same call path as a policy's. They sit in `catalog`
//! because the generated cases use `catalog::differential::Rng`, which
//! `policy` must not know.

use serde_json::json;

use regorus::Value;

use crate::differential::harness::Rng;
use crate::policy::budget::{self, Limits};
use crate::policy::builtins::Fast;

fn v(j: serde_json::Value) -> Value {
    Value::from_json_str(&j.to_string()).unwrap()
}

/// The answer without this module, through the same call path as a
/// policy's: OPA's where `opa_builtins` has it, regorus' otherwise.
fn regorus(name: &str, args: &[Value]) -> Option<Value> {
    let (&key, &fcn) = regorus::unstable::BUILTINS.get_key_value(name).unwrap();
    let compat = crate::opa_builtins::of(name);
    budget::call(key, fcn, None, compat, args, &Limits::default(), |_| None).ok()
}

/// This module's answer, every argument a constant as a literal is.
fn fast(name: &str, args: &[Value]) -> Option<Value> {
    let consts: Vec<Option<&Value>> = args.iter().map(Some).collect();
    Fast::of(name, &consts).and_then(|f| f.answer(args))
}

/// Each case where `fast` answers must equal regorus' answer; the cases
/// where it declines are listed so a change to them is seen.
#[track_caller]
fn check(name: &str, args: &[Value], answers: bool) {
    let fast = fast(name, args);
    assert_eq!(fast.is_some(), answers, "{name}{args:?}: answered {fast:?}");
    if let Some(fast) = fast {
        assert_eq!(Some(fast), regorus(name, args), "{name}{args:?}");
    }
}

#[test]
fn split_equals_regorus() {
    for (s, sep) in [
        ("notes/1/a.txt", "/"),
        ("/abs/", "/"),
        ("", "/"),
        ("///", "/"),
        ("a::b::", "::"),
        ("é/ü/", "/"),
        ("aéb", "é"),
        ("no separator", ","),
    ] {
        check("split", &[v(json!(s)), v(json!(sep))], true);
    }
    check("split", &[v(json!("abc")), v(json!(""))], false);
    check("split", &[v(json!(1)), v(json!("/"))], false);
}

#[test]
fn sprintf_equals_regorus() {
    let answered = [
        ("%s %q under the root?", json!(["delete", "a/b.txt"])),
        ("%q", json!(["say \"hi\" \\ there"])),
        ("%q", json!([""])),
        ("100%% %s", json!(["done"])),
        ("%v|%s|%v|%v", json!([true, null, -2, 7])),
        ("%d and %d", json!([0, 18446744073709551615u64])),
        ("%d", json!([4.0])),
        ("no verbs", json!([])),
        ("ünïcode %s", json!(["ß"])),
    ];
    for (f, args) in answered {
        check("sprintf", &[v(json!(f)), v(args)], true);
    }
    let declined = [
        // Not the fast path's to answer: regorus' escapes or errors.
        ("%q", json!(["tab\there"])),
        ("%q", json!(["é"])),
        ("%d", json!([-0.0])),
        ("%s", json!([1])),
        ("%v", json!([3.5])),
        ("%d", json!([18446744073709551616.0f64])),
        ("%d", json!([1.5])),
        ("%v", json!([1e16])),
        ("%s", json!([["a"]])),
        ("%s", json!([{"a": 1}])),
        ("%s %s", json!(["one"])),
        ("%s", json!(["one", "two"])),
        ("%5s", json!(["w"])),
        ("%x", json!([255])),
        ("%", json!([])),
    ];
    for (f, args) in declined {
        check("sprintf", &[v(json!(f)), v(args)], false);
    }
    check(
        "sprintf",
        &[v(json!("%s")), v(json!("not an array"))],
        false,
    );
}

#[test]
fn regex_match_equals_regorus() {
    let pattern = "^[A-Za-z0-9_./-]+$";
    for s in ["notes/a.txt", "", "a b", "é", "../x", "x\n"] {
        check("regex.match", &[v(json!(pattern)), v(json!(s))], true);
    }
    check("regex.match", &[v(json!(pattern)), v(json!(7))], false);
    // Not compiled here, so every call is regorus': an invalid pattern
    // and one past the size limit (regorus' errors).
    check("regex.match", &[v(json!("(")), v(json!("a"))], false);
    check(
        "regex.match",
        &[v(json!("a{1000}{1000}")), v(json!("a"))],
        false,
    );
    assert!(regorus("regex.match", &[v(json!("a{1000}{1000}")), v(json!("a"))]).is_none());
}

#[test]
fn glob_match_equals_regorus() {
    let answered = [
        (".git/**", json!(["/"]), "notes/.git/x"),
        (".git/**", json!(["/"]), ".git/config"),
        ("*.github.com", json!([]), "api.github.com"),
        ("*.github.com", json!([]), "a.b.github.com"),
        ("*.github.com", json!(["."]), "evil.com/.github.com"),
        ("**.example.org", json!(null), "a/b.example.org"),
        ("a:*", json!([":"]), "a:b"),
        ("a:*", json!([":"]), "a:b:c"),
        ("[a-c]?", json!(null), "b/"),
        ("*", json!(["é"]), "a"),
        ("*", json!(["."]), "a\u{0}b"),
    ];
    for (pattern, delimiters, s) in answered {
        check(
            "glob.match",
            &[v(json!(pattern)), v(delimiters), v(json!(s))],
            true,
        );
    }
    let declined = [
        // OPA's errors: a delimiter that is not one character, a
        // non-string one, delimiters that are not an array, an invalid
        // glob, a non-string input.
        ("a*", json!(["", "-"]), json!("a-b")),
        ("*", json!([1]), json!("a")),
        ("*", json!("."), json!("a")),
        ("[", json!(null), json!("a")),
        ("*", json!(null), json!(3)),
    ];
    for (pattern, delimiters, s) in declined {
        check(
            "glob.match",
            &[v(json!(pattern)), v(delimiters), v(s)],
            false,
        );
    }
}

/// Strings of hostile pieces, formats of every verb regorus knows and
/// the ones answered here, patterns valid and not: whatever `fast`
/// answers must be regorus' answer. A fixed seed keeps a failure reproducible.
#[test]
fn generated_calls_equal_regorus() {
    const PIECES: &[&str] = &[
        "/", "//", "..", ".", "~", "\\", "\"", "%", "%s", "%q", "%v", "%d", "%%", "%5s", "%x", "é",
        "ß", "😀", "\u{7f}", "\t", "\n", "\u{0}", "\u{7}", " ", "a", "::", ":", "*", "",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut answered, mut declined) = (0, 0);
    for _ in 0..2000 {
        let mut text =
            |max: usize| -> String { (0..rng.below(max + 1)).map(|_| *rng.pick(PIECES)).collect() };
        let (s, sep, format) = (text(6), text(2), text(5));
        let count = text(2).len() % 4;
        let values: Vec<serde_json::Value> = (0..3)
            .map(|i| match i {
                0 => json!(text(4)),
                1 => json!(text(1).len() as i64 - 1),
                _ => json!(text(1).is_empty()),
            })
            .take(count)
            .collect();
        for (name, args) in [
            ("split", vec![v(json!(s)), v(json!(sep))]),
            ("sprintf", vec![v(json!(format)), v(json!(values))]),
            ("regex.match", vec![v(json!(sep)), v(json!(s))]),
            (
                "glob.match",
                vec![v(json!(format)), v(json!([sep])), v(json!(s))],
            ),
            (
                "glob.match",
                vec![v(json!(sep)), v(json!(null)), v(json!(s))],
            ),
        ] {
            match fast(name, &args) {
                Some(fast) => {
                    answered += 1;
                    assert_eq!(Some(fast), regorus(name, &args), "{name}{args:?}");
                }
                None => declined += 1,
            }
        }
    }
    eprintln!("{answered} answered, {declined} declined");
    // Both paths must have been taken often, or the test shows nothing.
    assert!(
        answered > 3000 && declined > 1000,
        "{answered} answered, {declined} declined"
    );
}
