//! Literal-directed candidates for a free string argument the partition
//! (`analysis/partition`) cannot handle because the rules derive a value from
//! it before comparing.
//!
//! The rules that can change the annotations are read for comparisons of a
//! *derivation* of `input.arguments.x` with string constants: `d == "lit"`,
//! `d != "lit"`, `d in {"a", "b"}`, `startswith`/`endswith`/`contains(d,
//! "lit")`, `indexof(d, "lit") == n` and `regex.match("pattern", d)` (a
//! constant pattern OPA's reading of compiles, `opa_builtins::regex`; its
//! targets are strings generated from it), where `d` is `x` passed through any
//! chain of `lower`, `upper`, `trim_space`, `trim`, `trim_left`,
//! `trim_right`, `trim_prefix`, `trim_suffix` (constant cutsets and
//! affixes), `split(_, "sep")[i]` (constant separator and index),
//! `substring(_, start, len)` (constant bounds), `concat` of constants and
//! `d`, and `sprintf` with a constant format holding one `%s`; each link may
//! be a variable of the rule (`parts := split(input.arguments.q, " ")`) or a
//! rule of the package without a body (`first := lower(...)`).
//!
//! Each comparison is inverted step by step, outermost first: a derived
//! string that makes it true (the constant, the prefix with a filler, …)
//! and one that makes it false become arguments (`split(x, " ")[0] ==
//! "copy"` gives `"copy x"`; `lower` adds an upper-case variant;
//! `trim_space` one with surrounding spaces; `trim_prefix` puts the prefix
//! back; `concat`/`sprintf` strip the constant parts off). A step that
//! cannot produce the string wanted (`lower(x) == "Copy"`, a split index
//! whose element would hold the separator) gives no candidate. Every
//! candidate is then run forward through the chain, as OPA computes each
//! builtin, and kept only if inputSchema accepts it: what a comparison
//! reached is computed, never assumed.
//!
//! What this gives is weaker than the partition: the candidates *reach*
//! each comparison, true and false, and each rule's comparisons of the
//! argument jointly as the rule needs them (negated under `not`, flipped by
//! `!=`), but they are not one per class of equivalent strings: two
//! strings that both make `first == "copy"` true may still differ
//! elsewhere. So the proof calls a tool covered this way "proved by reach",
//! and a use of the argument that is not such a comparison, a step not in
//! the list above, or a comparison (or a rule's set of them) no candidate
//! reaches leaves the argument unreached, named with its location.
//!
//! Which arguments need this, the combinations with the other arguments
//! and evaluating them are the proof's (`analysis/proof`).

use std::collections::BTreeMap;

use regorus::unstable::{AssignOp, BoolOp, Expr, Literal, Rule, RuleHead};
use serde_json::{Value, json};

use crate::catalog::Tool;
use crate::diag::Location;
use crate::rego::reads::hint_rules;
use crate::rego::visit::walk_rule;
use crate::rego::{PolicyModule, const_string, path_of};

/// The builtins a derivation may go through, as the messages say it.
const FOLLOWED: &str = "lower, upper, trim*, split(…)[i], substring, concat and sprintf";

/// The most candidates one argument gets.
pub const MAX_CANDIDATES: usize = 32;
/// How many strings a `regex.match` pattern generates as targets.
const REGEX_SAMPLES: usize = 8;
/// The most comparisons of one argument followed.
const MAX_COMPARISONS: usize = 64;
/// The most preimages kept per step while inverting.
const MAX_PREIMAGES: usize = 8;

/// One step of a derivation, applied to the string it receives.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Lower,
    Upper,
    TrimSpace,
    Trim(String),
    TrimLeft(String),
    TrimRight(String),
    TrimPrefix(String),
    TrimSuffix(String),
    /// `split(x, sep)[i]`.
    Split(String, usize),
    /// `substring(x, start, len)`; a negative `len` reads to the end.
    Substring(usize, i64),
    /// `concat` or `sprintf` with constant text before and after.
    Wrap(String, String, &'static str),
}

