//! Which tools a caller sees: each tool's `visible` contract rule, evaluated
//! per caller for listing, and a small cache of the answers.
//!
//! `visible` is evaluated with input `{"tool": name, "caller": ...}` (no
//! `arguments`: a listing has none; `caller` absent without one). A tool
//! whose package does not declare `visible` is visible to everyone. One that
//! declares it is visible only when it evaluates to `true`: `false`,
//! undefined (`visible if "ops" in input.caller.claims.groups` for a caller
//! outside `ops`), a value that is not a boolean and an evaluation error all
//! hide the tool; the last two are logged. A tool is never listed by
//! accident.
//!
//! The set of visible tools is a pure function of the catalog snapshot and
//! the caller (policies are deterministic and read nothing else), so it is
//! computed once per caller and kept in a [`Cache`] inside the `Catalog`,
//! keyed by a digest of the caller's canonical JSON and bounded to
//! [`CAPACITY`] callers, the least used going first. Keeping it never changes an answer, only how fast
//! it comes, which is why it does not break "nothing in `catalog` is mutable
//! after build" (ARCHITECTURE.md). A set in which some evaluation timed out
//! (a busy machine, not the policy's answer) is used once and not kept.
//! A catalog in which no tool declares `visible` has no cache and evaluates
//! nothing.

use std::sync::Arc;

use serde_json::Value;

use super::{Catalog, Tool};
use crate::caller::Caller;
use crate::policy::engine as policy;

/// How many callers' sets one catalog keeps.
pub const CAPACITY: usize = 1024;

/// Per tool (in catalog order), whether the caller sees it.
pub type Visible = Arc<[bool]>;

/// Visibility sets by caller digest, the least used first out (quick_cache's
/// S3-FIFO: a caller seen once goes before one that keeps listing).
pub struct Cache {
    sets: quick_cache::sync::Cache<[u8; 32], Visible>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            sets: quick_cache::sync::Cache::new(CAPACITY),
        }
    }
}

impl Cache {
    fn get(&self, key: &[u8; 32]) -> Option<Visible> {
        self.sets.get(key)
    }

    fn insert(&self, key: [u8; 32], set: Visible) {
        self.sets.insert(key, set);
    }

    /// How many callers' sets are kept.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether no set is kept.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// What one tool's `visible` rule says for one caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Visible,
    Hidden,
    /// Hidden because the rule failed or answered something else than a
    /// boolean; the message says which.
    Failed {
        message: String,
        timed_out: bool,
    },
}

impl Tool {
    /// Evaluates this tool's `visible` rule for `caller`. A tool without one
    /// is visible.
    pub fn visibility(&self, caller: Option<&Caller>) -> Verdict {
        let (Some(step), Some(engines)) = (&self.visible, &self.engines) else {
            return Verdict::Visible;
        };
        let pkg = self.policy.as_deref().unwrap_or("");
        match engines.eval([step], policy::listing_input(&self.name, caller)) {
            Ok(mut values) => match values.pop().flatten() {
                Some(Value::Bool(true)) => Verdict::Visible,
                Some(Value::Bool(false)) | None => Verdict::Hidden,
                Some(other) => Verdict::Failed {
                    message: format!(
                        "rule {pkg}.visible must be true or false, got {}",
                        crate::diag::json_kind(&other)
                    ),
                    timed_out: false,
                },
            },
            Err(e) => Verdict::Failed {
                message: match &e.location {
                    Some(l) => format!("{} (at {l})", e.message),
                    None => e.message,
                },
                timed_out: e.timed_out,
            },
        }
    }

    /// Whether the package declares a `visible` rule.
    pub fn has_visible_rule(&self) -> bool {
        self.visible.is_some()
    }
}

impl Catalog {
    /// Per tool, whether `caller` sees it; `None` when every tool is visible
    /// to everyone (no tool declares `visible`), without evaluating anything.
    pub fn visible_set(&self, caller: Option<&Caller>) -> Option<Visible> {
        let cache = self.visibility.as_ref()?;
        let key = caller_key(caller);
        if let Some(set) = cache.get(&key) {
            return Some(set);
        }
        let mut keep = true;
        let set: Visible = self
            .tools
            .iter()
            .map(|t| match t.visibility(caller) {
                Verdict::Visible => true,
                Verdict::Hidden => false,
                Verdict::Failed { message, timed_out } => {
                    tracing::error!(
                        tool = %t.name,
                        caller = caller.map_or("-", |c| c.subject.as_str()),
                        revision = self.short_revision(),
                        "visible failed, the tool is hidden: {message}"
                    );
                    keep &= !timed_out;
                    false
                }
            })
            .collect();
        if keep {
            cache.insert(key, set.clone());
        }
        Some(set)
    }

