//! OPA's own engine as the oracle of regent's Rego, for tests.
//!
//! regent promises that a policy means what it means in OPA. The only
//! authority on that is OPA itself, so the differential tests put each
//! question to OPA's Go engine too: `tests/opa/oracle.py`, run by the
//! interpreter named in `OPA_PYTHON` (a virtual environment with
//! `tests/opa/requirements.txt`; `.ci/run` makes one), answers JSON lines.
//! Without `OPA_PYTHON` the tests that need the oracle say `skipped` and
//! pass, as the upstream-server tests do; CI sets it and fails on a skip.
//!
//! This module only carries questions and answers. What counts as the same
//! answer, and what a difference means, is the tests' business.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// What OPA answered for one query.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Value(Value),
    Undefined,
    /// OPA's error (`eval_error: …`, `prepare_error: …`).
    Error(String),
}

/// A running oracle process.
pub struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The message a test prints when it cannot ask OPA.
pub const SKIPPED: &str = "skipped: OPA_PYTHON is not set (an interpreter with \
     tests/opa/requirements.txt installed, `pip install --ignore-requires-python`)";

impl Oracle {
    /// Starts the oracle with `$OPA_PYTHON`; `None` when it is unset.
    /// Panics when it is set but the oracle does not answer: a CI run that
    /// asked for OPA must not pass without it.
    pub fn start() -> Option<Oracle> {
        let python = std::env::var_os("OPA_PYTHON")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/opa/oracle.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python:?} {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut oracle = Oracle {
            child,
            stdin,
            stdout,
        };
        let v = oracle.ask(&json!({"version": true}));
        assert!(
            v.get("version").is_some(),
            "the OPA oracle did not start: {v}"
        );
        Some(oracle)
    }

    fn ask(&mut self, request: &Value) -> Value {
        let mut line = serde_json::to_string(request).expect("json");
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .expect("the OPA oracle stopped reading");
        let mut answer = String::new();
        let n = self
            .stdout
            .read_line(&mut answer)
            .expect("the OPA oracle's answer");
        assert!(n > 0, "the OPA oracle exited (its stderr says why)");
        serde_json::from_str(&answer).expect("the OPA oracle answers JSON")
    }

    /// A fresh OPA engine holding `modules` (`(path, text)`) and `data`.
    /// OPA compiles them at the first query; a module it refuses makes every
    /// answer an error.
    pub fn load(&mut self, modules: &[(String, String)], data: &Value) -> Result<(), String> {
        let v = self.ask(&json!({"load": {"modules": modules, "data": data}}));
        match v.get("error") {
            Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
            None => Ok(()),
        }
    }

    /// OPA's answer to each of `queries` (references such as
    /// `data.tools.x.annotations`) on `input`, numbers read as JSON numbers
    /// (so to 53 bits: see [`Oracle::eval_text`] for OPA's own digits).
    pub fn eval(&mut self, queries: &[&str], input: &Value) -> Vec<Answer> {
        self.eval_text(queries, input)
            .into_iter()
            .map(|a| match a {
                Answer::Value(v) => Answer::Value(untagged(v)),
                other => other,
            })
            .collect()
    }