impl Step {
    fn name(&self) -> &'static str {
        match self {
            Step::Lower => "lower",
            Step::Upper => "upper",
            Step::TrimSpace => "trim_space",
            Step::Trim(_) => "trim",
            Step::TrimLeft(_) => "trim_left",
            Step::TrimRight(_) => "trim_right",
            Step::TrimPrefix(_) => "trim_prefix",
            Step::TrimSuffix(_) => "trim_suffix",
            Step::Split(..) => "split",
            Step::Substring(..) => "substring",
            Step::Wrap(_, _, n) => n,
        }
    }

    /// The step as OPA computes it; `None` where OPA's is undefined.
    fn apply(&self, x: &str) -> Option<String> {
        Some(match self {
            Step::Lower => x.to_lowercase(),
            Step::Upper => x.to_uppercase(),
            Step::TrimSpace => x.trim().to_string(),
            Step::Trim(c) => x.trim_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimLeft(c) => x.trim_start_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimRight(c) => x.trim_end_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimPrefix(p) => x.strip_prefix(p.as_str()).unwrap_or(x).to_string(),
            Step::TrimSuffix(s) => x.strip_suffix(s.as_str()).unwrap_or(x).to_string(),
            Step::Split(sep, i) => x.split(sep.as_str()).nth(*i)?.to_string(),
            Step::Substring(start, len) => {
                let chars: Vec<char> = x.chars().collect();
                if *start >= chars.len() {
                    return Some(String::new());
                }
                let end = if *len < 0 {
                    chars.len()
                } else {
                    (start + *len as usize).min(chars.len())
                };
                chars[*start..end].iter().collect()
            }
            Step::Wrap(pre, post, _) => format!("{pre}{x}{post}"),
        })
    }

    /// Strings this step maps to `w`, most readable first (`f` is a filler
    /// character in no constant of the comparison).
    fn preimages(&self, w: &str, f: char) -> Vec<String> {
        let fs = f.to_string();
        let mut out: Vec<String> = match self {
            Step::Lower => vec![w.to_string(), w.to_uppercase()],
            Step::Upper => vec![w.to_string(), w.to_lowercase()],
            Step::TrimSpace => vec![w.to_string(), format!(" {w} ")],
            Step::Trim(c) | Step::TrimLeft(c) | Step::TrimRight(c) => {
                let mut v = vec![w.to_string()];
                if let Some(ch) = c.chars().next() {
                    v.push(format!("{ch}{w}{ch}"));
                }
                v
            }
            Step::TrimPrefix(p) => vec![format!("{p}{w}"), w.to_string()],
            Step::TrimSuffix(s) => vec![format!("{w}{s}"), w.to_string()],
            Step::Split(sep, i) => {
                let lead = format!("{fs}{sep}").repeat(*i);
                vec![format!("{lead}{w}{sep}{fs}"), format!("{lead}{w}")]
            }
            Step::Substring(start, len) => {
                let lead = fs.repeat(*start);
                vec![format!("{lead}{w}{fs}"), format!("{lead}{w}")]
                    .into_iter()
                    .filter(|_| *len != 0 || w.is_empty())
                    .collect()
            }
            Step::Wrap(pre, post, _) => w
                .strip_prefix(pre.as_str())
                .and_then(|r| r.strip_suffix(post.as_str()))
                .map(|r| vec![r.to_string()])
                .unwrap_or_default(),
        };
        // Only those the step really maps to `w`.
        out.retain(|x| self.apply(x).as_deref() == Some(w));
        out.dedup();
        out
    }

    fn constants(&self) -> Vec<&str> {
        match self {
            Step::Trim(c)
            | Step::TrimLeft(c)
            | Step::TrimRight(c)
            | Step::TrimPrefix(c)
            | Step::TrimSuffix(c)
            | Step::Split(c, _) => vec![c],
            Step::Wrap(a, b, _) => vec![a, b],
            _ => Vec::new(),
        }
    }
}

/// What a comparison tests on the derived string.
#[derive(Debug, Clone)]
pub enum Test {
    /// `==` one constant, or `in` a set of them.
    OneOf(Vec<String>),
    Prefix(String),
    Suffix(String),
    Contains(String),
    /// `indexof(d, lit) == n`.
    IndexOf(String, i64),
    /// `regex.match("pattern", d)`, the pattern compiled as OPA reads it
    /// (`opa_builtins::regex`).
    Regex(String, regex::Regex),
}

impl Test {
    fn holds(&self, d: &str) -> bool {
        match self {
            Test::OneOf(ls) => ls.iter().any(|l| l == d),
            Test::Prefix(p) => d.starts_with(p.as_str()),
            Test::Suffix(s) => d.ends_with(s.as_str()),
            Test::Contains(c) => d.contains(c.as_str()),
            Test::IndexOf(l, n) => {
                let at = d
                    .find(l.as_str())
                    .map_or(-1, |b| d[..b].chars().count() as i64);
                at == *n
            }
            Test::Regex(_, re) => re.is_match(d),
        }
    }

    fn constants(&self) -> Vec<&str> {
        match self {
            Test::OneOf(ls) => ls.iter().map(String::as_str).collect(),
            Test::Prefix(l) | Test::Suffix(l) | Test::Contains(l) | Test::IndexOf(l, _) => {
                vec![l]
            }
            Test::Regex(p, _) => vec![p],
        }
    }

    /// Derived strings that make the test true, then some that make it
    /// false (checked by the caller).
    fn targets(&self, f: char) -> Vec<String> {
        let fs = f.to_string();
        let mut out = match self {
            Test::OneOf(ls) => ls.clone(),
            Test::Prefix(p) => vec![format!("{p}{fs}"), p.clone()],
            Test::Suffix(s) => vec![format!("{fs}{s}"), s.clone()],
            Test::Contains(c) => vec![format!("{fs}{c}{fs}"), c.clone()],
            Test::IndexOf(l, n) => {
                let mut v = Vec::new();
                if *n >= 0 {
                    v.push(format!("{}{l}", fs.repeat(*n as usize)));
                }
                v.extend([l.clone(), format!("{fs}{l}")]);
                v
            }
            // Strings generated from the pattern (JSON Schema's reading of
            // it; whether OPA's matches is checked forward).
            Test::Regex(p, _) => crate::regex_samples::pattern_strings(p, 16, REGEX_SAMPLES),
        };
        out.extend([fs.clone(), format!("{fs}{fs}"), String::new()]);
        out
    }
}

