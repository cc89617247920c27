//! `regent review`'s model: each tool's decision table, computed from the
//! catalog `check` built, and the catalog-wide findings of `check`.
//!
//! For every tool: its listing (the worst case), then one row per argument
//! class the worst-case proof enumerates (`catalog/proof`: enums, booleans,
//! partitioned strings; for a tool it does not cover, the combinations
//! `check` sampled, marked with the proof's warning) and, for a tool whose
//! policy reads the caller, per caller class (no caller, then each caller
//! given, such as those of the catalog's test cases). Each row holds the
//! decision a call with those arguments gets, with the rule (file:line)
//! behind each field that differs from the listing (`catalog/explain`).
//!
//! Rows are keyed by tool, argument class and caller class ([`RowKey`]), so
//! that two reviews (a catalog and its base) can be compared row by row.
//! [`diff`] compares them (`regent review --base`). This module computes;
//! it knows no Markdown or HTML ([`markdown`] and [`html`] render it), no
//! git (the command reads a base revision) and runs nothing `check` does
//! not (it takes check's [`Checked`]).

pub mod diff;
pub mod html;
pub mod markdown;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::catalog::explain::{self, Producer};
use crate::catalog::hints::{Hint, Hints};
use crate::catalog::proof::{self, Outcome, Proof};
use crate::catalog::visibility::Verdict;
use crate::catalog::{Catalog, ResolveError, Tool};
use crate::check::Checked;
use crate::diag::Severity;
use crate::rego;

/// The most rows one tool's table holds; the rest are counted
/// ([`ToolTable::omitted`]). The proof may enumerate up to
/// [`proof::LIMIT`] combinations, more than anyone reads.
pub const MAX_ROWS: usize = 256;

/// A whole review.
pub struct Review {
    /// The catalog paths as given.
    pub paths: Vec<String>,
    /// Tools declared, whether or not they compiled.
    pub declared: usize,
    pub tools: Vec<ToolTable>,
    /// `check`'s findings, in its order.
    pub findings: Vec<Finding>,
}

/// One diagnostic of `check`.
pub struct Finding {
    pub severity: Severity,
    pub code: &'static str,
    pub location: String,
    pub message: String,
    pub help: Option<String>,
}

/// What the proof says about a tool's table.
pub enum Coverage {
    /// No rules and no policy: every call gets the listing.
    ListedOnly,
    /// Every combination was resolved and none is riskier than listed.
    Proved { combinations: usize },
    /// Some combinations are riskier than listed or fail.
    Refuted { combinations: usize },
    /// Some combinations were refused by inputSchema with sample values.
    Partial {
        combinations: usize,
        rejected: usize,
    },
    /// Not covered: the rows are samples; `warning` is check's text.
    NotCovered { warning: String },
}

/// One tool: its listing and its rows.
pub struct ToolTable {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub location: String,
    pub listed: Hints,
    pub listed_meta: Map<String, Value>,
    pub listed_security_schemes: Option<Vec<Value>>,
    pub coverage: Coverage,
    /// The arguments a row's class is made of (those the proof varies).
    pub arguments: Vec<String>,
    /// How free string arguments were partitioned (`path: 3 classes from …`).
    pub partitions: Vec<String>,
    /// The declared arguments outside the class, held at sample values.
    pub held: Vec<String>,
    /// Whether rows are per caller class (the policy reads the caller).
    pub per_caller: bool,
    pub rows: Vec<Row>,
    /// Rows beyond [`MAX_ROWS`], left out.
    pub omitted: usize,
}

/// What tells a row apart across two reviews of one catalog.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    pub tool: String,
    /// The class's arguments as canonical JSON (keys sorted; absent ones left out).
    pub arguments: String,
    /// The caller as canonical JSON, `""` for no caller.
    pub caller: String,
}

/// A class's arguments, in [`ToolTable::arguments`] order; `None` is absent.
pub type Class = Vec<(String, Option<Value>)>;

/// One argument class, for one caller class.
pub struct Row {
    pub key: RowKey,
    pub class: Class,
    /// Every argument the row was resolved with (the others at sample values).
    pub arguments: Value,
    /// Who calls, as a short label; `None` without a caller.
    pub caller: Option<String>,
    pub outcome: RowOutcome,
    /// Other values of the class (the catalog's test cases' arguments)
    /// whose `deny` reasons, or whether a `confirm` is asked, differ from
    /// the representative's.
    pub others: Vec<Other>,
}