    /// OPA's answer to each of `queries` on `input`, each number of a value
    /// kept as OPA wrote it, as `{"$opa_number": "0.33333333333333333334"}`:
    /// OPA computes on a number's text to 64 bits (issue 27), which a JSON
    /// number would round away. The input reaches OPA as JSON text with each
    /// double written as regent reads its number (`sprintf::number_text`:
    /// `1e-07`, `1.5e+21`), since OPA keeps an input number's text.
    pub fn eval_text(&mut self, queries: &[&str], input: &Value) -> Vec<Answer> {
        use serde::Serialize;
        struct Canonical;
        impl serde_json::ser::Formatter for Canonical {
            fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
                w.write_all(crate::opa_builtins::arith::double_text(v).as_bytes())
            }
        }
        let mut text = Vec::new();
        input
            .serialize(&mut serde_json::Serializer::with_formatter(
                &mut text, Canonical,
            ))
            .expect("json");
        let text = String::from_utf8(text).expect("json is utf-8");
        self.eval_sent(queries, &text)
    }

    /// OPA's answer to each of `queries` on the input whose JSON text is
    /// `text`, exactly as a client sent it (see [`client_text`]), each
    /// number of a value kept as OPA wrote it (as [`Oracle::eval_text`]).
    pub fn eval_sent(&mut self, queries: &[&str], text: &str) -> Vec<Answer> {
        let v = self.ask(&json!({"eval": queries, "input_text": text}));
        let Some(results) = v.get("results").and_then(Value::as_array) else {
            panic!("the OPA oracle refused an evaluation: {v}");
        };
        results
            .iter()
            .map(|r| {
                if let Some(v) = r.get("value") {
                    Answer::Value(v.clone())
                } else if let Some(e) = r.get("error") {
                    Answer::Error(e.as_str().unwrap_or_default().to_string())
                } else {
                    Answer::Undefined
                }
            })
            .collect()
    }

    /// The modules and data of a regorus engine, as the oracle loads them.
    pub fn load_engine(&mut self, engine: &regorus::Engine) -> Result<(), String> {
        let modules: Vec<(String, String)> = engine
            .get_policies()
            .expect("an engine's policies")
            .iter()
            .map(|s| (s.get_path().to_string(), s.get_contents().to_string()))
            .collect();
        let data = serde_json::to_value(engine.get_data()).expect("data is json");
        self.load(&modules, &data)
    }
}

/// `v` as JSON text the way a JavaScript client (`JSON.stringify`, the MCP
/// TypeScript SDK) writes it: a double in the shortest digits, with an
/// exponent only below 1e-6 or from 1e21 (`1e-7`, `0.00001`, `1.5e+21`),
/// an integral one as an integer (`1`), `-0` as `0`. OPA keeps an input
/// number's text as sent (issue 27), so the differential sends this text
/// to OPA and parses the same text for regent, as rmcp does.
pub fn client_text(v: &Value) -> String {
    use serde::Serialize;
    struct Js;
    impl serde_json::ser::Formatter for Js {
        fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
            let a = f.abs();
            let text = if f == 0.0 {
                "0".to_string()
            } else if !(1e-6..1e21).contains(&a) {
                let e = format!("{f:e}");
                match e.split_once('e') {
                    Some((m, x)) if !x.starts_with('-') => format!("{m}e+{x}"),
                    _ => e,
                }
            } else {
                format!("{f}")
            };
            w.write_all(text.as_bytes())
        }
    }
    let mut text = Vec::new();
    v.serialize(&mut serde_json::Serializer::with_formatter(&mut text, Js))
        .expect("json");
    String::from_utf8(text).expect("json is utf-8")
}

/// `v` as JSON text the way Python's `json.dumps` writes it: an integer as
/// its digits, a double as `repr` does, in the shortest digits with an
/// exponent below 1e-4 or from 1e16 (`1e-05`, `1e+16`, `1.5e+21`) and an
/// integral one with a fraction (`100.0`, `-0.0`). A corpus generated in
/// Python writes these (issue 27); OPA keeps the text as sent.
pub fn python_text(v: &Value) -> String {
    use serde::Serialize;
    struct Py;
    impl serde_json::ser::Formatter for Py {
        fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
            // Rust's `{:e}` is the shortest digits: `1e-5`, `1.5e21`.
            let e = format!("{f:e}");
            let (m, x) = e.split_once('e').expect("`{:e}` has an exponent");
            let x: i32 = x.parse().expect("an exponent");
            let text = if f != 0.0 && !(-4..16).contains(&x) {
                let sign = if x < 0 { '-' } else { '+' };
                format!("{m}e{sign}{:02}", x.abs())
            } else if f.fract() == 0.0 {
                format!("{f:.1}")
            } else {
                format!("{f}")
            };
            w.write_all(text.as_bytes())
        }
    }
    let mut text = Vec::new();
    v.serialize(&mut serde_json::Serializer::with_formatter(&mut text, Py))
        .expect("json");
    String::from_utf8(text).expect("json is utf-8")
}

