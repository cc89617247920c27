//! Numbers of the data files spelled otherwise than regent writes them
//! (issue 27).
//!
//! OPA keeps a data number's text as the file spells it and writes that
//! text back: `json.marshal(data.limits.ratio)` is `1.50` for a file that
//! says `1.50`, `1e2` for `1e2`, `-0` for `-0`. regent reads the file with
//! `serde_json`, which keeps the number only (`1.5`, `100.0`, `-0.0`), so
//! such a number is reported at its place in the file
//! (`source::json_numbers`), with what OPA would write and how to spell it
//! portably (the text regent writes: the integer, or the shortest float):
//!
//! - an error when regent cannot hold the number at all
//!   (`0.1000000000000000000001`, a 30-digit integer): comparisons would
//!   differ too;
//! - an error when a policy of the catalog calls a builtin that writes a
//!   number's text ([`TEXT_BUILTINS`]): any of them could be handed the
//!   number, and the data is in every engine, so the catalog is refused
//!   rather than answer another text;
//! - an error for an integer spelled with an exponent (`2E0`, `1e3`) when a
//!   policy of the catalog reads an integer from a value it cannot see
//!   ([`INTEGER_BUILTINS`], or an index that is not a literal): OPA never
//!   reads such a text as an integer (`substring(s, 0, data.n)` is a type
//!   error, `arr[data.n]` undefined), where regent reads the integral value
//!   as one and answers;
//! - a warning otherwise: nothing can show the text, so regent answers as
//!   OPA does, until a policy writes numbers.
//!
//! Numbers regent refuses to write whatever their spelling (below 1e-4,
//! from 1e16 to 1e21: `opa_builtins::sprintf::text_unknown`) are not
//! reported: a policy writing one fails closed at evaluation. What regent
//! writes, and whether two texts are the same number, is `opa_builtins`';
//! where the numbers are, `source::json_numbers`'.

use super::PolicyModule;
use super::lint::{Callee, aliases, resolve_call, user_functions};
use super::visit::walk_rule;
use super::{path_of, root_span, span_location};
use crate::diag::{Diagnostic, Location};
use crate::opa_builtins::numbers::{Spelling, spelling};
use crate::source::DataSource;
use regorus::unstable::Expr;

/// Builtins that write a number's text (as OPA holds it) into a string.
pub const TEXT_BUILTINS: &[&str] = &[
    "json.marshal",
    "json.marshal_with_options",
    "yaml.marshal",
    "sprintf",
    "strings.render_template",
    "json.verify_schema",
    "json.match_schema",
];

/// Builtins that pick, order, find or merge values (`max`, `sort`,
/// `object.get`, `union`): given two numbers that are one double to regent
/// and two exact decimals to OPA (`0.1000000000000000000001` and `0.1`),
/// OPA tells them apart where regent cannot. `policy::spelled` refuses
/// such a call; `rego/portability` warns where a request's number may
/// meet one. Builtins that only count, test or pass values on (`count`,
/// `is_number`, `array.concat`) are not here: the two numbers reach an
/// answer or a comparison, which is judged where it is.
pub const MEETS: &[&str] = &[
    "max",
    "min",
    "sort",
    "object.get",
    "object.union",
    "object.union_n",
    "object.remove",
    "object.filter",
    "object.subset",
    "json.filter",
    "json.remove",
    "union",
    "intersection",
];

/// Builtins that read an operand as an integer as OPA does
/// (`builtins.IntOperand`): given an integer spelled with an exponent
/// (`2E0`) they answer an error in OPA (`must be integer number`;
/// `format_int`'s base: `must be one of {2, 8, 10, 16}`), whatever its
/// value. Asked of OPA with the data and the input as JSON text, every
/// builtin of regorus' table with a number operand: `numbers.range`,
/// `numbers.range_step`, `bits.*`, `round`, `abs`, `format_int`'s number,
/// `time.*`'s nanoseconds, `json.filter`/`json.remove` paths accept it;
/// `rand.intn` refuses it too, and regent refuses `rand.intn` at load
/// (`lint`). `json.patch` refuses it in a path too (`invalid number type
/// for indexing`), and so does regent without being listed: it holds such
/// a number as a double, which regorus' `json.patch` never indexes with
/// (`opa_builtins::json_patch`). With the operands (from 0) each reads so. One list for the data files' numbers ([`check`]) and the
/// request's: `policy::budget` shadows each of these with an extension,
/// so that `policy::spelled::check` sees every call of them in regorus'
/// interpreter too, not only those regent answers itself.
pub const INTEGER_BUILTINS: &[(&str, &[usize])] = &[
    ("substring", &[1, 2]),
    ("array.slice", &[1, 2]),
    ("regex.find_n", &[2]),
    ("regex.find_all_string_submatch_n", &[2]),
    ("time.add_date", &[1, 2, 3]),
    ("format_int", &[1]),
];

/// The operands (from 0) that `name` reads as integers as OPA does
/// ([`INTEGER_BUILTINS`]); none for any other builtin.
pub fn integer_operands(name: &str) -> &'static [usize] {
    INTEGER_BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, at)| at)
}

/// What a policy does with a number that [`first_reader`] looks for.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    /// Writes its text ([`TEXT_BUILTINS`]).
    Text,
    /// Reads it as an integer ([`INTEGER_BUILTINS`], an index).
    Integer,
}

