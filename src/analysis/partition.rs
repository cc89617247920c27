//! A finite partition of a free string argument, for the worst-case proof.
//!
//! A string argument `x` whose every use that can change the annotations is
//! one of `x == "lit"`, `x != "lit"`, `x in {"a", "b"}` (or a YAML `when`
//! value), `startswith(x, "lit")`, `endswith(x, "lit")` or
//! `contains(x, "lit")` can only influence the decision through the truth
//! of those predicates. `x` may be the argument itself
//! (`input.arguments.x`), a variable bound to exactly it in the same rule
//! (`p := input.arguments.x`) or a rule of the package bound to exactly it
//! (`path := input.arguments.path`, without a body). Any other use (passed
//! to another builtin or function, used as a key, compared by order, read as
//! part of a larger document…) leaves the argument unpartitioned, and the
//! proof falls back to sampling.
//!
//! Representatives, one per achievable truth vector: every equality literal
//! itself, plus, for every prefix `p` in {none} ∪ startswith-literals, every
//! subset `C` of the contains-literals and every suffix `s` in {none} ∪
//! endswith-literals, the string `p SEP c1 SEP … SEP s`, where `SEP` is a
//! character that occurs in no literal.
//!
//! Why this is complete: take any string `w`. If it equals an equality
//! literal, that literal is a representative. Otherwise let `p` be the
//! longest prefix literal `w` starts with, `s` the longest suffix literal it
//! ends with, and `C` the contains-literals it contains, and `r` the
//! candidate built from them. No literal contains `SEP`, so any literal
//! occurring in, starting or ending `r` lies inside one piece; every piece is
//! a substring (`p` a prefix, `s` a suffix) of `w`, so `r` makes a predicate
//! true only if `w` does. Conversely a prefix literal of `w` is a prefix of
//! the longest one `p` (both are prefixes of `w`), so of `r`; likewise for
//! suffixes, and every contains-literal of `w` is a piece of `r`. `r` holds
//! `SEP`, so it equals no literal, as `w` does not. So `r` and `w` make
//! every predicate agree, and the decision cannot tell them apart.
//!
//! The representatives the proof resolves must be values inputSchema
//! accepts, and a schema's `pattern` or `minLength` often refuses the
//! canonical `r` (`"x"` is no absolute path). So each class is represented
//! by the first candidate the schema accepts among: `r` with each filler
//! character in turn as `SEP` (the first one repeated up to `minLength`),
//! then with one more character before (no prefix) or after (no suffix),
//! then strings generated from the `pattern`, then the pieces with no
//! separator at all. A candidate stands for the
//! class only when its truth vector, computed, is the canonical `r`'s: the
//! completeness argument above is about the canonical representatives, and
//! a candidate with the same vector is, for the decision, the same value.
//! A class no candidate fits fails the partition: it may hold values the
//! schema accepts (a pattern can allow a class without allowing the shapes
//! tried), so it is never dropped.
//!
//! Case folds: when every such use compares `lower(x)` instead of `x`
//! (directly, through a variable `o := lower(input.arguments.x)` or a rule
//! `owner := lower(input.arguments.owner)`; likewise `upper`), the decision
//! depends on `x` only through the predicates on `y = lower(x)`, and the
//! partition is of `y`: every `y` has the vector of some canonical
//! representative, and a candidate `r` stands for a class when the vector
//! of `lower(r)` (computed as regorus computes it) is the class's. A
//! constant `lower(x)` can never hold (one with an ASCII capital: no
//! character lowercases to one; for `upper`, an ASCII small letter) makes
//! its predicate false for every `x` and is left out; an equality constant
//! that is not its own fold has no representative, and the argument is not
//! partitioned. A mix of folded and unfolded uses of one argument (or of
//! `lower` and `upper`) is not followed: the predicates would be on two
//! strings, `x` and `lower(x)`, whose truths are linked in ways the
//! construction above does not track.
//!
//! Caller claims (`input.caller.claims.x`) are partitioned the same way
//! ([`claim_uses`], [`partition_claim`]) for the proof's caller classes
//! (`analysis/caller_classes`), which also need the constants tested for
//! membership in an array claim (`"ops" in input.caller.claims.groups`);
//! for claims a plain `import data.PKG` is followed rather than taken as
//! reading a bound rule as part of a document.
//!
//! Which arguments the annotations depend on, and evaluating the
//! representatives, are the proof's (`analysis/proof`).
//!
//! This file holds what a use and a partition are ([`Uses`], [`Partition`])
//! and the entry points; reading the rules for the uses is `walk` (the Rego
//! walk and its aliases), building the classes and choosing a
//! representative of each is `classes`. Neither uses the other.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalog::{Tool, schema};
use crate::diag::Location;