/// `v` as JSON text with its numbers spelled by hand, as a person or a
/// template writes them and no JSON writer does (`2.50`, `2.5E0`, `25e-1`,
/// `7.00`, `7e0`, `-0`): the same values, other texts, which OPA keeps and
/// regent sees only in the request's text (`policy::spelled`). Integers
/// from 2^53 keep their digits (a fraction would make them doubles regent
/// cannot hold exactly, whose comparisons are not covered); about one
/// number in four keeps the text a JavaScript client writes. With `lost`,
/// about half the numbers get digits past a double's
/// (`0.5000000000000000000001`, `7.0000000000000000000001`): numbers
/// regent holds as the nearest double and OPA compares exactly.
pub fn hand_text(v: &Value, rng: &mut super::harness::Rng, lost: bool) -> String {
    use serde::Serialize;
    struct Hand<'r>(&'r mut super::harness::Rng, bool);
    /// The digits that take a number past what a double holds.
    const PAST: &str = "0000000000000000000001";
    impl Hand<'_> {
        fn integer<W: ?Sized + Write>(&mut self, w: &mut W, i: i128) -> std::io::Result<()> {
            if self.1 && self.0.below(2) == 0 {
                // Past a double at the 22nd digit (equal to `i` at OPA's 64
                // bits too), or at the 19th, which OPA's arithmetic shows
                // (`4.999999999999999999 * 3` is 14.999999999999999997).
                let text = match self.0.below(2) {
                    0 => format!("{i}.{PAST}"),
                    _ if i > 0 => format!("{}.999999999999999999", i - 1),
                    _ => format!("{i}.000000000000000001"),
                };
                return w.write_all(text.as_bytes());
            }
            let text = match self.0.below(5) {
                _ if i.unsigned_abs() >= 1 << 53 => i.to_string(),
                0 => format!("{i}.00"),
                1 => format!("{i}E0"),
                2 if i == 0 => "-0".to_string(),
                2 if i % 10 == 0 => format!("{}e1", i / 10),
                2 => format!("{i}.0e0"),
                3 => format!("{i}e+0"),
                _ => i.to_string(),
            };
            w.write_all(text.as_bytes())
        }
    }
    impl serde_json::ser::Formatter for Hand<'_> {
        fn write_i64<W: ?Sized + Write>(&mut self, w: &mut W, i: i64) -> std::io::Result<()> {
            self.integer(w, i128::from(i))
        }
        fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, i: u64) -> std::io::Result<()> {
            self.integer(w, i128::from(i))
        }
        fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
            let plain = client_text(&json!(f));
            if self.1 && !plain.contains(['e', 'E']) && self.0.below(2) == 0 {
                let text = match plain.contains('.') {
                    true => format!("{plain}{PAST}"),
                    false => format!("{plain}.{PAST}"),
                };
                return w.write_all(text.as_bytes());
            }
            // Rust's `{:e}` is the shortest digits: `2.5e0`, `1e-7`.
            let e = format!("{f:e}");
            let (m, x) = e.split_once('e').expect("`{:e}` has an exponent");
            let x: i32 = x.parse().expect("an exponent");
            let text = match self.0.below(4) {
                0 if plain.contains('.') && !plain.contains(['e', 'E']) => format!("{plain}0"),
                1 => format!("{m}E{x}"),
                2 => {
                    // The digits as an integer: `2.5` is `25e-1`.
                    let (sign, digits) = m.strip_prefix('-').map_or(("", m), |d| ("-", d));
                    let fraction = digits.split_once('.').map_or(0, |(_, f)| f.len());
                    let digits = digits.replace('.', "");
                    format!("{sign}{digits}e{}", x - fraction as i32)
                }
                _ => plain,
            };
            w.write_all(text.as_bytes())
        }
    }
    let mut text = Vec::new();
    v.serialize(&mut serde_json::Serializer::with_formatter(
        &mut text,
        Hand(rng, lost),
    ))
    .expect("json");
    String::from_utf8(text).expect("json is utf-8")
}