/// Another value of a row's class and what it is denied or asked.
pub struct Other {
    /// The arguments that differ from the row's, `path="../x"`.
    pub arguments: String,
    /// Its deny reasons, when they differ (else empty).
    pub deny: Vec<String>,
    /// Its question, or `(asks nothing)`, when one of the two asks and
    /// the other does not.
    pub confirm: Option<String>,
}

/// What a call of the row gets.
pub enum RowOutcome {
    /// The caller does not see the tool (`visible`); `why` when the rule failed.
    Hidden {
        why: Option<String>,
    },
    /// inputSchema refuses these arguments.
    Invalid(String),
    /// The policy fails: a client gets an internal error.
    Failed(String),
    /// The caller's claims do not match the catalog's caller schema: it
    /// gets no decision (`ResolveError::CallerClaimsInvalid`), the reason.
    CallerRefused(String),
    Decided(Box<Decision>),
}

/// The decision for a row, each field with what produced it.
pub struct Decision {
    /// The four hints, in [`Hint::ALL`] order.
    pub hints: Vec<HintCell>,
    /// Annotations beyond the four, `_meta` keys and `securitySchemes`
    /// that differ from the listing.
    pub fields: Vec<Field>,
    /// Each reason a call is refused for.
    pub deny: Vec<Field>,
    /// The question asked before a call runs.
    pub confirm: Option<Field>,
}

/// One hint of a decision.
pub struct HintCell {
    pub hint: Hint,
    pub value: bool,
    pub listed: bool,
    /// What set it, when it differs from the listing.
    pub by: Vec<String>,
}

impl HintCell {
    /// Safer than listed (what a resolution is for).
    pub fn safer(&self) -> bool {
        self.value != self.listed && self.value == self.hint.safe_value()
    }

    /// Riskier than listed: a client gets an error for this call.
    pub fn riskier(&self) -> bool {
        self.value != self.listed && self.value != self.hint.safe_value()
    }
}

/// A field of a decision and what produced it.
pub struct Field {
    /// `annotations.privateHint`, `_meta.region`, `securitySchemes`, `deny`, `confirm`.
    pub name: String,
    pub value: Value,
    pub listed: Option<Value>,
    pub by: Vec<String>,
}

impl Decision {
    pub fn denied(&self) -> bool {
        !self.deny.is_empty()
    }

    /// Any hint riskier than listed.
    pub fn riskier(&self) -> bool {
        self.hints.iter().any(HintCell::riskier)
    }

    /// What set each field that differs from the listing, fields set by the
    /// same rules together, in field order: `(["readOnlyHint",
    /// "destructiveHint"], "yaml rule 1 (file:30:9)")`.
    pub fn set_by(&self) -> Vec<(Vec<String>, String)> {
        let mut out: Vec<(Vec<String>, String)> = Vec::new();
        let hints = self
            .hints
            .iter()
            .filter(|h| !h.by.is_empty())
            .map(|h| (h.hint.key().to_string(), h.by.join("; ")));
        let fields = self
            .fields
            .iter()
            .chain(&self.deny)
            .chain(&self.confirm)
            .map(|f| {
                let who = if f.by.is_empty() {
                    "(no rule)".to_string()
                } else {
                    f.by.join("; ")
                };
                (f.name.clone(), who)
            });
        for (field, who) in hints.chain(fields) {
            match out.iter_mut().find(|(_, w)| *w == who) {
                Some((fs, _)) => {
                    if !fs.contains(&field) {
                        fs.push(field);
                    }
                }
                None => out.push((vec![field], who)),
            }
        }
        out
    }

    /// Any hint safer than listed.
    pub fn safer(&self) -> bool {
        self.hints.iter().any(HintCell::safer)
    }
}

/// Builds the review of what `checked` holds. `callers` are the caller
/// classes besides "no caller" (the catalog's test-case callers, or a
/// declared caller schema's classes).
pub fn build(paths: &[String], checked: &Checked, callers: &[Caller]) -> Review {
    let report = &checked.report;
    let findings: Vec<Finding> = report
        .diagnostics
        .iter()
        .map(|d| Finding {
            severity: d.severity,
            code: d.code,
            location: d.location.to_string(),
            message: d.message.clone(),
            help: d.help.clone(),
        })
        .collect();
    let mut tools = Vec::new();
    if let Some(catalog) = &checked.catalog {
        let proofs: BTreeMap<&str, &Proof> =
            report.proofs.iter().map(|p| (p.tool.as_str(), p)).collect();
        let rows: Vec<ToolTable> = crate::par::map_ordered(catalog.tools(), 16, |tool| {
            table(
                catalog,
                tool,
                proofs.get(tool.name.as_str()).copied(),
                checked.sampled.get(&tool.name),
                checked.cases.get(&tool.name).map(Vec::as_slice),
                callers,
                &findings,
            )
        });
        tools = rows;
    }
    Review {
        paths: paths.to_vec(),
        declared: report.tools,
        tools,
        findings,
    }
}

