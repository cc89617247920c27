//! Mistakes regorus only reports when a faulty expression happens to run:
//! unknown functions, calls with the wrong number of arguments, and
//! builtins whose answer changes from call to call; each builtin call is
//! also handed to [`super::input_sized`], and each `confirm` value to
//! [`super::confirm`].
//!
//! Calls are resolved as regorus resolves them (this package's functions,
//! imported and `data.` paths, then builtins); [`resolve_call`] is shared
//! with [`super::recursion`], which finds cycles between rules. References
//! that can never be defined are [`super::refs`]'s, unbound variables
//! [`super::safety`]'s.

use std::collections::{BTreeSet, HashMap};

use regorus::unstable::{BUILTINS, Expr, Rule, RuleHead};

use super::input_sized::{input_sized, tainted_vars};
use super::visit::{walk_expr, walk_rule};
use super::{PolicyModule, head, path_of, root_span, span_location};
use crate::diag::Diagnostic;

/// Builtins whose answer changes from call to call; a resolution must not
/// depend on them (it must be deterministic).
const NONDETERMINISTIC: &[&str] = &[
    "time.now_ns",
    "rand.intn",
    "uuid.rfc4122",
    "uuid.parse",
    "http.send",
    "opa.runtime",
];

/// Problems visible without running the policies (unknown functions,
/// arity, nondeterministic builtins, allocations sized by the client).
/// `modules` are all the modules one engine holds, so that calls into
/// library packages resolve. Recursion is a load error: see
/// [`super::recursion`].
pub fn lint(modules: &[PolicyModule]) -> Vec<Diagnostic> {
    let functions = user_functions(modules);
    let mut out = Vec::new();
    for m in modules {
        let aliases = aliases(m);
        for rule in &m.module.policy {
            let head_refr = head(rule);
            let tainted = tainted_vars(rule);
            // Calls inside a comprehension (by address), where a growing
            // builtin runs once per element.
            let mut in_compr: BTreeSet<*const Expr> = BTreeSet::new();
            let mut callees: BTreeSet<*const Expr> = BTreeSet::new();
            walk_rule(rule, &mut |e| {
                // The rule's own head is not a call site.
                if std::ptr::eq(e, head_refr.as_ref()) || callees.contains(&(e as *const Expr)) {
                    return false;
                }
                if let Expr::ArrayCompr { .. } | Expr::SetCompr { .. } | Expr::ObjectCompr { .. } =
                    e
                {
                    walk_expr(e, &mut |x| {
                        if let Expr::Call { .. } = x {
                            in_compr.insert(x as *const Expr);
                        }
                        true
                    });
                }
                match e {
                    Expr::Call {
                        fcn, params, span, ..
                    } => {
                        let written = path_of(fcn);
                        let resolved = resolve_call(&written, &m.package, &aliases, &functions);
                        match resolved {
                            Callee::User(_, arities) => {
                                if !arities.contains(&params.len()) {
                                    out.push(
                                        Diagnostic::error(
                                            "rego-arity",
                                            span_location(span),
                                            format!(
                                                "`{}` takes {} argument{}, given {}",
                                                written.join("."),
                                                list_arities(&arities),
                                                if arities.iter().all(|a| *a == 1) {
                                                    ""
                                                } else {
                                                    "s"
                                                },
                                                params.len()
                                            ),
                                        )
                                        .with_help("pass the arguments the function declares"),
                                    );
                                }
                            }
                            Callee::Builtin(name, arity) => {
                                // Rego allows one extra argument: the output (`count(x, n)`).
                                if params.len() != arity && params.len() != arity + 1 {
                                    out.push(
                                        Diagnostic::error(
                                            "rego-arity",
                                            span_location(span),
                                            format!(
                                                "builtin `{name}` takes {arity} argument{}, given {}",
                                                if arity == 1 { "" } else { "s" },
                                                params.len()
                                            ),
                                        )
                                        .with_help("see the builtin's signature in the OPA policy reference"),
                                    );
                                }
                                if let Some(d) = input_sized(
                                    &name,
                                    params,
                                    root_span(fcn),
                                    &tainted,
                                    in_compr.contains(&(e as *const Expr)),
                                ) {
                                    out.push(d);
                                }
                                if NONDETERMINISTIC.contains(&name.as_str()) {
                                    out.push(
                                        Diagnostic::warning(
                                            "nondeterministic-builtin",
                                            span_location(span),
                                            format!("`{name}` answers differently from call to call"),
                                        )
                                        .with_help("a resolution must depend only on the arguments and the catalog; pass the value in data or arguments instead"),
                                    );
                                }
                            }
                            Callee::Print => {}
                            Callee::Unknown(name) => out.push(
                                Diagnostic::error(
                                    "rego-unknown-function",
                                    span_location(span),
                                    format!("unknown function `{name}`"),
                                )
                                .with_help(near_function(&name, &functions)),
                            ),
                        }
                        // The callee is not a reference to a rule's value;
                        // the arguments are walked as any expression.
                        callees.insert(fcn.as_ref() as *const Expr);
                        true
                    }
                    // A reference is read as a whole, as the dependency
                    // graph reads it (see `recursion`): calls in its
                    // indexes are not looked at.
                    Expr::RefDot { .. } | Expr::RefBrack { .. } => false,
                    _ => true,
                }
            });
        }
    }
    out.extend(super::confirm::blank_confirms(modules));
    out
}

