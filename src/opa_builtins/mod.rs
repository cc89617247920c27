//! OPA's answers for the builtins where regorus' differ.
//!
//! regent promises that a policy means what it means in OPA (issue 27), but
//! its Rego runs on regorus, whose builtins answer some inputs differently:
//! `count("😀")` is 2 (bytes) where OPA counts runes, `upper("ß")` is `SS`
//! where Go maps rune by rune, `indexof(s, "")` answers where OPA raises an
//! error. Each builtin here has a function that returns OPA's answer (value
//! or error) for the argument shapes where regorus' differs, and `None`
//! everywhere else, so that regorus' own builtin runs and keeps its own
//! answers and errors for the shapes that already agree.
//!
//! `budget::call`, the one path by which both evaluators call a builtin,
//! asks [`of`]'s function after the memory charge and any native fast answer
//! (`builtins`, which declines every shape decided here, or answers it with
//! this module's own compiled pattern: `glob`, `regex`) and before
//! regorus' builtin; `budget::install` shadows every builtin of [`TABLE`]
//! with an extension, so regorus' interpreter reaches it too.
//!
//! The semantics are OPA v1's (`topdown/*.go`), observed through OPA's own
//! engine in the differential test below (`opa::Oracle`). A shape whose
//! answer regent does not reproduce for certain is refused, an error that
//! says `not supported by regent` (fail closed), never guessed. `numbers`
//! also holds `%`, an operator `native` evaluates with it. This module knows
//! regorus' values; it knows nothing of budgets, engines or the syntax tree.

use regorus::Value;

pub(super) mod arith;
mod base64;
mod bits;
mod encoding;
pub(super) mod glob;
mod json;
mod json_patch;
mod net;
mod query;
mod rfc3339;
mod schema;
mod semver;
pub(crate) use json::{Layout, layout as marshal_layout};
pub(super) mod numbers;
pub(crate) mod order;
pub(super) mod regex;
mod sprintf;
mod strings;
mod units;
mod yaml;

/// OPA's answer for a call of one builtin: `None` when regorus' own is.
pub(super) type Compat = fn(&[Value]) -> Option<anyhow::Result<Value>>;

/// The builtins whose regorus answers differ from OPA's on some inputs.
pub(super) const TABLE: &[(&str, Compat)] = &[
    ("count", count),
    ("upper", upper),
    ("lower", lower),
    ("indexof", |a| empty_search("indexof", a)),
    ("indexof_n", |a| empty_search("indexof_n", a)),
    ("strings.count", strings_count),
    ("substring", |a| int_operands("substring", a, &[1, 2])),
    ("array.slice", |a| int_operands("array.slice", a, &[1, 2])),
    ("to_number", numbers::to_number),
    ("sum", numbers::sum),
    ("product", numbers::product),
    ("round", |a| numbers::rounding("round", a)),
    ("ceil", |a| numbers::rounding("ceil", a)),
    ("floor", |a| numbers::rounding("floor", a)),
    ("abs", |a| numbers::rounding("abs", a)),
    ("numbers.range_step", numbers::range_step),
    ("replace", replace),
    ("strings.replace_n", strings::replace_n),
    ("units.parse_bytes", units::parse_bytes),
    ("units.parse", units::parse),
    ("format_int", numbers::format_int),
    ("json.marshal", json::marshal),
    ("json.marshal_with_options", json::marshal_with_options),
    ("json.unmarshal", json::unmarshal),
    ("json.patch", json_patch::patch),
    ("yaml.unmarshal", yaml::unmarshal),
    ("json.verify_schema", schema::verify_schema),
    ("json.match_schema", schema::match_schema),
    ("glob.match", glob::glob_match),
    ("regex.match", regex::regex_match),
    ("regex.is_valid", regex::is_valid),
    ("regex.split", regex::split),
    ("regex.find_n", regex::find_n),
    ("regex.find_all_string_submatch_n", |a| {
        int_operands("regex.find_all_string_submatch_n", a, &[2])
    }),
    ("regex.replace", regex::replace),
    ("urlquery.encode", encoding::urlquery_encode),
    ("urlquery.encode_object", encoding::urlquery_encode_object),
    ("urlquery.decode", encoding::urlquery_decode),
    ("json.is_valid", encoding::json_is_valid),
    ("yaml.is_valid", encoding::yaml_is_valid),
    ("semver.is_valid", semver::is_valid),
    ("semver.compare", semver::compare),
    ("net.cidr_contains", net::cidr_contains),
    ("net.cidr_is_valid", net::cidr_is_valid),
    ("net.cidr_expand", net::cidr_expand),
    ("time.parse_rfc3339_ns", rfc3339::parse_rfc3339_ns),
    ("base64.decode", base64::decode),
    ("bits.and", bits::and),
    ("bits.or", bits::or),
    ("bits.xor", bits::xor),
    ("bits.negate", bits::negate),
    ("bits.lsh", bits::lsh),
    ("bits.rsh", bits::rsh),
    ("urlquery.decode_object", query::urlquery_decode_object),
    ("sprintf", sprintf::sprintf),
    ("sort", order::sort),
    ("max", order::max),
    ("min", order::min),
];