fn table(
    catalog: &Catalog,
    tool: &Tool,
    proof: Option<&Proof>,
    sampled: Option<&Vec<Value>>,
    cases: Option<&[Value]>,
    callers: &[Caller],
    findings: &[Finding],
) -> ToolTable {
    let mut t = ToolTable {
        name: tool.name.clone(),
        title: tool.title.clone(),
        description: tool.description.clone(),
        location: tool.location.to_string(),
        listed: tool.listed,
        listed_meta: tool.meta.clone(),
        listed_security_schemes: tool.security_schemes.clone(),
        coverage: Coverage::ListedOnly,
        arguments: Vec::new(),
        partitions: Vec::new(),
        held: Vec::new(),
        per_caller: false,
        rows: Vec::new(),
        omitted: 0,
    };
    let Some(proof) = proof.filter(|_| tool.is_resolvable()) else {
        // Nothing to resolve: one row, the listing, unless `visible`
        // hides the tool from someone.
        t.per_caller = tool.has_visible_rule() && !callers.is_empty();
        let args = crate::catalog::schema::sample(&tool.input_schema);
        for caller in caller_classes(t.per_caller, callers) {
            t.rows.push(Row {
                key: key(tool, "{}".to_string(), caller),
                class: Vec::new(),
                arguments: args.clone(),
                caller: caller.map(label),
                others: Vec::new(),
                outcome: match tool.visibility(caller) {
                    Verdict::Visible => RowOutcome::Decided(Box::new(listed_decision(tool))),
                    v => hidden(v),
                },
            });
        }
        return t;
    };
    t.arguments = proof.arguments.clone();
    t.partitions = proof.partitions.values().map(|p| p.describe()).collect();
    t.held = crate::catalog::schema::properties(&tool.input_schema)
        .map(|p| {
            p.keys()
                .filter(|k| !proof.arguments.contains(k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    t.coverage = match &proof.outcome {
        Outcome::Proved { .. } => Coverage::Proved {
            combinations: proof.combinations,
        },
        Outcome::Refuted { .. } => Coverage::Refuted {
            combinations: proof.combinations,
        },
        Outcome::Partial { rejected, .. } => Coverage::Partial {
            combinations: proof.combinations,
            rejected: *rejected,
        },
        Outcome::NotCovered { reason, .. } => {
            // check's own warning, as it printed it.
            let prefix = format!("the worst-case proof does not cover `{}`", tool.name);
            let warning = findings
                .iter()
                .find(|f| f.code == "proof-not-covered" && f.message.starts_with(&prefix))
                .map(|f| f.message.clone())
                .unwrap_or_else(|| format!("{prefix}: {reason}"));
            Coverage::NotCovered { warning }
        }
    };
    let combos: Vec<Value> = match &proof.outcome {
        Outcome::NotCovered { .. } => sampled.cloned().unwrap_or_default(),
        _ => {
            proof::combinations_with(tool, &proof.arguments, &proof.partitions).unwrap_or_default()
        }
    };
    t.per_caller = !callers.is_empty()
        && (tool.has_visible_rule()
            || (tool.policy.is_some() && rego::reads_caller(&tool.modules())));
    // One row per class: samples that agree on the class's arguments
    // (differing in arguments no rule reads) are one class.
    let mut seen = std::collections::BTreeSet::new();
    let classes: Vec<(String, Class, Value)> = combos
        .into_iter()
        .filter_map(|args| {
            let class: Class = proof
                .arguments
                .iter()
                .map(|a| (a.clone(), args.get(a).cloned()))
                .collect();
            let k = class_key(&class);
            seen.insert(k.clone()).then_some((k, class, args))
        })
        .collect();
    let callers_here = caller_classes(t.per_caller, callers);
    // The catalog's test-case arguments, by the class they fall in.
    let mut own: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    let mut distinct = std::collections::BTreeSet::new();
    for args in cases.unwrap_or_default() {
        if let Some(class) = class_of(proof, args)
            && distinct.insert(canonical(args).to_string())
        {
            own.entry(class_key(&class)).or_default().push(args);
        }
    }
    for (k, class, args) in classes {
        for &caller in &callers_here {
            if t.rows.len() >= MAX_ROWS {
                t.omitted += 1;
                continue;
            }
            let outcome = decide(catalog, tool, &args, caller);
            let others = match (&outcome, own.get(&k)) {
                (RowOutcome::Decided(rep), Some(own)) => {
                    others(catalog, tool, &args, rep, own, caller)
                }
                _ => Vec::new(),
            };
            t.rows.push(Row {
                key: key(tool, k.clone(), caller),
                class: class.clone(),
                outcome,
                arguments: args.clone(),
                caller: caller.map(label),
                others,
            });
        }
    }
    t
}

/// The test-case arguments `own` of a row's class whose `deny` reasons, or
/// whether a `confirm` is asked, differ from the representative's (`rep`,
/// for `args`; a question worded after the arguments is alike): the
/// classes are drawn for the annotations, so other values of a class may
/// be denied (`..` in a path) where its representative is not.
fn others(
    catalog: &Catalog,
    tool: &Tool,
    args: &Value,
    rep: &Decision,
    own: &[&Value],
    caller: Option<&Caller>,
) -> Vec<Other> {
    let reasons = |d: &Decision| -> Vec<String> { d.deny.iter().map(|f| show(&f.value)).collect() };
    let rep_deny = reasons(rep);
    let mut out = Vec::new();
    for &o in own {
        if o == args {
            continue;
        }
        let RowOutcome::Decided(d) = decide(catalog, tool, o, caller) else {
            continue;
        };
        let deny = reasons(&d);
        // A denied call is never asked: its missing question is no news.
        let asks = !d.denied() && d.confirm.is_some() != rep.confirm.is_some();
        if deny == rep_deny && !asks {
            continue;
        }
        out.push(Other {
            arguments: differing(args, o),
            deny: if deny == rep_deny { Vec::new() } else { deny },
            confirm: asks.then(|| {
                d.confirm
                    .as_ref()
                    .map_or("(asks nothing)".to_string(), |c| show(&c.value))
            }),
        });
    }
    out
}

/// The class `args` falls in: each of the proof's arguments as it is,
/// a partitioned string as the representative that meets the same
/// predicates; `None` when a partitioned argument is not a string.
fn class_of(proof: &Proof, args: &Value) -> Option<Class> {
    proof
        .arguments
        .iter()
        .map(|a| {
            let v = args.get(a).cloned();
            let Some(p) = proof.partitions.get(a) else {
                return Some((a.clone(), v));
            };
            let Some(v) = v else {
                return Some((a.clone(), None));
            };
            let s = v.as_str()?;
            let sig = signature(p, s);
            let rep = p.representatives.iter().find(|r| signature(p, r) == sig)?;
            Some((a.clone(), Some(Value::String(rep.clone()))))
        })
        .collect()
}

/// Which of the partition's predicates `s` meets.
fn signature(p: &crate::catalog::partition::Partition, s: &str) -> Vec<bool> {
    let x = p.fold.apply(s);
    p.equals
        .iter()
        .map(|l| x == *l)
        .chain(p.prefixes.iter().map(|l| x.starts_with(l.as_str())))
        .chain(p.suffixes.iter().map(|l| x.ends_with(l.as_str())))
        .chain(p.contains.iter().map(|l| x.contains(l.as_str())))
        .collect()
}

/// The arguments of `other` that differ from `row`'s: `path="../x"`,
/// `content absent`.
fn differing(row: &Value, other: &Value) -> String {
    let empty = Map::new();
    let (r, o) = (
        row.as_object().unwrap_or(&empty),
        other.as_object().unwrap_or(&empty),
    );
    let keys: std::collections::BTreeSet<&String> = r.keys().chain(o.keys()).collect();
    keys.into_iter()
        .filter(|k| r.get(*k) != o.get(*k))
        .map(|k| match o.get(k) {
            Some(v) => format!("{k}={v}"),
            None => format!("{k} absent"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn caller_classes(per_caller: bool, callers: &[Caller]) -> Vec<Option<&Caller>> {
    let mut out = vec![None];
    if per_caller {
        out.extend(callers.iter().map(Some));
    }
    out
}

fn key(tool: &Tool, arguments: String, caller: Option<&Caller>) -> RowKey {
    RowKey {
        tool: tool.name.clone(),
        arguments,
        caller: caller
            .map(|c| canonical(&c.to_value()).to_string())
            .unwrap_or_default(),
    }
}

fn class_key(class: &[(String, Option<Value>)]) -> String {
    let m: Map<String, Value> = class
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect();
    canonical(&Value::Object(m)).to_string()
}

/// `v` with every object's keys sorted, so that equal documents print alike
/// whatever order they were written in.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        v => v.clone(),
    }
}

/// A caller as a reviewer reads it: the subject, then the claims besides
/// `sub` and `iss` (the issuer is the same for most catalogs' callers).
pub fn label(c: &Caller) -> String {
    let claims: Map<String, Value> = c
        .claims
        .iter()
        .filter(|(k, _)| *k != "sub" && *k != "iss")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if claims.is_empty() {
        c.subject.clone()
    } else {
        format!("{} {}", c.subject, canonical(&Value::Object(claims)))
    }
}

fn hidden(v: Verdict) -> RowOutcome {
    match v {
        Verdict::Failed { message, .. } => RowOutcome::Hidden { why: Some(message) },
        _ => RowOutcome::Hidden { why: None },
    }
}

/// The listing as the decision of a tool with nothing to resolve.
fn listed_decision(tool: &Tool) -> Decision {
    Decision {
        hints: Hint::ALL
            .into_iter()
            .map(|h| HintCell {
                hint: h,
                value: tool.listed.get(h),
                listed: tool.listed.get(h),
                by: Vec::new(),
            })
            .collect(),
        fields: Vec::new(),
        deny: Vec::new(),
        confirm: None,
    }
}

/// The decision a call of `tool` with `args` from `caller` gets, as
/// `regent resolve --explain` decides and explains it: on the paths as a
/// `paths:` fence resolves them, the fence's reasons with it.
fn decide(catalog: &Catalog, tool: &Tool, args: &Value, caller: Option<&Caller>) -> RowOutcome {
    let verdict = tool.visibility(caller);
    if verdict != Verdict::Visible {
        return hidden(verdict);
    }
    let mut fenced = args.clone();
    let mut by_fence = Vec::new();
    for f in &tool.fences {
        for reason in crate::fence::apply(std::slice::from_ref(f), &mut fenced) {
            by_fence.push((reason, f));
        }
    }
    let mut r = match catalog.resolve_layers_as(&tool.name, &fenced, caller) {
        Ok(r) => r,
        Err(e @ ResolveError::InvalidArguments { .. }) => {
            return RowOutcome::Invalid(e.to_string());
        }
        Err(ResolveError::CallerClaimsInvalid(why)) => {
            return RowOutcome::CallerRefused(why.to_string());
        }
        Err(e) => return RowOutcome::Failed(e.to_string()),
    };
    r.add_deny(by_fence.iter().map(|(reason, _)| reason.clone()).collect());
    let changes = explain::explain(tool, &fenced, caller, &r);
    let by = |c: &explain::Change| -> Vec<String> {
        if let Some((_, f)) = by_fence
            .iter()
            .find(|(reason, _)| c.field == "deny" && c.resolved == reason.as_str())
        {
            return vec![format!("the paths: fence of argument `{}`", f.argument)];
        }
        c.producers.iter().map(producer).collect()
    };
    let mut hints: Vec<HintCell> = Hint::ALL
        .into_iter()
        .map(|h| HintCell {
            hint: h,
            value: r.hints.get(h),
            listed: tool.listed.get(h),
            by: Vec::new(),
        })
        .collect();
    let mut d = Decision {
        hints: Vec::new(),
        fields: Vec::new(),
        deny: Vec::new(),
        confirm: None,
    };
    for c in &changes {
        let field = Field {
            name: c.field.clone(),
            value: c.resolved.clone(),
            listed: c.listed.clone(),
            by: by(c),
        };
        if let Some(h) = c
            .field
            .strip_prefix("annotations.")
            .and_then(Hint::from_key)
        {
            if let Some(cell) = hints.iter_mut().find(|x| x.hint == h) {
                cell.by = field.by;
            }
        } else if c.field == "deny" {
            d.deny.push(field);
        } else if c.field == "confirm" {
            d.confirm = Some(field);
        } else {
            d.fields.push(field);
        }
    }
    d.hints = std::mem::take(&mut hints);
    RowOutcome::Decided(Box::new(d))
}

/// A producer as the review shows it: the rule and where it is.
fn producer(p: &Producer) -> String {
    match p {
        Producer::YamlRule { index, location } => format!("yaml rule {} ({location})", index + 1),
        Producer::Rego { rule, location } => format!("{rule} ({location})"),
        Producer::Policy { package } => format!("policy {package}"),
    }
}

/// Counts of a table's rows, for summaries.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub rows: usize,
    pub denied: usize,
    pub confirmed: usize,
    pub safer: usize,
    pub riskier: usize,
    pub hidden: usize,
    pub failed: usize,
    pub invalid: usize,
    /// Rows whose caller the caller schema refuses.
    pub refused: usize,
}

impl ToolTable {
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            rows: self.rows.len() + self.omitted,
            ..Counts::default()
        };
        for r in &self.rows {
            match &r.outcome {
                RowOutcome::Hidden { .. } => c.hidden += 1,
                RowOutcome::Invalid(_) => c.invalid += 1,
                RowOutcome::Failed(_) => c.failed += 1,
                RowOutcome::CallerRefused(_) => c.refused += 1,
                RowOutcome::Decided(d) => {
                    c.denied += usize::from(d.denied());
                    c.confirmed += usize::from(d.confirm.is_some());
                    c.safer += usize::from(d.safer());
                    c.riskier += usize::from(d.riskier());
                }
            }
        }
        c
    }

    /// Whether the rows are samples (the proof does not cover the tool).
    pub fn sampled(&self) -> bool {
        matches!(self.coverage, Coverage::NotCovered { .. })
    }
}

impl Review {
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }

    /// Every text that may name a file of the catalog passed through `f`:
    /// the paths, locations, findings, reasons and *set by* entries (never
    /// a decision's values). For a catalog read from a temporary directory
    /// (a bundle opened, a git revision written out), whose files are
    /// named as the user knows them (`b.tar.gz:x.rego`, `HEAD~1:x.rego`).
    pub fn relabel(&mut self, f: &dyn Fn(&str) -> String) {
        let each = |v: &mut Vec<String>| v.iter_mut().for_each(|s| *s = f(s));
        each(&mut self.paths);
        for x in &mut self.findings {
            x.location = f(&x.location);
            x.message = f(&x.message);
            x.help = x.help.as_deref().map(f);
        }
        for t in &mut self.tools {
            t.location = f(&t.location);
            if let Coverage::NotCovered { warning } = &mut t.coverage {
                *warning = f(warning);
            }
            for r in &mut t.rows {
                match &mut r.outcome {
                    RowOutcome::Hidden { why: None } => {}
                    RowOutcome::Hidden { why: Some(s) }
                    | RowOutcome::Invalid(s)
                    | RowOutcome::Failed(s)
                    | RowOutcome::CallerRefused(s) => *s = f(s),
                    RowOutcome::Decided(d) => {
                        d.hints.iter_mut().for_each(|h| each(&mut h.by));
                        d.fields
                            .iter_mut()
                            .chain(&mut d.deny)
                            .chain(&mut d.confirm)
                            .for_each(|x| each(&mut x.by));
                    }
                }
            }
        }
    }

    pub fn tool(&self, name: &str) -> Option<&ToolTable> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A base review, what to call it and what changed since: what the
/// renderers need for `regent review --base`.
pub struct Compared<'a> {
    pub review: &'a Review,
    /// `HEAD~1 (git revision 1a2b3c4d5e6f)`, or the path as given.
    pub label: &'a str,
    pub diff: &'a diff::Diff,
}

/// What a row that is not decided shows, and why (the reason's text).
pub fn undecided(o: &RowOutcome) -> Option<(&'static str, Option<&str>)> {
    Some(match o {
        RowOutcome::Decided(_) => return None,
        RowOutcome::Hidden { why: None } => ("hidden from this caller", None),
        RowOutcome::Hidden { why: Some(w) } => ("hidden: its visible rule fails", Some(w)),
        RowOutcome::Invalid(w) => ("refused by inputSchema", Some(w)),
        RowOutcome::Failed(w) => ("the policy fails (internal error)", Some(w)),
        RowOutcome::CallerRefused(w) => (
            "refused: the caller's claims do not match the declared caller schema",
            Some(w),
        ),
    })
}

/// A JSON value as a table cell shows it: strings bare, the rest as JSON.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// A row's class as `action=read, path="x"` (`(absent)` for absent ones),
/// `(any)` for a tool whose rules read no argument.
pub fn class_text(row: &Row) -> String {
    if row.class.is_empty() {
        return "(any)".to_string();
    }
    row.class
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v}"),
            None => format!("{k} absent"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plural ending of a count in the renderers' text (`1 row`, `2 rows`).
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