/// User functions by full path (without `data.`), with their arities.
pub(super) fn user_functions(modules: &[PolicyModule]) -> HashMap<String, BTreeSet<usize>> {
    let mut functions: HashMap<String, BTreeSet<usize>> = HashMap::new();
    for m in modules {
        for rule in &m.module.policy {
            if let Rule::Spec {
                head: RuleHead::Func { refr, args, .. },
                ..
            } = rule.as_ref()
            {
                let name = format!("{}.{}", m.package, path_of(refr).join("."));
                functions.entry(name).or_default().insert(args.len());
            }
        }
    }
    functions
}

/// Import aliases of `m`: `lib` for `import data.lib`, to `data.lib`.
pub(super) fn aliases(m: &PolicyModule) -> HashMap<String, String> {
    m.module
        .imports
        .iter()
        .filter_map(|i| {
            let target = path_of(&i.refr);
            let alias = match &i.r#as {
                Some(s) => s.text().to_string(),
                None => target.last()?.clone(),
            };
            Some((alias, target.join(".")))
        })
        .collect()
}

fn list_arities(a: &BTreeSet<usize>) -> String {
    a.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

pub(super) enum Callee {
    User(String, BTreeSet<usize>),
    Builtin(String, usize),
    Print,
    Unknown(String),
}

pub(super) fn resolve_call(
    written: &[String],
    package: &str,
    aliases: &HashMap<String, String>,
    functions: &HashMap<String, BTreeSet<usize>>,
) -> Callee {
    let dotted = written.join(".");
    let candidates: Vec<String> = if written.first().map(String::as_str) == Some("data") {
        vec![written[1..].join(".")]
    } else if let Some(target) = written.first().and_then(|a| aliases.get(a)) {
        let rest = written[1..].join(".");
        let target = target.strip_prefix("data.").unwrap_or(target);
        vec![if rest.is_empty() {
            target.to_string()
        } else {
            format!("{target}.{rest}")
        }]
    } else {
        vec![format!("{package}.{dotted}")]
    };
    for c in &candidates {
        if let Some(a) = functions.get(c) {
            return Callee::User(c.clone(), a.clone());
        }
    }
    if dotted == "print" {
        return Callee::Print;
    }
    if let Some(b) = BUILTINS.get(dotted.as_str()) {
        return Callee::Builtin(dotted, b.1 as usize);
    }
    Callee::Unknown(dotted)
}

fn near_function(name: &str, functions: &HashMap<String, BTreeSet<usize>>) -> String {
    let short: Vec<String> = functions
        .keys()
        .map(|k| k.rsplit('.').next().unwrap_or(k).to_string())
        .chain(BUILTINS.keys().map(|k| k.to_string()))
        .collect();
    let best = short
        .iter()
        .map(|k| (strsim::levenshtein(k, name), k))
        .min();
    match best {
        Some((d, k)) if d <= 2.max(name.len() / 4) => format!("did you mean `{k}`?"),
        _ => "define the function in a policy file, or use a builtin from the OPA policy reference"
            .to_string(),
    }
}