/// One comparison of a derivation of an argument with constants.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Innermost first.
    pub steps: Vec<Step>,
    pub test: Test,
    /// The test's value that makes the statement hold (`!=` and `not`
    /// flip it).
    want: bool,
    /// Written `!=`: the statement is true when the test is false.
    ne: bool,
    /// Under `not`: an undefined derivation makes the statement hold.
    negated: bool,
    /// The rule body (or head) it is in: comparisons of one group are
    /// reached jointly.
    group: (usize, usize),
    pub text: String,
    pub location: Location,
}

impl Comparison {
    /// The test's truth on argument `x`; `None` where the derivation is
    /// undefined.
    fn truth(&self, x: &str) -> Option<bool> {
        let mut d = x.to_string();
        for s in &self.steps {
            d = s.apply(&d)?;
        }
        Some(self.test.holds(&d))
    }

    fn statement_holds(&self, x: &str) -> bool {
        match self.truth(x) {
            Some(t) => t == self.want,
            None => self.negated,
        }
    }
}

/// How the rules that can change the annotations use one argument.
#[derive(Debug, Clone, Default)]
pub struct Uses {
    pub comparisons: Vec<Comparison>,
    /// A use that is no such comparison: where and why.
    pub blocked: Option<(Location, String)>,
}

/// Arguments meant to make every comparison of `cs` (one rule body) hold
/// at once, when they all derive the argument the same way: the one
/// constant an equality needs, or the prefix, the contained constants and
/// the suffix the body needs true, joined by a filler.
fn joint(cs: &[&Comparison]) -> Vec<String> {
    let Some(first) = cs.first() else {
        return Vec::new();
    };
    if cs.iter().any(|c| c.steps != first.steps) {
        return Vec::new();
    }
    let mut constants: Vec<&str> = Vec::new();
    for c in cs {
        constants.extend(c.test.constants());
    }
    for s in &first.steps {
        constants.extend(s.constants());
    }
    let f = filler(&constants).to_string();
    let (mut pre, mut mid, mut post, mut exact) = (String::new(), Vec::new(), String::new(), None);
    for c in cs.iter().filter(|c| c.want) {
        match &c.test {
            Test::OneOf(ls) => exact = ls.first().cloned(),
            Test::Prefix(p) if p.len() > pre.len() => pre = p.clone(),
            Test::Suffix(s) if s.len() > post.len() => post = s.clone(),
            Test::Contains(k) => mid.push(k.clone()),
            _ => {}
        }
    }
    let target = exact.unwrap_or_else(|| {
        let mut t = pre;
        for k in &mid {
            t.push_str(&f);
            t.push_str(k);
        }
        t.push_str(&f);
        t.push_str(&post);
        t
    });
    let fc = f.chars().next().unwrap_or('x');
    let mut level = vec![target];
    for s in first.steps.iter().rev() {
        level = level
            .iter()
            .flat_map(|w| s.preimages(w, fc))
            .take(MAX_PREIMAGES)
            .collect();
    }
    level
}

/// What literal-directed candidates reached for one argument.
#[derive(Debug, Clone)]
pub struct Reach {
    pub argument: String,
    /// The builtins the derivations go through, in the order first seen.
    pub through: Vec<String>,
    pub comparisons: usize,
    /// Values inputSchema accepts, at most [`MAX_CANDIDATES`].
    pub candidates: Vec<String>,
    /// The first use or comparison not reached: where and why.
    pub unreached: Option<(Location, String)>,
}

impl Reach {
    /// `` `query` through split/trim_space/lower: 3 candidates for 1 comparison ``.
    pub fn describe(&self) -> String {
        let n = self.candidates.len();
        format!(
            "`{}`{}: {n} candidate{} for {} comparison{}",
            self.argument,
            if self.through.is_empty() {
                " as it is".to_string()
            } else {
                format!(" through {}", self.through.join("/"))
            },
            if n == 1 { "" } else { "s" },
            self.comparisons,
            if self.comparisons == 1 { "" } else { "s" }
        )
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "argument": self.argument,
            "through": self.through,
            "comparisons": self.comparisons,
            "candidates": self.candidates,
        });
        if let (Some((at, why)), Value::Object(m)) = (&self.unreached, &mut v) {
            m.insert(
                "unreached".into(),
                json!({"location": at.to_string(), "reason": why}),
            );
        }
        v
    }
}

/// How the rules that can change `tool`'s annotations use each argument
/// (YAML `when` values compare it as it is).
pub fn uses(tool: &Tool) -> BTreeMap<String, Uses> {
    let mut out: BTreeMap<String, Uses> = BTreeMap::new();
    for (i, rule) in tool.rules.iter().enumerate() {
        for (k, v) in &rule.when {
            let lits: Vec<String> = match v {
                Value::Array(vs) => vs
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                Value::String(s) => vec![s.clone()],
                _ => Vec::new(),
            };
            out.entry(k.clone())
                .or_default()
                .comparisons
                .push(Comparison {
                    steps: Vec::new(),
                    test: Test::OneOf(lits),
                    want: true,
                    ne: false,
                    negated: false,
                    group: (usize::MAX, i),
                    text: format!("when {k}: {v}"),
                    location: rule.location.clone(),
                });
        }
    }
    if tool.is_resolvable() {
        let modules = tool.modules();
        rego_uses(&modules, tool.policy.as_deref(), &mut out);
    }
    out
}

/// A derivation: the argument, its steps, and a pending `split` whose
/// index is not read yet.
#[derive(Debug, Clone, PartialEq)]
struct Chain {
    argument: String,
    steps: Vec<Step>,
    split: Option<String>,
}