/// `v` with each integer a Python float would hold exactly (below 2^53)
/// made a double, as a generator that draws its numbers as floats has
/// them: written by [`python_text`], `1` is `1.0`.
pub fn as_python_floats(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) if i.unsigned_abs() < 1 << 53 => json!(i as f64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(as_python_floats).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, e)| (k.clone(), as_python_floats(e)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// Whether `a` and `b` are the same JSON value, numbers compared as numbers
/// (OPA writes `1.0` as `1`): what the differential tests count as the
/// same answer.
///
/// `b` may hold OPA's number texts ([`Oracle::eval_text`]): such a number
/// is the same as regent's when the two texts denote the same decimal
/// value, regent's text being the one `serde_json` writes for its number
/// (the shortest that reads back as the double, or the integer).
pub fn same(a: &Value, b: &Value) -> bool {
    if let Some(text) = number_text(b) {
        return match a {
            Value::Number(n) => match (decimal(&n.to_string()), decimal(text)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
            _ => false,
        };
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_i64(), y.as_i64()) {
                    (Some(i), Some(j)) => i == j,
                    _ => x.as_f64().is_some_and(|f| Some(f) == y.as_f64()),
                }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The text of a number of [`Oracle::eval_text`]'s answer.
fn number_text(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get("$opa_number")?.as_str(),
        _ => None,
    }
}

/// `v` with OPA's number texts read as JSON numbers.
fn untagged(v: Value) -> Value {
    if let Some(text) = number_text(&v) {
        return serde_json::from_str(text).unwrap_or(Value::Null);
    }
    match v {
        Value::Array(items) => Value::Array(items.into_iter().map(untagged).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, untagged(v))).collect()),
        v => v,
    }
}

/// The exact value a JSON number's text denotes, as `(digits, exponent)`
/// with no trailing zero in `digits` (so equal values are equal pairs).
fn decimal(text: &str) -> Option<(num_bigint::BigInt, i64)> {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: num_bigint::BigInt = format!("{int}{frac}").parse().ok()?;
    let mut exp = exp - frac.len() as i64;
    let ten = num_bigint::BigInt::from(10u8);
    if digits == num_bigint::BigInt::ZERO {
        return Some((digits, 0));
    }
    while (&digits % &ten) == num_bigint::BigInt::ZERO {
        digits /= &ten;
        exp += 1;
    }
    Some((digits, exp))
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_oracle_answers_as_opa() {
    let Some(mut opa) = Oracle::start() else {
        eprintln!("{SKIPPED}");
        return;
    };
    let rego = "package p\nc := count(input.s)\nd := sprintf(\"%d\", [-1])\n\
                e if indexof(input.s, \"\") > 0";
    opa.load(&[("p.rego".into(), rego.into())], &json!({}))
        .unwrap();
    let answers = opa.eval(
        &["data.p.c", "data.p.d", "data.p.e", "data.p.missing"],
        &json!({"s": "😀"}),
    );
    assert_eq!(answers[0], Answer::Value(json!(1)));
    assert_eq!(answers[1], Answer::Value(json!("-1")));
    assert!(
        matches!(&answers[2], Answer::Error(e) if e.contains("indexof")),
        "{answers:?}"
    );
    assert_eq!(answers[3], Answer::Undefined);
}

#[test]
fn python_spells_numbers_as_json_dumps_does() {
    let v = json!([
        1,
        100.0,
        -0.0,
        0.5,
        1e-5,
        0.0001,
        1e16,
        1.5e21,
        1234567.5,
        1.0 / 3.0
    ]);
    assert_eq!(
        python_text(&v),
        "[1,100.0,-0.0,0.5,1e-05,0.0001,1e+16,1.5e+21,1234567.5,0.3333333333333333]"
    );
    assert_eq!(
        python_text(&as_python_floats(
            &json!({"a": [0, -7, 9007199254740992i64]})
        )),
        r#"{"a":[0.0,-7.0,9007199254740992]}"#
    );
}