mod classes;
#[cfg(test)]
mod tests;
mod walk;

use classes::partition_in;
use walk::rego_uses;

/// What the predicates compare: the argument itself, `lower(x)` or
/// `upper(x)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Fold {
    #[default]
    None,
    Lower,
    Upper,
}

impl Fold {
    /// `x` as the rules see it, folded as regorus folds it.
    pub fn apply(self, x: &str) -> String {
        match self {
            Fold::None => x.to_string(),
            Fold::Lower => x.to_lowercase(),
            Fold::Upper => x.to_uppercase(),
        }
    }

    pub fn name(self) -> Option<&'static str> {
        match self {
            Fold::None => None,
            Fold::Lower => Some("lower"),
            Fold::Upper => Some("upper"),
        }
    }

    /// Whether a folded string can hold `lit` at all: `lower(x)` holds no
    /// ASCII capital (no character's lowercase mapping is one), `upper(x)`
    /// no ASCII small letter.
    fn can_hold(self, lit: &str) -> bool {
        match self {
            Fold::None => true,
            Fold::Lower => !lit.chars().any(|c| c.is_ascii_uppercase()),
            Fold::Upper => !lit.chars().any(|c| c.is_ascii_lowercase()),
        }
    }
}

/// How the rules use one string argument.
#[derive(Debug, Clone, Default)]
pub struct Uses {
    /// What the predicates compare, once one is seen.
    pub fold: Option<Fold>,
    pub equals: Vec<String>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub contains: Vec<String>,
    /// Constants tested for membership in it (`"ops" in
    /// input.caller.claims.groups`): followed for caller claims only
    /// ([`claim_uses`]), with where the first is.
    pub members: Vec<String>,
    pub members_at: Option<Location>,
    /// A use that is none of the recognized predicates, if any: where and why.
    pub blocked: Option<(Location, String)>,
}

/// What the analysis follows: a tool argument (`input.arguments.x`) or a
/// caller claim (`input.caller.claims.x`; `input.caller.subject` and
/// `input.caller.issuer` are the claims `sub` and `iss`, which a caller
/// always carries alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Arguments,
    Claims,
}

impl Root {
    /// The argument or claim `p` starts with, and how many components name it.
    fn named(self, p: &[String]) -> Option<(String, usize)> {
        match (self, p) {
            (Root::Arguments, [i, a, n, ..]) if i == "input" && a == "arguments" && n != "[_]" => {
                Some((n.clone(), 3))
            }
            (Root::Claims, [i, c, k, n, ..])
                if i == "input" && c == "caller" && k == "claims" && n != "[_]" =>
            {
                Some((n.clone(), 4))
            }
            (Root::Claims, [i, c, f, ..])
                if i == "input" && c == "caller" && (f == "subject" || f == "issuer") =>
            {
                Some((if f == "subject" { "sub" } else { "iss" }.to_string(), 3))
            }
            _ => None,
        }
    }
}

/// The classes of one argument and a representative of each.
#[derive(Debug, Clone)]
pub struct Partition {
    pub argument: String,
    pub fold: Fold,
    pub equals: Vec<String>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub contains: Vec<String>,
    pub representatives: Vec<String>,
}

impl Partition {
    /// `path: 4 classes from startswith "/etc", == "x"`.
    pub fn describe(&self) -> String {
        let mut from: Vec<String> = Vec::new();
        let q = |s: &String| serde_json::to_string(s).unwrap_or_default();
        from.extend(self.equals.iter().map(|l| format!("== {}", q(l))));
        from.extend(self.prefixes.iter().map(|l| format!("startswith {}", q(l))));
        from.extend(self.suffixes.iter().map(|l| format!("endswith {}", q(l))));
        from.extend(self.contains.iter().map(|l| format!("contains {}", q(l))));
        let n = self.representatives.len();
        format!(
            "{}: {n} class{}{}",
            match self.fold.name() {
                Some(f) => format!("{f}({})", self.argument),
                None => self.argument.clone(),
            },
            if n == 1 { "" } else { "es" },
            if from.is_empty() {
                String::new()
            } else {
                format!(" from {}", from.join(", "))
            }
        )
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "argument": self.argument,
            "classes": self.representatives.len(),
            "equals": self.equals,
            "startswith": self.prefixes,
            "endswith": self.suffixes,
            "contains": self.contains,
            "representatives": self.representatives,
        });
        // `fold` only when the predicates compare `lower(x)` or `upper(x)`.
        if let (Some(f), Value::Object(m)) = (self.fold.name(), &mut v) {
            m.insert("fold".to_string(), json!(f));
        }
        v
    }
}