/// A rule of a package bound to a derivation, without a body.
struct Alias {
    package: String,
    name: String,
    chain: Chain,
    data_path: Vec<String>,
}

fn exact_argument(e: &Expr) -> Option<String> {
    match path_of(e).as_slice() {
        [i, a, n] if i == "input" && a == "arguments" && n != "[_]" => Some(n.clone()),
        _ => None,
    }
}

fn number(e: &Expr) -> Option<i64> {
    match e {
        Expr::Number { value, .. } => value.as_i64().ok(),
        _ => None,
    }
}

/// The derivation `e` is, given how variables and package rules are bound.
fn chain(e: &Expr, lookup: &dyn Fn(&Expr) -> Option<Chain>) -> Option<Chain> {
    if let Some(argument) = exact_argument(e) {
        return Some(Chain {
            argument,
            steps: Vec::new(),
            split: None,
        });
    }
    if let Some(c) = lookup(e) {
        return Some(c);
    }
    let string = |e: &Expr| chain(e, lookup).filter(|c| c.split.is_none());
    match e {
        Expr::RefBrack { refr, index, .. } => {
            let mut c = chain(refr, lookup)?;
            let sep = c.split.take()?;
            let i = usize::try_from(number(index)?).ok()?;
            c.steps.push(Step::Split(sep, i));
            Some(c)
        }
        Expr::Call { fcn, params, .. } => {
            let f = path_of(fcn).join(".");
            let mut c;
            let step = match (f.as_str(), params.as_slice()) {
                ("lower" | "upper" | "trim_space", [p]) => {
                    c = string(p)?;
                    match f.as_str() {
                        "lower" => Step::Lower,
                        "upper" => Step::Upper,
                        _ => Step::TrimSpace,
                    }
                }
                ("trim" | "trim_left" | "trim_right" | "trim_prefix" | "trim_suffix", [p, k]) => {
                    c = string(p)?;
                    let k = const_string(k)?;
                    match f.as_str() {
                        "trim" => Step::Trim(k),
                        "trim_left" => Step::TrimLeft(k),
                        "trim_right" => Step::TrimRight(k),
                        "trim_prefix" => Step::TrimPrefix(k),
                        _ => Step::TrimSuffix(k),
                    }
                }
                ("substring", [p, s, l]) => {
                    c = string(p)?;
                    Step::Substring(usize::try_from(number(s)?).ok()?, number(l)?)
                }
                ("split", [p, sep]) => {
                    c = string(p)?;
                    let sep = const_string(sep)?;
                    if sep.is_empty() {
                        return None;
                    }
                    c.split = Some(sep);
                    return Some(c);
                }
                ("concat", [delim, arr]) => {
                    let Expr::Array { items, .. } = arr.as_ref() else {
                        return None;
                    };
                    let delim = const_string(delim)?;
                    let at = items.iter().position(|i| const_string(i).is_none())?;
                    c = string(&items[at])?;
                    let parts: Option<Vec<String>> = items
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != at)
                        .map(|(_, i)| const_string(i))
                        .collect();
                    let parts = parts?;
                    let (before, after) = parts.split_at(at);
                    let mut pre = before.join(&delim);
                    if !before.is_empty() {
                        pre.push_str(&delim);
                    }
                    let mut post = String::new();
                    if !after.is_empty() {
                        post.push_str(&delim);
                        post.push_str(&after.join(&delim));
                    }
                    Step::Wrap(pre, post, "concat")
                }
                ("sprintf", [format, arr]) => {
                    let Expr::Array { items, .. } = arr.as_ref() else {
                        return None;
                    };
                    let format = const_string(format)?;
                    let [item] = items.as_slice() else {
                        return None;
                    };
                    c = string(item)?;
                    let (pre, post) = format.split_once("%s")?;
                    if pre.contains('%') || post.contains('%') {
                        return None;
                    }
                    Step::Wrap(pre.to_string(), post.to_string(), "sprintf")
                }
                _ => return None,
            };
            c.steps.push(step);
            Some(c)
        }
        _ => None,
    }
}