    /// Whether [`Catalog::visible_set`] for `caller` evaluates nothing: no
    /// tool declares `visible`, or the caller's set is kept. A server that
    /// must not be held up by a slow `visible` rule evaluates the set
    /// elsewhere when not (`protocol::pace::visible_set`).
    pub fn visibility_known(&self, caller: Option<&Caller>) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|cache| cache.get(&caller_key(caller)).is_some())
    }

    /// The tools `caller` sees, in declaration order.
    pub fn tools_visible_to<'a>(
        &'a self,
        caller: Option<&Caller>,
    ) -> impl Iterator<Item = &'a Tool> + 'a {
        // A caller the catalog's caller schema refuses sees nothing.
        let refused = self.caller_problem(caller).is_some();
        let set = if refused {
            Some(self.nothing_visible())
        } else {
            self.visible_set(caller)
        };
        self.tools_in(set)
    }

    /// The set that shows no tool (a caller the caller schema refuses).
    pub fn nothing_visible(&self) -> Visible {
        vec![false; self.tools.len()].into()
    }

    /// The tools `set` (this catalog's [`Catalog::visible_set`] for some
    /// caller) shows, in declaration order. The caller schema is the
    /// caller of this function's business ([`Catalog::caller_problem`]).
    pub fn tools_in<'a>(&'a self, set: Option<Visible>) -> impl Iterator<Item = &'a Tool> + 'a {
        self.tools
            .iter()
            .enumerate()
            .filter(move |(i, _)| set.as_ref().is_none_or(|s| s[*i]))
            .map(|(_, t)| t)
    }

    /// Tool `name` if `caller` sees it: `None` for an unknown tool and for a
    /// hidden one alike, so that a hidden tool answers as an unknown one.
    /// A caller whose claims the catalog's caller schema refuses sees no
    /// tool (see [`Catalog::lookup_as`] for the refusal itself).
    pub fn tool_as(&self, name: &str, caller: Option<&Caller>) -> Option<&Tool> {
        if self.caller_problem(caller).is_some() {
            return None;
        }
        self.seen_by(name, caller)
    }

    /// [`Catalog::tool_as`] for a caller already held against the caller
    /// schema ([`Catalog::lookup_as`]), so that it is validated once.
    pub(super) fn seen_by(&self, name: &str, caller: Option<&Caller>) -> Option<&Tool> {
        self.by_name.get(name)?;
        self.tool_in(name, self.visible_set(caller).as_ref())
    }

    /// Tool `name` if `set` (this catalog's [`Catalog::visible_set`] for
    /// the caller) shows it, as [`Catalog::tool_as`] (the caller schema is
    /// the caller of this function's business).
    pub fn tool_in(&self, name: &str, set: Option<&Visible>) -> Option<&Tool> {
        let i = *self.by_name.get(name)?;
        match set {
            Some(set) if !set[i] => None,
            _ => Some(&self.tools[i]),
        }
    }

    /// How many callers' visibility sets this catalog keeps (0 without a
    /// `visible` rule).
    pub fn visibility_cached(&self) -> usize {
        self.visibility.as_ref().map_or(0, Cache::len)
    }
}

