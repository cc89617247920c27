//! `sprintf` against OPA's own engine: generated formats of generated
//! arguments, evaluated by regorus under `budget`; regent's answer must be
//! OPA's or a refusal (moved here from `opa_builtins/sprintf`'s tests).

use crate::differential::harness::Rng;
use crate::differential::opa::{Answer, Oracle, SKIPPED};
use crate::policy::budget::{self, Limits};
use crate::policy::engine as policy;
use serde_json::{Value as Json, json};

/// Generated calls compared with OPA.
const CASES: usize = 3000;

const TEXT: &[&str] = &["", "a", "Σ", " x ", "%%", "%", "é😀", "\n"];
const FLAGS: &[&str] = &["", "", "", "-", "+", "#", "0", " ", "-0", "+ ", "#0", "0+"];
const WIDTHS: &[&str] = &["", "", "", "5", "1", "12", "*", "[1]", "[2]", "[9]", "0"];
const PRECS: &[&str] = &["", "", "", ".", ".0", ".2", ".10", ".*", ".[1]*"];
const VERBS: &[&str] = &[
    "s", "v", "d", "q", "x", "X", "o", "b", "f", "e", "E", "g", "G", "t", "c", "T", "U", "F", "%",
    "!", "ä", "s", "v", "d", "q", "[1]d", "[2]s", "[0]v", "",
];
const STRINGS: &[&str] = &[
    "",
    "a",
    "ab c",
    "Σ",
    "é",
    "😀",
    "\u{7f}",
    "\u{0}",
    "\t",
    "\n",
    "\u{a0}",
    "\u{200d}",
    "\u{301}",
    "`",
    "\"",
    "\\",
    "'",
    "\u{feff}",
    "\u{10ffff}",
    "\u{e000}",
    "—",
    "€",
    "\u{3000}",
    "\u{1b}",
    "ǅ",
];

fn number(rng: &mut Rng) -> Json {
    let ns: &[Json] = &[
        json!(0),
        json!(1),
        json!(-1),
        json!(7),
        json!(65),
        json!(255),
        json!(-42),
        json!(9731),
        json!(1114112),
        json!(9223372036854775807i64),
        json!(9223372036854775808u64),
        json!(18446744073709551615u64),
        json!(-9223372036854775808i64),
        json!(0.5),
        json!(-2.25),
        json!(2.0),
        json!(-0.0),
        json!(1e300),
        json!(-1e300),
        json!(1e-7),
        json!(1.5e-5),
        json!(123456789.5),
        json!(0.1),
        json!(1e21),
        json!(1.5e300),
        json!(1e20),
        json!(9.5),
        json!(0.0001),
        json!(2e6),
        json!(1000000),
        json!(-1000001),
        json!(3),
    ];
    rng.pick(ns).clone()
}

fn string(rng: &mut Rng) -> String {
    (0..rng.below(3)).map(|_| *rng.pick(STRINGS)).collect()
}

fn value(rng: &mut Rng, depth: usize) -> Json {
    match rng.below(if depth > 1 { 6 } else { 9 }) {
        0 => Json::Null,
        1 => json!(rng.one_in(2)),
        2 | 3 => number(rng),
        4 | 5 => json!(string(rng)),
        6 | 7 => Json::Array((0..rng.below(3)).map(|_| value(rng, depth + 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(3) {
                m.insert(string(rng), value(rng, depth + 1));
            }
            Json::Object(m)
        }
    }
}

fn format(rng: &mut Rng) -> String {
    let mut f = String::new();
    for _ in 0..rng.below(4) {
        f.push_str(rng.pick::<&str>(TEXT));
        if rng.one_in(6) {
            continue;
        }
        f.push('%');
        f.push_str(rng.pick::<&str>(FLAGS));
        f.push_str(rng.pick::<&str>(WIDTHS));
        f.push_str(rng.pick::<&str>(PRECS));
        f.push_str(rng.pick::<&str>(VERBS));
    }
    f
}

const POLICY: &str = "package s\n\
    r := sprintf(input.f, [arg(i, y) | some i, y in input.a])\n\
    arg(i, y) := {x | some x in y} if i in input.sets\n\
    arg(i, y) := y if not i in input.sets\n";

/// Generated formats (every verb, flag, width, precision, argument
/// index) of generated arguments (every JSON type, big, fractional and
/// negative-zero numbers, control and non-ASCII characters, nested
/// values, sets built in Rego): regent's answer must be OPA's, or an
/// error for the shapes it refuses (counted, shown).
#[test]
fn sprintf_answers_as_opa_does() {
    let Some(mut opa) = Oracle::start() else {
        eprintln!("opa::{SKIPPED}");
        return;
    };
    let mut rng = Rng(0x5eed_5971);
    let limits = Limits::default();
    let mut engine = policy::new_engine(limits);
    engine.add_policy("s.rego".into(), POLICY.into()).unwrap();
    opa.load(&[("s.rego".into(), POLICY.into())], &json!({}))
        .unwrap();
    let (mut same, mut refused, mut differ) = (0, 0, Vec::new());
    for _ in 0..CASES {
        let n = rng.below(4);
        let args: Vec<Json> = (0..n)
            .map(|_| {
                if rng.one_in(3) {
                    number(&mut rng)
                } else {
                    value(&mut rng, 0)
                }
            })
            .collect();
        let sets: Vec<usize> = (0..n)
            .filter(|&i| args[i].is_array() && rng.one_in(3))
            .collect();
        let input = json!({"f": format(&mut rng), "a": args, "sets": sets});
        let want = opa.eval(&["data.s.r"], &input).remove(0);
        engine.set_input(regorus::Value::from(input.clone()));
        let got = {
            let _scope = budget::Scope::begin();
            engine.eval_rule("data.s.r".to_string())
        };
        match (&want, &got) {
            (Answer::Value(a), Ok(b)) if serde_json::to_value(b).ok().as_ref() == Some(a) => {
                same += 1
            }
            (Answer::Error(_), Err(_)) => same += 1,
            (_, Err(e)) if e.to_string().contains("not supported by regent") => {
                refused += 1;
                eprintln!("  refused {input}: opa {want:?}");
            }
            _ => differ.push(format!("{input}: opa {want:?} regent {got:?}")),
        }
    }
    for d in &differ {
        eprintln!("  {d}");
    }
    eprintln!(
        "sprintf: {CASES} calls, {same} as OPA, {refused} refused, {} differ",
        differ.len()
    );
    assert!(differ.is_empty(), "{} calls differ from OPA", differ.len());
}