fn rego_uses(modules: &[PolicyModule], package: Option<&str>, out: &mut BTreeMap<String, Uses>) {
    // The rules that can change the annotations (as `reads` counts them).
    let counts = hint_rules(modules, package);

    // Package rules bound to a derivation; in file order, so one may build
    // on an earlier one.
    let mut aliases: Vec<Alias> = Vec::new();
    let mut alias_rules: Vec<*const Rule> = Vec::new();
    for m in modules {
        for rule in &m.module.policy {
            if let Rule::Spec {
                head:
                    RuleHead::Compr {
                        refr,
                        assign: Some(a),
                        ..
                    },
                bodies,
                ..
            } = rule.as_ref()
                && bodies.is_empty()
                && let [name] = path_of(refr).as_slice()
            {
                let lookup = |e: &Expr| alias_of(&aliases, &m.package, e);
                if let Some(c) = chain(&a.value, &lookup) {
                    let mut data_path = vec!["data".to_string()];
                    data_path.extend(m.package.split('.').map(str::to_string));
                    data_path.push(name.clone());
                    aliases.push(Alias {
                        package: m.package.clone(),
                        name: name.clone(),
                        chain: c,
                        data_path,
                    });
                    alias_rules.push(rule.as_ref() as *const Rule);
                }
            }
        }
    }
    // An alias imported, or read as part of a larger document, is not
    // followed.
    for m in modules {
        for imp in &m.module.imports {
            let p = path_of(&imp.refr);
            for a in &aliases {
                if p.first().map(String::as_str) == Some("data") && a.data_path.starts_with(&p)
                    || p.starts_with(&a.data_path)
                {
                    block(
                        out,
                        &a.chain.argument,
                        start_location(&imp.span),
                        format!(
                            "`{}` imports the rule `{}` derived from it",
                            imp.span.text(),
                            a.name
                        ),
                    );
                }
            }
        }
    }

    for (ri, (m, rule)) in modules
        .iter()
        .flat_map(|m| m.module.policy.iter().map(move |r| (m, r)))
        .enumerate()
    {
        if !counts(m, rule) || alias_rules.contains(&(rule.as_ref() as *const Rule)) {
            continue;
        }
        // The bodies, and the spans of statements under `not`.
        let mut bodies: Vec<(u32, u32)> = Vec::new();
        let mut negated: Vec<(u32, u32)> = Vec::new();
        if let Rule::Spec { bodies: bs, .. } = rule.as_ref() {
            for b in bs {
                bodies.push((b.query.span.start, b.query.span.end));
                for s in &b.query.stmts {
                    if let Literal::NotExpr { span, .. } = &s.literal {
                        negated.push((span.start, span.end));
                    }
                }
            }
        }
        let within = |e: &Expr, r: &(u32, u32)| e.span().start >= r.0 && e.span().end <= r.1;
        let group = |e: &Expr| {
            (
                ri,
                bodies
                    .iter()
                    .position(|b| within(e, b))
                    .unwrap_or(usize::MAX),
            )
        };
        let is_negated = |e: &Expr| negated.iter().any(|n| within(e, n));

        // Variables of this rule bound to a derivation, in order.
        let mut locals: BTreeMap<String, Chain> = BTreeMap::new();
        let mut clash: Option<(Location, String, String)> = None;
        walk_rule(rule, &mut |e| {
            if let Expr::AssignExpr { lhs, rhs, .. } = e
                && let Expr::Var { value, .. } = lhs.as_ref()
                && let Ok(v) = value.as_string()
            {
                let lookup = |x: &Expr| local_of(&locals, &aliases, &m.package, x);
                if let Some(c) = chain(rhs, &lookup) {
                    match locals.get(v.as_ref()) {
                        Some(old) if *old != c => {
                            clash.get_or_insert((
                                start_location(e.span()),
                                c.argument.clone(),
                                v.to_string(),
                            ));
                        }
                        _ => {
                            locals.insert(v.to_string(), c);
                        }
                    }
                }
            }
            true
        });
        if let Some((at, arg, v)) = clash {
            block(
                out,
                &arg,
                at,
                format!("variable `{v}` is bound to two derivations"),
            );
        }
        let lookup = |x: &Expr| local_of(&locals, &aliases, &m.package, x);
        let derived = |x: &Expr| chain(x, &lookup).filter(|c| c.split.is_none());
        // A reference that starts with a derivation of an argument.
        let mentions = |x: &Expr| -> Option<String> {
            if !matches!(
                x,
                Expr::RefDot { .. } | Expr::RefBrack { .. } | Expr::Var { .. }
            ) {
                return None;
            }
            let p = path_of(x);
            if let [i, a, n, ..] = p.as_slice()
                && i == "input"
                && a == "arguments"
                && n != "[_]"
            {
                return Some(n.clone());
            }
            if let Some(first) = p.first() {
                if let Some(c) = locals.get(first) {
                    return Some(c.argument.clone());
                }
                if let Some(a) = aliases
                    .iter()
                    .find(|a| a.package == m.package && &a.name == first)
                {
                    return Some(a.chain.argument.clone());
                }
            }
            if p.first().map(String::as_str) == Some("data") {
                // The alias itself, deeper into it, or a document holding it.
                return aliases
                    .iter()
                    .find(|a| {
                        p.starts_with(&a.data_path)
                            || a.data_path
                                .iter()
                                .zip(&p)
                                .all(|(x, y)| y == "[_]" || x == y)
                    })
                    .map(|a| a.chain.argument.clone());
            }
            None
        };
        let push = |out: &mut BTreeMap<String, Uses>,
                    c: Chain,
                    test: Test,
                    ne: bool,
                    e: &Expr,
                    text: String| {
            let negated = is_negated(e);
            let u = out.entry(c.argument).or_default();
            if u.comparisons.len() < MAX_COMPARISONS {
                u.comparisons.push(Comparison {
                    steps: c.steps,
                    test,
                    want: !(ne ^ negated),
                    ne,
                    negated,
                    group: group(e),
                    text,
                    location: start_location(e.span()),
                });
            } else {
                u.blocked.get_or_insert_with(|| {
                    (
                        start_location(e.span()),
                        format!("it is compared more than {MAX_COMPARISONS} times"),
                    )
                });
            }
        };
        walk_rule(rule, &mut |e| {
            let compared = match e {
                Expr::BoolExpr {
                    op: op @ (BoolOp::Eq | BoolOp::Ne),
                    lhs,
                    rhs,
                    ..
                } => Some((lhs, rhs, matches!(op, BoolOp::Ne))),
                Expr::AssignExpr {
                    op: AssignOp::Eq,
                    lhs,
                    rhs,
                    ..
                } => Some((lhs, rhs, false)),
                _ => None,
            };
            if let Some((lhs, rhs, ne)) = compared {
                for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                    let op = if ne { "!=" } else { "==" };
                    if let (Some(c), Some(lit)) = (derived(a), const_string(b)) {
                        // Rebuilt: the span of a comparison with a string
                        // constant ends before the closing quote.
                        let text =
                            format!("{} {op} {}", a.span().text(), Value::String(lit.clone()));
                        push(out, c, Test::OneOf(vec![lit]), ne, e, text);
                        return false;
                    }
                    // indexof(d, "lit") == n
                    if let Expr::Call { fcn, params, .. } = a.as_ref()
                        && path_of(fcn) == ["indexof"]
                        && let [p, l] = params.as_slice()
                        && let (Some(c), Some(l), Some(n)) =
                            (derived(p), const_string(l), number(b))
                    {
                        let text = format!("{} {op} {n}", a.span().text());
                        push(out, c, Test::IndexOf(l, n), ne, e, text);
                        return false;
                    }
                }
            }
            match e {
                Expr::Call { fcn, params, .. } if params.len() == 2 => {
                    let f = path_of(fcn);
                    // regex.match("pattern", d), a pattern OPA's reading
                    // of compiles.
                    if f == ["regex", "match"]
                        && let (Some(p), Some(c)) = (const_string(&params[0]), derived(&params[1]))
                        && let Ok(re) = crate::opa_builtins::regex::compile(&p)
                    {
                        let text = full_text(e);
                        push(out, c, Test::Regex(p, re), false, e, text);
                        return false;
                    }
                    if let [f] = f.as_slice()
                        && ["startswith", "endswith", "contains"].contains(&f.as_str())
                        && let (Some(c), Some(lit)) =
                            (derived(&params[0]), const_string(&params[1]))
                    {
                        let test = match f.as_str() {
                            "startswith" => Test::Prefix(lit),
                            "endswith" => Test::Suffix(lit),
                            _ => Test::Contains(lit),
                        };
                        push(out, c, test, false, e, e.span().text().to_string());
                        return false;
                    }
                }
                Expr::Membership {
                    key: None,
                    value,
                    collection,
                    ..
                } => {
                    if let (Some(c), Expr::Set { items, .. } | Expr::Array { items, .. }) =
                        (derived(value), collection.as_ref())
                        && let Some(lits) = items
                            .iter()
                            .map(|i| const_string(i))
                            .collect::<Option<Vec<String>>>()
                    {
                        push(
                            out,
                            c,
                            Test::OneOf(lits),
                            false,
                            e,
                            e.span().text().to_string(),
                        );
                        return false;
                    }
                }
                _ => {}
            }
            // `v := d`: the binding itself.
            if let Expr::AssignExpr { lhs, rhs, .. } = e
                && let Expr::Var { value, .. } = lhs.as_ref()
                && value
                    .as_string()
                    .is_ok_and(|v| locals.contains_key(v.as_ref()))
                && chain(rhs, &lookup).is_some()
            {
                return false;
            }
            if let Some(arg) = mentions(e) {
                let (used, at, compared) = use_text(rule, e, &lookup);
                let why = match compared {
                    Some(cmp) => format!(
                        "`{cmp}` compares `{used}`, which they do not invert (they follow {FOLLOWED})"
                    ),
                    None => format!(
                        "`{used}` is no comparison with string constants of it or of what {FOLLOWED} derive from it"
                    ),
                };
                block(out, &arg, at, why);
                return false;
            }
            true
        });
    }
}