fn add(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// How the rules that can change `tool`'s annotations use each argument
/// (YAML `when` values and Rego).
pub fn uses(tool: &Tool) -> BTreeMap<String, Uses> {
    let mut out: BTreeMap<String, Uses> = BTreeMap::new();
    for rule in &tool.rules {
        for (k, v) in &rule.when {
            let u = out.entry(k.clone()).or_default();
            u.fold = Some(Fold::None);
            // Values that are not strings never equal a string.
            match v {
                Value::Array(vs) => vs
                    .iter()
                    .filter_map(Value::as_str)
                    .for_each(|s| add(&mut u.equals, s.to_string())),
                Value::String(s) => add(&mut u.equals, s.clone()),
                _ => {}
            }
        }
    }
    if tool.is_resolvable() {
        let modules = tool.modules();
        rego_uses(&modules, tool.policy.as_deref(), Root::Arguments, &mut out);
    }
    out
}

/// How the rules that can change `tool`'s annotations use each caller
/// claim, as [`uses`] reads arguments, plus membership tests (`"ops" in
/// input.caller.claims.groups`), which an array claim's classes follow.
pub fn claim_uses(tool: &Tool) -> BTreeMap<String, Uses> {
    let mut out = BTreeMap::new();
    if tool.is_resolvable() {
        let modules = tool.modules();
        rego_uses(&modules, tool.policy.as_deref(), Root::Claims, &mut out);
    }
    out
}

/// The partition of string argument `name` of `tool`, or why there is none
/// (with the use that prevents it, if one does).
pub fn partition(
    tool: &Tool,
    name: &str,
    uses: Option<&Uses>,
) -> Result<Partition, (String, Option<Location>)> {
    partition_of(tool, name, uses).map_err(|why| {
        let at = uses
            .and_then(|u| u.blocked.as_ref())
            .map(|(at, _)| at.clone());
        (why, at)
    })
}

fn partition_of(tool: &Tool, name: &str, uses: Option<&Uses>) -> Result<Partition, String> {
    let props = schema::properties(&tool.input_schema);
    let s = props.and_then(|p| p.get(name));
    // Every representative must be a value inputSchema accepts.
    partition_in(name, s, uses, validator(tool, name))
}

/// The partition of the string caller claim `name`, whose schema is
/// `claim` (its representatives valid against it), or why there is none.
pub fn partition_claim(
    name: &str,
    claim: &Value,
    uses: Option<&Uses>,
) -> Result<Partition, (String, Option<Location>)> {
    let compiled = jsonschema::validator_for(claim).map_err(|e| (e.to_string(), None))?;
    let valid = |r: &str| -> Result<(), String> {
        match compiled.iter_errors(&Value::String(r.to_string())).next() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    };
    let at = uses.and_then(|u| {
        u.blocked
            .as_ref()
            .map(|(at, _)| at.clone())
            .or_else(|| u.members_at.clone())
    });
    if let Some(u) = uses
        && u.blocked.is_none()
        && !u.members.is_empty()
    {
        return Err((
            "a rule tests it for a member (`\"v\" in ...`), as if it were an array".to_string(),
            at,
        ));
    }
    partition_in(name, Some(claim), uses, valid).map_err(|why| (why, at))
}

/// Whether inputSchema accepts `r` as argument `name`, the others at
/// sample values (errors elsewhere are not this argument's); why not.
pub fn validator<'a>(tool: &'a Tool, name: &'a str) -> impl FnMut(&str) -> Result<(), String> + 'a {
    let mut base = match schema::sample(&tool.input_schema) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
    move |r: &str| -> Result<(), String> {
        base.insert(name.to_string(), Value::String(r.to_string()));
        let errors = tool.validate_complete(&Value::Object(base.clone()));
        match errors.iter().find(|e| {
            e.instance_path == pointer || e.instance_path.starts_with(&format!("{pointer}/"))
        }) {
            Some(e) => Err(e.message.clone()),
            None => Ok(()),
        }
    }
}