/// Where `modules` first index with a key that is not a literal, as
/// `file:line:column`: the fact `policy::EnginePool::with_computed_index`
/// keeps for a tool, found once at load by the walk [`check`] uses. An
/// input number spelled with an exponent (`2E0`) could be such a key, and
/// regorus, which indexes an array by it as by the integer where OPA's
/// answer is undefined, cannot be watched doing it.
pub fn computed_index<'m>(modules: impl IntoIterator<Item = &'m PolicyModule>) -> Option<String> {
    for m in modules {
        for rule in &m.module.policy {
            let mut found = None;
            walk_rule(rule, &mut |e| {
                if found.is_some() {
                    return false;
                }
                if let Expr::RefBrack { index, .. } = e
                    && computed_key(index)
                {
                    found = Some(span_location(root_span(index)));
                    return false;
                }
                true
            });
            if let Some(at) = found {
                return Some(at.to_string());
            }
        }
    }
    None
}

/// Whether an index could be a number of the request or the data: neither
/// a literal of the policy nor `_`, which iterates (`x[_]`).
fn computed_key(index: &Expr) -> bool {
    !literal_key(index) && index.span().text() != "_"
}

/// Whether an index is a literal of the policy (`x["k"]`, `arr[2]`): never
/// a number of the request.
fn literal_key(index: &Expr) -> bool {
    matches!(
        index,
        Expr::String { .. } | Expr::RawString { .. } | Expr::Number { .. } | Expr::Bool { .. }
    )
}

/// The diagnostics for `data`'s numbers, given every policy module of the
/// catalog.
pub fn check(data: &[DataSource], modules: &[PolicyModule]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut writer: Option<Option<(String, Location)>> = None;
    let mut integer_reader: Option<Option<(String, Location)>> = None;
    for file in data {
        for n in &file.numbers {
            let Ok(parsed) = serde_json::from_str::<serde_json::Value>(&n.text) else {
                continue;
            };
            let held = regorus::Value::from(parsed);
            let at = Location::new(&file.path, n.line, n.column);
            let text = &n.text;
            match spelling(text, &held) {
                Spelling::Kept => {}
                Spelling::Lost(ours) => out.push(
                    Diagnostic::error(
                        "opa-data-number",
                        at,
                        format!(
                            "regent cannot hold the number {text} (the nearest is {ours}), which \
                             OPA keeps as written, compares and computes with"
                        ),
                    )
                    .with_help(
                        "keep to numbers of at most 15 significant digits, or write it as a \
                         string",
                    ),
                ),
                Spelling::Respelled(ours) => {
                    let writer = writer.get_or_insert_with(|| first_reader(modules, Reads::Text));
                    let integral = matches!(&held, regorus::Value::Number(n)
                        if n.as_f64().is_some_and(|f| f.fract() == 0.0));
                    if writer.is_none()
                        && integral
                        && text.contains(['e', 'E'])
                        && !ours.contains('e')
                        && let Some((what, place)) = integer_reader
                            .get_or_insert_with(|| first_reader(modules, Reads::Integer))
                    {
                        let int = ours.trim_end_matches(".0");
                        out.push(
                            Diagnostic::error(
                                "opa-data-number",
                                at,
                                format!(
                                    "this integer is spelled {text}, with an exponent, which OPA \
                                     never reads as an integer (`substring`, `array.slice` answer \
                                     `must be integer number`, an array index with it is \
                                     undefined) where regent reads it as the integer {int}; \
                                     the catalog \
                                     {what} ({place}), so regent refuses it"
                                ),
                            )
                            .with_help(format!("spell it {int}, without an exponent")),
                        );
                        continue;
                    }
                    let said = format!(
                        "this number is spelled {text}, which OPA keeps and writes back in \
                         json.marshal and sprintf, where regent would write {ours}"
                    );
                    let help = format!("spell it {ours}, as regent writes it");
                    out.push(match writer {
                        Some((name, place)) => Diagnostic::error(
                            "opa-data-number",
                            at,
                            format!(
                                "{said}; the catalog {name} ({place}), so regent \
                                 refuses it"
                            ),
                        )
                        .with_help(help),
                        None => Diagnostic::warning("opa-data-number", at, said).with_help(
                            format!("{help}: no policy writes numbers now, but one that does would be refused"),
                        ),
                    });
                }
            }
        }
    }
    out
}

/// The first place in `modules` that `reads` a number, what it does there
/// (`` calls `sprintf` ``, `indexes with a computed key`) and where: a call
/// of a [`TEXT_BUILTINS`] or an [`INTEGER_BUILTINS`] builtin, or for an
/// integer, an index that is not a literal (it could be the number).
fn first_reader(modules: &[PolicyModule], reads: Reads) -> Option<(String, Location)> {
    let functions = user_functions(modules);
    for m in modules {
        let aliases = aliases(m);
        for rule in &m.module.policy {
            let mut found = None;
            walk_rule(rule, &mut |e| {
                if found.is_some() {
                    return false;
                }
                let listed = |name: &str| match reads {
                    Reads::Text => TEXT_BUILTINS.contains(&name),
                    Reads::Integer => !integer_operands(name).is_empty(),
                };
                match e {
                    Expr::Call { fcn, .. } => {
                        let written = path_of(fcn);
                        // An unknown function is `lint`'s error; one this
                        // build of regorus lacks is still a reader here.
                        if let Callee::Builtin(name, _) | Callee::Unknown(name) =
                            resolve_call(&written, &m.package, &aliases, &functions)
                            && listed(name.as_str())
                        {
                            found =
                                Some((format!("calls `{name}`"), span_location(root_span(fcn))));
                            return false;
                        }
                    }
                    Expr::RefBrack { index, .. }
                        if reads == Reads::Integer && computed_key(index) =>
                    {
                        found = Some((
                            "indexes with a computed key".into(),
                            span_location(index.span()),
                        ));
                        return false;
                    }
                    _ => {}
                }
                true
            });
            if found.is_some() {
                return found;
            }
        }
    }
    None
}