/// The text of the use `e` is part of: past the derivation it starts (the
/// expression of `rule` directly holding the outermost derivation), so
/// `count(split(x, "/"))` rather than `x`.
fn use_text(
    rule: &Rule,
    e: &Expr,
    lookup: &dyn Fn(&Expr) -> Option<Chain>,
) -> (String, Location, Option<String>) {
    let mut target = e as *const Expr;
    let mut text = e.span().text().to_string();
    let mut at = start_location(e.span());
    let mut past_use = false;
    let mut use_text = String::new();
    loop {
        let mut found: Option<(*const Expr, String, bool, Location, bool)> = None;
        walk_rule(rule, &mut |parent| {
            if found.is_some() {
                return false;
            }
            let mut direct = false;
            let mut depth = 0;
            crate::rego::visit::walk_expr(parent, &mut |c| {
                depth += 1;
                if depth > 1 && std::ptr::eq(c, target) {
                    direct = true;
                }
                depth == 1
            });
            if direct {
                found = Some((
                    parent as *const Expr,
                    full_text(parent),
                    chain(parent, lookup).is_some(),
                    start_location(parent.span()),
                    matches!(
                        parent,
                        Expr::BoolExpr { .. } | Expr::AssignExpr { .. } | Expr::Membership { .. }
                    ),
                ));
            }
            true
        });
        match found {
            // The comparison the use is in, one level up.
            Some((_, t, _, l, true)) if past_use => return (use_text, l, Some(t)),
            Some(_) if past_use => return (use_text, at, None),
            Some((p, t, derivation, l, _)) => {
                text = t;
                at = l;
                if !derivation {
                    past_use = true;
                    use_text = text.clone();
                }
                target = p;
            }
            None if past_use => return (use_text, at, None),
            None => return (text, at, None),
        }
    }
}

