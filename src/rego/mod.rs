//! Reading policies as syntax, before anything runs.
//!
//! regorus keeps its syntax tree behind `regorus::unstable` and a hidden
//! `Engine::get_modules`; both are pinned with the crate (=0.14.1), and this
//! module is the only place that touches them but `policy/lower`, which
//! lowers the planned rules for evaluation. This module holds what
//! every analysis shares: the modules of an engine ([`modules`]), the rule
//! definitions and where they are ([`rule_defs`]), and reading references
//! ([`path_of`]). The walk over expressions is [`visit`]; each analysis is a
//! module of its own:
//!
//! - [`reads`]: which tool arguments the policies read, and the literals
//!   they compare them with;
//! - [`lint`]: unknown functions, arity, nondeterministic builtins, with
//!   [`input_sized`] for allocations whose size the client chooses;
//! - [`recursion`]: cycles between rules and functions;
//! - [`identity`]: rules that try to change a tool's name, title,
//!   description or schemas;
//! - [`refs`]: references into `input` and `data` that can never be defined;
//! - [`claims`]: claims used with `in`, iterated or compared whose type
//!   nothing declares or tests (`untyped-claim`);
//! - [`safety`]: OPA's safety rule (unbound variables);
//! - [`portability`]: constructs where regorus answers differently from OPA;
//! - [`data_numbers`]: data numbers spelled otherwise than regent writes them;
//! - [`reach`]: which library packages a tool's policy reaches;
//! - [`generate`]: the Rego module generated from a tool's YAML rules;
//! - [`coverage`]: the lines regorus' coverage counts;
//!
//! The partition of a free string argument and its literal-directed
//! candidates read a tool and its schema, so they are `analysis`'s
//! (`analysis/partition`, `analysis/literal`). This module uses nothing above
//! it: evaluation stays in `policy/engine`; deciding what a finding means
//! for a catalog is `regent check`'s job.

use regorus::unstable::{Expr, Module, Ref, Rule, RuleHead, Span};

use crate::diag::Location;

pub mod claims;
pub mod confirm;
pub mod coverage;
pub mod data_numbers;
pub mod generate;
pub mod identity;
pub mod input_sized;
pub mod lint;
pub mod portability;
pub mod reach;
pub mod reads;
pub mod recursion;
pub(super) mod refs;
pub(super) mod safety;
pub mod visit;

pub use coverage::coverable_lines;
pub use identity::{identity_rules, reserved_meta};
pub use lint::lint;
pub use reads::{
    ArgumentReads, argument_literals, argument_reads, hint_argument_reads, reads_caller,
};
pub use recursion::{Recursion, recursion};

pub const GENERATED_PREFIX: &str = "regent-generated/";

/// One policy module in an engine, with its package.
#[derive(Clone)]
pub struct PolicyModule {
    pub path: String,
    pub text: String,
    /// Without the leading `data.`: `tools.manage_files`.
    pub package: String,
    pub(super) module: Ref<Module>,
}

impl PolicyModule {
    /// The module's `package` line, as written.
    pub fn package_decl(&self) -> String {
        let text = self.module.package.span.text();
        if text.starts_with("package") {
            text.to_string()
        } else {
            format!("package {text}")
        }
    }

    /// The source text of the module's imports, one per line, for copying
    /// into a probe module of the same package.
    pub fn imports_text(&self) -> String {
        self.module
            .imports
            .iter()
            .map(|i| format!("{}\n", i.span.text()))
            .collect()
    }
}

/// The modules of `engine` a person wrote (not regent's generated ones).
pub fn modules(engine: &mut regorus::Engine) -> Vec<PolicyModule> {
    engine
        .get_modules()
        .iter()
        .filter_map(|m| {
            let source = &m.package.span.source;
            let path = source.file().to_string();
            if path.starts_with(GENERATED_PREFIX) {
                return None;
            }
            let package = path_of(&m.package.refr)
                .into_iter()
                .skip_while(|c| c == "data")
                .collect::<Vec<_>>()
                .join(".");
            Some(PolicyModule {
                path,
                text: source.contents().to_string(),
                package,
                module: m.clone(),
            })
        })
        .collect()
}

/// What a rule definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// `default x := v`
    Default,
    /// `x := v if ...`, `x.y := v if ...`
    Complete,
    /// `x contains v if ...`
    PartialSet,
    /// `f(a) := v if ...`
    Function,
}

/// One definition of a rule, where it is and what it looks like.
#[derive(Debug, Clone)]
pub struct RuleDef {
    pub package: String,
    /// The head's path: `["annotations", "destructiveHint"]`; a non-constant
    /// key is `"[_]"`.
    pub path: Vec<String>,
    pub kind: RuleKind,
    pub location: Location,
    /// Byte range of the whole definition in its file. regorus' spans can
    /// stop short of a rule's last character, so the range runs to the
    /// start of the next definition (comments between them included).
    pub start: usize,
    pub end: usize,
    /// Byte range of the head's first name, which a probe renames.
    pub name_start: usize,
    pub name_end: usize,
    /// The module the definition is in (index into [`modules`]' result).
    pub module: usize,
}

impl RuleDef {
    pub fn name(&self) -> &str {
        self.path.first().map_or("", String::as_str)
    }
}

pub(super) fn span_location(span: &Span) -> Location {
    let line = span.line as usize;
    let text = span.source.contents();
    let col = text
        .lines()
        .nth(line.saturating_sub(1))
        .map_or(span.col as usize, |l| char_column(l, span.col as usize));
    Location::new(span.source.file().to_string(), line, col)
}

