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
//!
//! This file holds what a comparison and a use are ([`Comparison`],
//! [`Uses`]), what was reached ([`Reach`]) and inverting the comparisons
//! into candidates (`invert`, `joint`, [`reach`]); the steps of a
//! derivation and the tests on it, each run forward and inverted, are
//! `steps` ([`Step`], [`Test`]); reading a derivation off an expression is
//! `chain` (through the rule's variables and the package's body-less
//! rules); reading the rules for the comparisons is `walk` (the Rego walk).
//! `walk` uses `chain` and `steps`, `chain` uses `steps`, never the other
//! way.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::catalog::Tool;
use crate::diag::Location;

mod chain;
mod steps;
#[cfg(test)]
mod tests;
mod walk;

pub use steps::{Step, Test};
use walk::rego_uses;

/// The most candidates one argument gets.
pub const MAX_CANDIDATES: usize = 32;
/// The most preimages kept per step while inverting.
const MAX_PREIMAGES: usize = 8;

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