/// Where `span` starts (regorus' own line and column point elsewhere in
/// some expressions: at the operator of a comparison, the last field of a
/// reference).
fn start_location(span: &regorus::unstable::Span) -> Location {
    let text = span.source.contents();
    let start = (span.start as usize).min(text.len());
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Location::new(span.source.file().to_string(), line, col)
}

/// `e`'s text; a comparison whose right side is a string constant has a
/// span that ends before the closing quote, which is put back.
fn full_text(e: &Expr) -> String {
    let t = e.span().text().to_string();
    match e {
        Expr::BoolExpr { rhs, .. } | Expr::AssignExpr { rhs, .. }
            if matches!(rhs.as_ref(), Expr::String { .. }) && !t.ends_with('"') =>
        {
            format!("{t}\"")
        }
        _ => t,
    }
}

fn alias_of(aliases: &[Alias], package: &str, e: &Expr) -> Option<Chain> {
    let p = path_of(e);
    match p.as_slice() {
        [v] => aliases
            .iter()
            .find(|a| a.package == package && &a.name == v)
            .map(|a| a.chain.clone()),
        p => aliases
            .iter()
            .find(|a| a.data_path == p)
            .map(|a| a.chain.clone()),
    }
}

fn local_of(
    locals: &BTreeMap<String, Chain>,
    aliases: &[Alias],
    package: &str,
    e: &Expr,
) -> Option<Chain> {
    if let Expr::Var { value, .. } = e
        && let Ok(v) = value.as_string()
        && let Some(c) = locals.get(v.as_ref())
    {
        return Some(c.clone());
    }
    alias_of(aliases, package, e)
}

fn block(out: &mut BTreeMap<String, Uses>, arg: &str, at: Location, why: String) {
    out.entry(arg.to_string())
        .or_default()
        .blocked
        .get_or_insert((at, why));
}

/// A character in none of `constants`, most readable first.
fn filler(constants: &[&str]) -> char {
    "xyzq0_-~abc"
        .chars()
        .chain('d'..='w')
        .find(|c| constants.iter().all(|k| !k.contains(*c)))
        .unwrap_or('\u{e000}')
}