/// The cache key of `caller`: sha256 of its canonical JSON (object keys
/// sorted at every level), or of `null` without one.
fn caller_key(caller: Option<&Caller>) -> [u8; 32] {
    crate::canonical::sha256(&caller.map_or(Value::Null, Caller::to_value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller(claims: Value) -> Caller {
        Caller {
            subject: "alice".into(),
            issuer: "local".into(),
            claims: claims.as_object().unwrap().clone(),
            spelled: Vec::new(),
        }
    }

    /// A catalog of tool `a` (policy `p` when `rego` is given) and tool `b`
    /// (no policy).
    fn catalog(rego: Option<&str>) -> Catalog {
        crate::catalog::two_tool_catalog("{type: object}", rego)
    }

    fn names<'a>(c: &'a Catalog, caller: Option<&Caller>) -> Vec<&'a str> {
        c.tools_visible_to(caller)
            .map(|t| t.name.as_str())
            .collect()
    }

    #[test]
    fn without_a_visible_rule_nothing_is_evaluated_or_kept() {
        let c = catalog(Some("meta := {\"x\": 1}"));
        let ops = caller(json!({"groups": ["ops"]}));
        assert!(c.visible_set(Some(&ops)).is_none());
        assert_eq!(names(&c, Some(&ops)), ["a", "b"]);
        assert_eq!(names(&c, None), ["a", "b"]);
        assert_eq!(c.visibility_cached(), 0);
    }

    #[test]
    fn a_declared_rule_shows_the_tool_only_when_true_once_per_caller() {
        let c = catalog(Some("visible if \"ops\" in input.caller.claims.groups"));
        let ops = caller(json!({"groups": ["ops"]}));
        let dev = caller(json!({"groups": ["dev"]}));
        assert_eq!(names(&c, Some(&ops)), ["a", "b"]);
        assert_eq!(names(&c, Some(&dev)), ["b"]);
        assert_eq!(names(&c, None), ["b"]);
        assert!(c.tool_as("a", Some(&dev)).is_none());
        assert!(c.tool_as("a", Some(&ops)).is_some());
        assert!(c.tool_as("nope", Some(&ops)).is_none());
        assert_eq!(c.visibility_cached(), 3, "one set per caller");
        names(&c, Some(&ops));
        assert_eq!(c.visibility_cached(), 3);
    }

    #[test]
    fn a_rule_that_reads_arguments_is_undefined_and_hides() {
        // `visible if input.arguments` is refused when the catalog loads
        // (rego-undefined-input); read through a variable, which that check
        // does not follow, it is still undefined at run time.
        let c = catalog(Some("visible if {\n\tx := input\n\tx.arguments\n}"));
        assert_eq!(names(&c, None), ["b"]);
    }

    #[test]
    fn a_non_boolean_or_failing_rule_hides() {
        let c = catalog(Some("visible := 1"));
        assert_eq!(names(&c, None), ["b"]);
        assert!(matches!(
            c.tools()[0].visibility(None),
            Verdict::Failed { ref message, timed_out: false } if message.contains("must be true or false, got a number")
        ));
        let c = catalog(Some(
            "visible := true if input.caller\n\nvisible := false if input.caller",
        ));
        let ops = caller(json!({"groups": ["ops"]}));
        assert_eq!(names(&c, Some(&ops)), ["b"]);
        assert!(matches!(
            c.tools()[0].visibility(Some(&ops)),
            Verdict::Failed { .. }
        ));
    }

    #[test]
    fn the_key_does_not_depend_on_claim_order() {
        let a = caller(json!({"groups": ["ops"], "team": {"x": 1, "y": 2}}));
        let b = caller(json!({"team": {"y": 2, "x": 1}, "groups": ["ops"]}));
        let c = caller(json!({"groups": ["dev"], "team": {"x": 1, "y": 2}}));
        assert_eq!(caller_key(Some(&a)), caller_key(Some(&b)));
        assert_ne!(caller_key(Some(&a)), caller_key(Some(&c)));
        assert_ne!(caller_key(Some(&a)), caller_key(None));
    }

    #[test]
    fn the_cache_keeps_at_most_its_capacity_the_used_survive() {
        fn key(i: usize) -> [u8; 32] {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            key
        }
        let cache = Cache::default();
        let set: Visible = Arc::from(vec![true]);
        // Full of callers seen once.
        for i in 0..CAPACITY * 2 {
            cache.insert(key(i), set.clone());
        }
        assert!(cache.len() <= CAPACITY, "{}", cache.len());
        // Two callers arrive together: `used` keeps listing, `once` does
        // not; then three times the capacity of callers seen once each.
        // Oldest-first would evict both; by use, `used` stays.
        let (used, once) = (key(usize::MAX), key(usize::MAX - 1));
        cache.insert(used, set.clone());
        cache.insert(once, set.clone());
        for i in CAPACITY * 2..CAPACITY * 5 {
            cache.insert(key(i), set.clone());
            if i % 64 == 0 {
                assert!(cache.get(&used).is_some(), "evicted at {i}");
            }
        }
        assert!(cache.len() <= CAPACITY, "{}", cache.len());
        assert!(cache.get(&used).is_some(), "the caller in use stays");
        assert!(cache.get(&once).is_none(), "the one seen once went");
        assert!(
            cache.get(&key(CAPACITY * 5 - 1)).is_some(),
            "the newest is kept"
        );
    }
}
