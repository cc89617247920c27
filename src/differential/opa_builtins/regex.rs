//! Hand-picked patterns where Go's RE2 and Rust's `regex` part ways (case
//! folding, flags, classes, escapes, braces, empty matches), put to OPA's
//! own engine beside the generated ones of `builtins_answer_as_opa_does`:
//! `regex.match`, `regex.replace` and `regex.split` must answer alike, or
//! regent refuse.
//! (Moved here from `opa_builtins/regex`'s tests.)

use crate::differential::opa::{Answer, Oracle, SKIPPED};
use crate::opa_builtins::regex;
use serde_json::json;

#[test]
fn listed_patterns_answer_as_opa_does() {
    let Some(mut opa) = Oracle::start() else {
        eprintln!("opa::{SKIPPED}");
        return;
    };
    let rego = "package b\nm := regex.match(input.p, input.s)\nr := regex.replace(input.s, input.p, \"<$0>\")\nsp := regex.split(input.p, input.s)\n";
    opa.load(&[("b.rego".into(), rego.into())], &json!({}))
        .unwrap();
    let cases = [
        (r"(?i)[a-c]", "B"),
        (r"(?i)\x{41}", "a"),
        (r"(?i)k", "\u{212a}"),
        (r"(?i)ß", "ẞ"),
        (r"(?s).", "\n"),
        (r".", "\n"),
        (r"(?m)a$", "a\nb"),
        (r"a$", "a\n"),
        (r"(?m)^b", "a\nb"),
        (r"(?U)a+", "aaa"),
        (r"(?U)a+?", "aaa"),
        (r"a{2,}?", "aaaa"),
        (r"[^a]", "\n"),
        (r"[\d-z]", "-"),
        (r"[a-\x{7a}]", "q"),
        (r"[\]]", "]"),
        (r"[]a]", "]"),
        (r"[^]a]", "b"),
        (r"\pN", "٣"),
        (r"\PL", "1"),
        (r"\p{^L}", "1"),
        (r"[\pL\d]", "é"),
        (r"[^\D]", "5"),
        (r"\Bé", "aé"),
        (r"x*", "abc"),
        (r"a|", "b"),
        (r"()", "x"),
        (r"(?:)", ""),
        (r"\x41", "A"),
        (r"\0", "\0"),
        (r"\07", "\u{7}"),
        (r"[[:word:]]+", "a_1"),
        (r"[[:^digit:]]", "a"),
        (r"\.", "."),
        (r"\-", "-"),
        (r"\#", "#"),
        (r"\ ", " "),
        (r"a\z", "a"),
        (r"\Aa", "a"),
        (r"(?i:A)b", "aB"),
        (r"(?-i)a", "A"),
        (r"(?i)(?-i:a)", "A"),
        (r"(?P<n>a)", "a"),
        (r"\Q*\E+", "**"),
        (r"\Qab", "ab"),
        (r"é+", "éé"),
        (r"[é-ë]", "ê"),
        (r"a{0}", "b"),
        (r"a{,}", "a{,}"),
        (r"{", "{"),
        (r"}", "}"),
        (r"a{1,2", "a{1,2"),
        (r"x{2}{3}", "xxxxxx"),
        (r"(a)\1", "aa"),
        (r"\C", "a"),
        (r"\z", ""),
        (r"\Z", ""),
        (r"(?i)Σ", "ς"),
        (r"(?i)[k]", "\u{212a}"),
        (r"[a-a]", "a"),
        (r"\v", "\u{b}"),
        (r"\cA", "x"),
        (r"\e", "x"),
        (r"\N{U+41}", "A"),
        (r"\pZ", "\u{2028}"),
        (r"\s", "\u{b}"),
        (r"\w", "é"),
    ];
    let mut bad = Vec::new();
    for (p, s) in cases {
        let input = json!({"p": p, "s": s});
        let want = opa.eval(&["data.b.m", "data.b.r", "data.b.sp"], &input);
        let args = [regorus::Value::from(p), regorus::Value::from(s)];
        let got_m = regex::regex_match(&args).map(|r| r.map(|v| serde_json::to_value(&v).unwrap()));
        let rargs = [
            regorus::Value::from(s),
            regorus::Value::from(p),
            regorus::Value::from("<$0>"),
        ];
        let got_r = regex::replace(&rargs).map(|r| r.map(|v| serde_json::to_value(&v).unwrap()));
        let got_s = regex::split(&args).map(|r| r.map(|v| serde_json::to_value(&v).unwrap()));
        for (w, g) in want.iter().zip([got_m, got_r, got_s]) {
            let ok = match (w, &g) {
                (Answer::Value(a), Some(Ok(b))) => a == b,
                (Answer::Error(_), Some(Err(_))) => true,
                (_, Some(Err(e))) if e.to_string().contains("not supported") => true,
                _ => false,
            };
            if !ok {
                bad.push(format!("{p:?} {s:?}: opa {w:?} regent {g:?}"));
            }
        }
    }
    for b in &bad {
        eprintln!("{b}");
    }
    assert!(bad.is_empty(), "{} answers differ from OPA", bad.len());
}