/// A package rule that binds one name to a value with no body (`x :=
/// input.arguments.a`): what the argument analyses follow as an alias.
pub struct ConstantRule<'a> {
    pub module: &'a PolicyModule,
    pub rule: &'a Rule,
    pub name: String,
    pub value: &'a Expr,
}

impl ConstantRule<'_> {
    /// The document the rule defines: `data`, the package, the name.
    pub fn data_path(&self) -> Vec<String> {
        let mut path = vec!["data".to_string()];
        path.extend(self.module.package.split('.').map(str::to_string));
        path.push(self.name.clone());
        path
    }
}

/// The modules' body-less single-name rules, in file order (an alias may
/// build on an earlier one).
pub fn constant_rules(modules: &[PolicyModule]) -> impl Iterator<Item = ConstantRule<'_>> {
    modules.iter().flat_map(|m| {
        m.module.policy.iter().filter_map(move |rule| {
            let Rule::Spec {
                head:
                    RuleHead::Compr {
                        refr,
                        assign: Some(a),
                        ..
                    },
                bodies,
                ..
            } = rule.as_ref()
            else {
                return None;
            };
            if !bodies.is_empty() {
                return None;
            }
            let [name] = <[String; 1]>::try_from(path_of(refr)).ok()?;
            Some(ConstantRule {
                module: m,
                rule: rule.as_ref(),
                name,
                value: &a.value,
            })
        })
    })
}

/// The components of a reference (`input.arguments["action"]` gives
/// `input`, `arguments`, `action`); a component that is not a constant is `[_]`.
pub(super) fn path_of(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::RefDot { refr, field, .. } => {
                out.push(
                    field
                        .1
                        .as_string()
                        .map_or("[_]".to_string(), |s| s.to_string()),
                );
                cur = refr;
            }
            Expr::RefBrack { refr, index, .. } => {
                out.push(const_string(index).unwrap_or_else(|| "[_]".to_string()));
                cur = refr;
            }
            Expr::Var { value, .. } => {
                out.push(
                    value
                        .as_string()
                        .map_or("[_]".to_string(), |s| s.to_string()),
                );
                break;
            }
            _ => {
                out.push("[_]".to_string());
                break;
            }
        }
    }
    out.reverse();
    out
}

pub(super) fn const_string(e: &Expr) -> Option<String> {
    match e {
        Expr::String { value, .. } | Expr::RawString { value, .. } => {
            value.as_string().ok().map(|s| s.to_string())
        }
        _ => None,
    }
}

/// The span of the first component of a reference.
pub(crate) fn root_span(e: &Expr) -> &Span {
    match e {
        Expr::RefDot { refr, .. } | Expr::RefBrack { refr, .. } => root_span(refr),
        other => other.span(),
    }
}

/// The values rule `rule` assigns: a default's, its head's (`x := v`) and
/// each `else`'s, in that order.
pub(crate) fn assigned_values(rule: &Rule) -> Vec<&Ref<Expr>> {
    match rule {
        Rule::Default { value, .. } => vec![value],
        Rule::Spec { head, bodies, .. } => {
            let own = match head {
                RuleHead::Compr {
                    assign: Some(a), ..
                } => Some(&a.value),
                _ => None,
            };
            own.into_iter()
                .chain(
                    bodies
                        .iter()
                        .filter_map(|b| b.assign.as_ref().map(|a| &a.value)),
                )
                .collect()
        }
    }
}

/// The head reference of a rule (`annotations.destructiveHint`, `f`).
pub(crate) fn head(rule: &Rule) -> &Ref<Expr> {
    match rule {
        Rule::Default { refr, .. } => refr,
        Rule::Spec { head, .. } => match head {
            RuleHead::Compr { refr, .. }
            | RuleHead::Set { refr, .. }
            | RuleHead::Func { refr, .. } => refr,
        },
    }
}

/// Every rule definition in `modules`.
pub fn rule_defs(modules: &[PolicyModule]) -> Vec<RuleDef> {
    let mut out = Vec::new();
    for (mi, m) in modules.iter().enumerate() {
        let mut starts: Vec<usize> = m
            .module
            .policy
            .iter()
            .map(|r| r.span().start as usize)
            .collect();
        starts.sort_unstable();
        for rule in &m.module.policy {
            let (refr, kind) = match rule.as_ref() {
                Rule::Default { refr, .. } => (refr, RuleKind::Default),
                Rule::Spec { head, .. } => match head {
                    RuleHead::Compr { refr, .. } => (refr, RuleKind::Complete),
                    RuleHead::Set { refr, .. } => (refr, RuleKind::PartialSet),
                    RuleHead::Func { refr, .. } => (refr, RuleKind::Function),
                },
            };
            let span = rule.span();
            let name = root_span(refr);
            let end = starts
                .iter()
                .copied()
                .find(|s| *s > span.start as usize)
                .unwrap_or(m.text.len());
            out.push(RuleDef {
                package: m.package.clone(),
                path: path_of(refr),
                kind,
                location: span_location(span),
                start: span.start as usize,
                end,
                name_start: name.start as usize,
                name_end: name.end as usize,
                module: mi,
            });
        }
    }
    out
}

/// regorus counts a tab as four columns; diagnostics count characters.
/// Converts a regorus column on `line` to a 1-based character column.
pub fn char_column(line: &str, regorus_col: usize) -> usize {
    let mut width = 1;
    for (i, c) in line.chars().enumerate() {
        if width >= regorus_col {
            return i + 1;
        }
        width += if c == '\t' { 4 } else { 1 };
    }
    line.chars().count() + 1
}

#[cfg(test)]
mod tests;