/// Arguments that drive `c`'s derived string to each of the test's targets.
fn invert(c: &Comparison) -> Vec<String> {
    let mut constants: Vec<&str> = c.test.constants();
    for s in &c.steps {
        constants.extend(s.constants());
    }
    let f = filler(&constants);
    let mut out: Vec<String> = Vec::new();
    for target in c.test.targets(f) {
        let mut level = vec![target];
        for s in c.steps.iter().rev() {
            let mut next: Vec<String> = Vec::new();
            for w in &level {
                for p in s.preimages(w, f) {
                    if next.len() < MAX_PREIMAGES && !next.contains(&p) {
                        next.push(p);
                    }
                }
            }
            level = next;
        }
        for x in level {
            if !out.contains(&x) {
                out.push(x);
            }
        }
    }
    // Near misses, for a side no target reached: a filler before or after
    // an argument that reaches one (the caller keeps what the chain, run
    // forward, says is useful).
    let near: Vec<String> = out
        .iter()
        .take(2)
        .flat_map(|x| [format!("{x}{f}"), format!("{f}{x}")])
        .collect();
    for x in near {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// What literal-directed candidates reach for argument `name` of `tool`
/// given its `uses`; `valid` says whether inputSchema accepts a value.
///
/// `extra` are strings to try after the inverted ones (generated from the
/// argument's schema, for a `pattern` the inverted ones miss); like every
/// candidate, one is kept only if it gives the comparisons a truth vector
/// no earlier candidate gave.
pub fn reach(
    name: &str,
    uses: Option<&Uses>,
    extra: &[String],
    mut valid: impl FnMut(&str) -> Result<(), String>,
) -> Reach {
    let empty = Uses::default();
    let u = uses.unwrap_or(&empty);
    let mut r = Reach {
        argument: name.to_string(),
        through: Vec::new(),
        comparisons: u.comparisons.len(),
        candidates: Vec::new(),
        unreached: u.blocked.clone(),
    };
    for c in &u.comparisons {
        for s in &c.steps {
            let n = s.name().to_string();
            if !r.through.contains(&n) {
                r.through.push(n);
            }
        }
    }
    let q = |s: &str| Value::String(s.to_string()).to_string();
    // Each comparison's own candidates, those inputSchema accepts, one per
    // truth vector: every use of the argument is one of these comparisons,
    // so two values with the same vector are the same value to the rules.
    let vector =
        |x: &str| -> Vec<Option<bool>> { u.comparisons.iter().map(|c| c.truth(x)).collect() };
    let mut seen: Vec<Vec<Option<bool>>> = Vec::new();
    // What inputSchema refused (a few), to say why a side is not reached.
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut offer = |x: String, r: &mut Reach| {
        if r.candidates.len() >= MAX_CANDIDATES || r.candidates.contains(&x) {
            return;
        }
        let v = vector(&x);
        if seen.contains(&v) {
            return;
        }
        match valid(&x) {
            Ok(()) => {
                seen.push(v);
                r.candidates.push(x);
            }
            Err(why) => {
                if refused.len() < 4 * MAX_CANDIDATES {
                    refused.push((x, why));
                }
            }
        }
    };
    for c in &u.comparisons {
        for x in invert(c) {
            offer(x, &mut r);
        }
    }
    for x in extra {
        offer(x.clone(), &mut r);
    }
    // The comparisons of one rule body together, where they derive the
    // same way: one string built to pass every test the body needs true.
    let mut groups: BTreeMap<(usize, usize), Vec<&Comparison>> = BTreeMap::new();
    for c in &u.comparisons {
        groups.entry(c.group).or_default().push(c);
    }
    for cs in groups.values().filter(|cs| cs.len() > 1) {
        for x in joint(cs) {
            offer(x, &mut r);
        }
    }
    if r.unreached.is_some() {
        return r;
    }
    // Every comparison true and false, and every group jointly as its
    // statements need, on some candidate.
    for c in &u.comparisons {
        for want in [true, false] {
            if !r.candidates.iter().any(|x| c.truth(x) == Some(want)) {
                let mut why = format!(
                    "no candidate makes `{}` {}",
                    c.text.lines().next().unwrap_or_default(),
                    want ^ c.ne
                );
                if let Some((x, e)) = refused.iter().find(|(x, _)| c.truth(x) == Some(want)) {
                    why.push_str(&format!(" (inputSchema refused {}: {e})", q(x)));
                }
                r.unreached = Some((c.location.clone(), why));
                return r;
            }
        }
    }
    for cs in groups.values().filter(|cs| cs.len() > 1) {
        if !r
            .candidates
            .iter()
            .any(|x| cs.iter().all(|c| c.statement_holds(x)))
        {
            r.unreached = Some((
                cs[1].location.clone(),
                format!(
                    "no candidate makes `{}` and `{}` hold together",
                    cs[0].text.lines().next().unwrap_or_default(),
                    cs[1].text.lines().next().unwrap_or_default()
                ),
            ));
            return r;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses_of(text: &str) -> BTreeMap<String, Uses> {
        let mut e = regorus::Engine::new();
        e.add_policy("p.rego".into(), text.into()).unwrap();
        let modules = crate::rego::modules(&mut e);
        let mut out = BTreeMap::new();
        rego_uses(&modules, Some("t"), &mut out);
        out
    }

    fn reach_of(text: &str) -> Reach {
        let u = uses_of(text);
        reach("q", u.get("q"), &[], |_| Ok(()))
    }

    #[test]
    fn the_issue_example() {
        let r = reach_of(
            r#"package t
import rego.v1
first := lower(trim_space(split(input.arguments.q, " ")[0]))
annotations := {"openWorldHint": true} if first == "copy"
"#,
        );
        assert!(r.unreached.is_none(), "{:?}", r.unreached);
        assert_eq!(r.through, ["split", "trim_space", "lower"]);
        // One per truth vector: "COPY x" is "copy x" to the rule.
        assert_eq!(r.candidates, ["copy x", "x x"]);
    }

    #[test]
    fn inverts_each_step() {
        for body in [
            r#"parts := split(input.arguments.q, "/"); parts[2] == "etc""#,
            r#"trim_prefix(input.arguments.q, "cmd:") == "rm""#,
            r#"startswith(upper(trim(input.arguments.q, "*")), "DROP")"#,
            r#"substring(input.arguments.q, 2, 3) == "abc""#,
            r#"concat("-", ["a", input.arguments.q, "b"]) == "a-x-b""#,
            r#"sprintf("cmd %s!", [input.arguments.q]) == "cmd rm!""#,
            r#"indexof(lower(input.arguments.q), "rm") == 0"#,
            r#"endswith(trim_suffix(input.arguments.q, ".bak"), ".sql")"#,
            r#"lower(input.arguments.q) in {"a", "b"}"#,
            r#"regex.match(`^[a-z]+-prod$`, trim_space(input.arguments.q))"#,
            r#"x := lower(input.arguments.q); x != "safe""#,
            r#"startswith(lower(input.arguments.q), "ab"); endswith(lower(input.arguments.q), "yz")"#,
        ] {
            let r = reach_of(&format!(
                "package t\nimport rego.v1\nannotations := {{\"destructiveHint\": true}} if {{ {body} }}\n"
            ));
            assert!(r.unreached.is_none(), "{body}: {:?}", r.unreached);
            assert!(r.candidates.len() >= 2, "{body}: {r:?}");
        }
    }

    #[test]
    fn names_what_it_cannot_reach() {
        for (body, why) in [
            (
                r#"count(split(input.arguments.q, "/")) > 2"#,
                "which they do not invert",
            ),
            (
                r#"lower(input.arguments.q) == "Copy""#,
                "no candidate makes",
            ),
            (
                r#"base64.decode(input.arguments.q) == "x""#,
                "which they do not invert",
            ),
            (
                r#"p := split(input.arguments.q, " "); p[0] == "a"; p[1] == "b"; p[0] == p[1]"#,
                "`p[0] == p[1]` is no comparison",
            ),
            (
                r#"lower(input.arguments.q) == "ab"; startswith(upper(input.arguments.q), "X")"#,
                "hold together",
            ),
        ] {
            let r = reach_of(&format!(
                "package t\nimport rego.v1\nannotations := {{\"destructiveHint\": true}} if {{ {body} }}\n"
            ));
            let (_, got) = r.unreached.expect(body);
            assert!(got.contains(why), "{body}: {got}");
        }
    }
}