/// OPA's error: lowercase, prefixed with the builtin's name, as OPA's are.
pub(super) fn error(name: &str, message: impl std::fmt::Display) -> Option<anyhow::Result<Value>> {
    Some(Err(anyhow::anyhow!("{name}: {message}")))
}

/// `count(s)` counts runes in OPA (`utf8.RuneCountInString`), bytes in
/// regorus; collections count alike.
fn count(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    // ASCII (the common case) counts alike: regorus' answer, no walk.
    if s.is_ascii() {
        return None;
    }
    Some(Ok(Value::from(s.chars().count() as u64)))
}

/// Go's `strings.ToUpper` maps each rune on its own with the *simple* case
/// mapping (`unicode.ToUpper`): `ß`, `ŉ`, `ﬁ` stay as they are, where Rust's
/// full mapping (regorus) writes `SS`, `ʼN`, `FI`.
fn upper(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    if s.is_ascii() {
        return None;
    }
    Some(Ok(Value::from(
        s.chars().map(simple_upper).collect::<String>(),
    )))
}

fn simple_upper(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        // A full mapping of several characters: the simple mapping is the
        // character itself, except for Greek letters with ypogegrammeni,
        // whose simple upper case is the titlecase letter with
        // prosgegrammeni.
        _ => match c as u32 {
            0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => {
                char::from_u32(c as u32 + 8).unwrap_or(c)
            }
            0x1FB3 => '\u{1FBC}',
            0x1FC3 => '\u{1FCC}',
            0x1FF3 => '\u{1FFC}',
            _ => c,
        },
    }
}

/// Go's `strings.ToLower`, rune by rune (`unicode.ToLower`): `İ` becomes
/// `i` (regorus: `i` and a combining dot) and a final `Σ` becomes `σ`
/// (regorus, as Rust's `str::to_lowercase`: `ς`).
fn lower(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    if s.is_ascii() {
        return None;
    }
    Some(Ok(Value::from(go_lower(s))))
}

/// Go's `strings.ToLower`, rune by rune (`unicode.ToLower`, the simple
/// mapping): also what `units` lowers a unit with.
pub(super) fn go_lower(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut low = c.to_lowercase();
            match (low.next(), low.next()) {
                (Some(l), None) => l,
                // Only `İ` (U+0130) lowers to several characters; its simple
                // mapping is `i`.
                _ if c == '\u{130}' => 'i',
                _ => c,
            }
        })
        .collect()
}

/// OPA refuses to search for the empty string; regorus answers 0 (or -1).
fn empty_search(name: &str, a: &[Value]) -> Option<anyhow::Result<Value>> {
    match (&a[0], &a[1]) {
        (Value::String(_), Value::String(n)) if n.is_empty() => {
            error(name, "empty search character")
        }
        _ => None,
    }
}

/// `strings.count(s, "")` is Go's `strings.Count`: one more than the runes
/// of `s`. regorus panics on it (a zero window size).
fn strings_count(a: &[Value]) -> Option<anyhow::Result<Value>> {
    match (&a[0], &a[1]) {
        (Value::String(s), Value::String(n)) if n.is_empty() => {
            Some(Ok(Value::from(s.chars().count() as u64 + 1)))
        }
        _ => None,
    }
}

/// OPA reads offsets and lengths as Go integers (`builtins.IntOperand`): a
/// fraction, or an integer past 64 bits, is a type error, where regorus
/// answers `""` or undefined.
fn int_operands(name: &str, a: &[Value], at: &[usize]) -> Option<anyhow::Result<Value>> {
    for &i in at {
        if let Value::Number(n) = &a[i]
            && n.as_i64().is_none()
        {
            return error(
                name,
                format!(
                    "operand {} must be integer number but got floating-point number",
                    i + 1
                ),
            );
        }
    }
    None
}

/// `replace(s, "", new)`: Go's replacer inserts `new` around every *byte*
/// of `s`, so a multi-byte character comes out as invalid UTF-8, which OPA
/// writes as one U+FFFD per byte. regorus inserts around characters.
fn replace(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(s), Value::String(old), Value::String(new)) = (&a[0], &a[1], &a[2]) else {
        return None;
    };
    // Go's `strings.Replace` returns `s` as it is when `old == new`.
    if !old.is_empty() || new.is_empty() || s.is_ascii() {
        return None;
    }
    let mut out = String::with_capacity((s.len() + 1) * (new.len() + 3));
    for c in s.chars() {
        for _ in 0..c.len_utf8() {
            out.push_str(new);
            out.push(if c.is_ascii() { c } else { '\u{fffd}' });
        }
    }
    out.push_str(new);
    Some(Ok(Value::from(out)))
}

/// OPA's error for a call of builtin `name` on `args` where regorus
/// answered `v` (`json.patch`: undefined, a number key); `None` where
/// regorus' answer is OPA's. `budget::call` asks it after regorus' own
/// builtin.
pub(super) fn after(name: &str, args: &[Value], v: &Value) -> Option<anyhow::Error> {
    match name {
        "json.patch" => json_patch::after(args, v),
        _ => None,
    }
}

/// The OPA-compatible answer of builtin `name`, if regorus' differs somewhere.
pub(super) fn of(name: &str) -> Option<Compat> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}
