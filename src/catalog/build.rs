//! Compiling a [`Source`] into a [`Catalog`]: schemas, YAML rules, policies
//! and data, with every problem reported at its `file:line:column`.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::resolvers;
use super::schema;
use super::{BuildOptions, Catalog, Tool};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::policy::engine as policy;
use crate::rego;
use crate::source::{FileKind, Source};

mod digest;
mod engine;
mod parse;
mod rules;
mod tool;

use digest::{data_digest, fingerprint, library_digest};
use parse::parse_policies;
use tool::compile_tool;

/// A policy file with the package it declares.
struct PolicyFile<'a> {
    path: String,
    text: &'a str,
    package: String,
    /// The parsed module, for reading the policy as syntax.
    module: Option<rego::PolicyModule>,
}

/// Compiles `source`. Every problem found is returned, not only the first.
pub fn build(source: &Source, opts: &BuildOptions) -> Result<Catalog, Diagnostics> {
    let (catalog, diags) = build_partial(source, opts);
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(catalog)
}

/// Compiles every tool that can be compiled and returns the problems of
/// the others beside it. For `regent check`, which goes on to examine the
/// tools that compiled; a catalog with errors is never served.
pub fn build_partial(source: &Source, opts: &BuildOptions) -> (Catalog, Diagnostics) {
    let mut diags = Diagnostics::default();
    let started = std::time::Instant::now();
    let mut phase = Phases {
        cpu: [crate::par::cpu_time(); 4],
        ..Phases::default()
    };

    let (policies, linted) = parse_policies(source, &mut diags);
    phase.parsed = started.elapsed();
    phase.cpu[1] = crate::par::cpu_time();
    let caller_schema = super::caller_schema::compile(source, &mut diags);
    let claimed: BTreeSet<&str> = source
        .tools()
        .flat_map(|(_, _, t)| t.policy.iter().chain(t.shadow_policy.iter()))
        .map(String::as_str)
        .collect();
    // The tool package that owns each policy: the longest claimed package
    // that is the policy's package or a dotted prefix of it. Found by walking
    // the package's own prefixes, so the cost does not grow with the number
    // of tools (a 500-tool catalog would otherwise pay 500 x 500 comparisons
    // per tool).
    let owner_of = |package: &str| -> Option<&str> {
        let mut candidate = package;
        loop {
            if let Some(c) = claimed.get(candidate) {
                return Some(*c);
            }
            candidate = &candidate[..candidate.rfind('.')?];
        }
    };
    let modules: Vec<rego::PolicyModule> =
        policies.iter().filter_map(|p| p.module.clone()).collect();
    let owners: Vec<Option<&str>> = modules.iter().map(|m| owner_of(&m.package)).collect();
    // Whether every policy file parsed: what `refs` may conclude from a
    // package no module defines, and whether a tool whose package is
    // missing gets a "not defined" error (not after a parse error).
    let parsed_all = policies.len()
        == source
            .policies
            .iter()
            .filter(|f| f.kind == FileKind::Policy)
            .count();
    let facts = portability_facts(source, &modules, &owners);
    let claims = caller_schema.as_ref().map(|s| &s.claims);
    // The whole-catalog analyses read the modules and nothing of one
    // another, so they run side by side over the cores (`par::join`). Two
    // of them decide what the tools compile to (a tool in a cycle is not
    // compiled; a construct regorus answers differently from OPA is an
    // error at a tool it runs for), so they come first; the others only
    // find problems, and run beside the tools' compilation below, filling
    // the cores it leaves idle. Their findings are taken in the order they
    // always were (the sort at the end keeps the order of findings at one
    // place).
    let (cycles, (found, number_refs)) = crate::par::join(
        || rego::recursion(&modules),
        || {
            (
                rego::portability::check(&modules, &facts),
                rego::portability::number_references(&modules, &facts),
            )
        },
    );
    // Where each tool package's modules (a library's under "") first
    // refer to a request's value that may be a number: a tool whose
    // modules never do need not look at the request's numbers.
    let mut number_reads: HashMap<&str, (Location, String)> = HashMap::new();
    for (m, found) in modules.iter().zip(number_refs) {
        if let Some(found) = found {
            number_reads
                .entry(owner_of(&m.package).unwrap_or(""))
                .or_insert(found);
        }
    }
    let findings_only = || {
        crate::par::join(
            || rego::reserved_meta(&modules, &claimed),
            || {
                crate::par::join(
                    || references(source, &modules, &owners, parsed_all, claims),
                    // Variables no body binds (OPA's safety rule):
                    // regorus finds them only when the expression
                    // runs, so at request time.
                    || rego::safety::check(&modules),
                )
            },
        )
    };
    // Recursion is refused statically, before any rule runs: regorus would
    // only notice an unconditional one, and a conditional one can exhaust
    // the stack before the time limit. A tool whose engine holds a cycle
    // is not compiled (nor warmed up); a cycle in a library package, which
    // every engine holds, stops every tool with a policy.
    let mut recursive: BTreeSet<Option<&str>> = BTreeSet::new();
    for r in cycles {
        for member in &r.cycle {
            let package = policies
                .iter()
                .map(|p| p.package.as_str())
                .filter(|p| member.starts_with(&format!("{p}.")))
                .max_by_key(|p| p.len());
            recursive.insert(package.and_then(owner_of));
        }
        diags.push(r.diagnostic);
    }
    // What follows `findings_only`'s findings in `diags`, held until they
    // are in.
    let mut after = Diagnostics::default();
    // Constructs where regorus answers differently from OPA: a warning
    // here; for a tool whose policy runs on regorus, an error at the tool
    // (`compile_tool`).
    let mut portability: HashMap<&str, Vec<rego::portability::Finding>> = HashMap::new();
    for f in found {
        after.push(f.diagnostic.clone());
        if !f.regorus() {
            continue;
        }
        // A library package's under "": every engine holds it.
        let owner = owner_of(&f.package).unwrap_or("");
        portability.entry(owner).or_default().push(f);
    }
    // Data numbers spelled otherwise than regent writes them (OPA writes
    // the spelling back): refused where a policy could write one.
    for d in rego::data_numbers::check(&source.data, &modules) {
        after.push(d);
    }
    let mut owned: HashMap<&str, Vec<&PolicyFile>> = HashMap::new();
    let mut library_files: Vec<&PolicyFile> = Vec::new();
    for p in &policies {
        match owner_of(&p.package) {
            Some(owner) => owned.entry(owner).or_default().push(p),
            None => library_files.push(p),
        }
    }

    // The base engine holds what every tool may read: library packages (those
    // no tool claims) and the data documents.
    let mut base = policy::new_engine(opts.policy_limits);
    let mut library = Vec::new();
    // The base's modules as the parse above read them, in the base's
    // order, for the recipes of the engines tools shed.
    let mut library_modules = Vec::new();
    let library_texts: Vec<(&str, &str)> = library_files
        .iter()
        .map(|p| (p.path.as_str(), p.text))
        .collect();
    for p in &library_files {
        match policy::add_policy(&mut base, &p.path, p.text) {
            Ok(_) => {
                library.push((p.path.as_str(), p.package.as_str()));
                library_modules.extend(p.module.clone());
            }
            Err(d) => after.push(d),
        }
    }
    for data in &source.data {
        let value = regorus::Value::from(data.value.clone());
        if let Err(e) = base.add_data(value) {
            after.push(
                Diagnostic::error(
                    "data-conflict",
                    Location::new(&data.path, 1, 1),
                    format!("cannot merge data file: {}", e.to_string().to_lowercase()),
                )
                .with_help("two data files set the same key to different values; keep one"),
            );
        }
    }

    // Tools compile independently (each gets its own copy of the base
    // engine), so they are spread over the cores; results keep declaration
    // order. A tool takes a fraction of a millisecond, so small catalogs stay
    // on one thread. The base is shared with the recipes of the engines a
    // tool sheds (`policy::EnginePool::shed`).
    let base = std::sync::Arc::new(base);
    let library_modules = std::sync::Arc::new(library_modules);
    let validators = schema::Validators::default();
    let library_index = rego::data_numbers::computed_index(library_modules.iter());
    let shared = Shared {
        validators: &validators,
        all: &policies,
        parsed_all,
        portability: &portability,
        number_reads: &number_reads,
        base: &base,
        library: &library,
        library_modules: &library_modules,
        library_index: &library_index,
    };
    // What each tool reaches of the library (issue 31): read once here,
    // followed per tool below.
    let library_paths: std::sync::Arc<BTreeSet<String>> =
        std::sync::Arc::new(library_files.iter().map(|p| p.path.clone()).collect());
    let reach = rego::reach::Library::new(
        &library_files
            .iter()
            .map(|p| p.module.as_ref())
            .collect::<Vec<_>>(),
    );
    let library_digests: Vec<[u8; 32]> = library_texts
        .iter()
        .map(|(path, text)| library_digest(path, text))
        .collect();
    let data_digest = data_digest(source);
    let decls: Vec<_> = source.tools().collect();
    phase.analysed = started.elapsed();
    phase.cpu[2] = crate::par::cpu_time();
    let compile = || {
        crate::par::map_ordered(&decls, 32, |(file, at, decl)| {
            let packages = [decl.policy.as_deref(), decl.shadow_policy.as_deref()];
            if packages.iter().any(|package| {
                package.is_some() && (recursive.contains(&None) || recursive.contains(package))
            }) {
                // Reported above, at the rule.
                return Err(Vec::new());
            }
            let own_of = |pkg: Option<&str>| -> Vec<&PolicyFile> {
                pkg.and_then(|pkg| owned.get(pkg))
                    .map_or_else(Vec::new, Clone::clone)
            };
            let own = own_of(decl.policy.as_deref());
            let shadow = own_of(decl.shadow_policy.as_deref());
            // Boxed while the results wait to be put in order: a tool is about
            // a kilobyte inline, and the threads' results, their ordered vector
            // and the catalog's would otherwise each hold every tool's.
            compile_tool(file, at, decl, (&own, &shadow), &shared, opts).map(|(mut tool, ds)| {
                let roots: Vec<_> = own
                    .iter()
                    .chain(&shadow)
                    .map(|p| p.module.as_ref())
                    .collect();
                // A `policy` resolver's rule is evaluated by name, and may be
                // a library package's.
                let rules: Vec<&str> = tool
                    .resolvers
                    .iter()
                    .filter_map(|r| match &r.source {
                        resolvers::Source::Policy { rule, .. } => Some(rule.as_str()),
                        _ => None,
                    })
                    .collect();
                let reached = reach.reached_from(&roots, &rules);
                let digests: Vec<&[u8; 32]> =
                    reached.iter().map(|&i| &library_digests[i]).collect();
                tool.fingerprint = fingerprint(&data_digest, &digests, file, decl, &own, &shadow);
                tool.reach = super::Reach {
                    library: library_paths.clone(),
                    reached: reached
                        .into_iter()
                        .map(|i| library_files[i].path.clone())
                        .collect(),
                };
                (Box::new(tool), ds)
            })
        })
    };
    let (compiled, (meta, (refs, safety))) = crate::par::join(compile, findings_only);
    // `meta` keys that would forge regent's or MCP's own `_meta`, written
    // literally in a tool's package: refused at load, as in YAML (all
    // packages in one pass: one per tool would be quadratic). Then the
    // references that can never be defined and the unbound variables.
    for d in meta.into_iter().chain(refs).chain(safety) {
        diags.push(d);
    }
    diags.0.append(&mut after.0);
    phase.compiled = started.elapsed();
    phase.cpu[3] = crate::par::cpu_time();
    let mut tools = Vec::with_capacity(compiled.len());
    for c in compiled {
        match c {
            Ok((tool, mut ds)) => {
                diags.0.append(&mut ds);
                tools.push(*tool);
            }
            Err(mut ds) => diags.0.append(&mut ds),
        }
    }

    // Claims used as if typed, when nothing declares or tests the type:
    // only in the modules some tool reaches (a library package no tool
    // reaches cannot change an answer).
    let reached = modules
        .iter()
        .filter(|m| tools.iter().any(|t: &Tool| t.reach.keeps(&m.path)));
    for d in rego::claims::untyped(reached, caller_schema.as_ref().map(|s| &s.claims)) {
        diags.push(d);
    }

    // A construct refused at a tool is not also a warning.
    let refused: BTreeSet<(String, usize, usize, &str)> = diags
        .0
        .iter()
        .filter(|d| d.is_error() && d.code.starts_with("opa-"))
        .map(|d| {
            (
                d.location.file.display().to_string(),
                d.location.line,
                d.location.column,
                d.code,
            )
        })
        .collect();
    diags.0.retain(|d| {
        d.is_error()
            || !d.code.starts_with("opa-")
            || !refused.contains(&(
                d.location.file.display().to_string(),
                d.location.line,
                d.location.column,
                d.code,
            ))
    });
    diags.sort();
    let warnings = diags.0.iter().filter(|d| !d.is_error()).cloned().collect();
    let by_name = tools
        .iter()
        .enumerate()
        .map(|(i, t): (usize, &Tool)| (t.name.clone(), i))
        .collect();
    // Only a catalog where some tool declares `visible` evaluates anything
    // per caller; every other one lists as it always did.
    let visibility = tools
        .iter()
        .any(|t| t.visible.is_some())
        .then(super::visibility::Cache::default);
    tracing::debug!(
        tools = tools.len(),
        parse_ms = phase.parsed.as_millis() as u64,
        analyses_ms = (phase.analysed - phase.parsed).as_millis() as u64,
        tools_ms = (phase.compiled - phase.analysed).as_millis() as u64,
        rest_ms = (started.elapsed() - phase.compiled).as_millis() as u64,
        parse_cpu_ms = phase.cpu_ms(0),
        analyses_cpu_ms = phase.cpu_ms(1),
        tools_cpu_ms = phase.cpu_ms(2),
        rest_cpu_ms = phase.cpu_ms(3),
        "built the catalog"
    );
    let catalog = Catalog {
        revision: source.digest.clone(),
        tools,
        by_name,
        warnings,
        visibility,
        quarantined: source.quarantined.clone(),
        caller_schema,
        policy_modules: std::sync::Mutex::new(Some(linted)),
    };
    (catalog, diags)
}

/// When each phase of a build ended, from its start, for the debug line
/// that says where a large catalog's start-up goes (BENCHMARKS.md).
#[derive(Default)]
struct Phases {
    parsed: std::time::Duration,
    analysed: std::time::Duration,
    compiled: std::time::Duration,
    /// The process's CPU time when each phase began (`par::cpu_time`):
    /// beside the wall times, how many cores each phase kept busy.
    cpu: [Option<std::time::Duration>; 4],
}

impl Phases {
    /// CPU milliseconds of phase `i` (0 parse, 1 analyses, 2 tools, 3 rest).
    fn cpu_ms(&self, i: usize) -> u64 {
        match self.cpu.get(i + 1) {
            Some(&next) => match (self.cpu[i], next) {
                (Some(a), Some(b)) => b.saturating_sub(a).as_millis() as u64,
                _ => 0,
            },
            None => crate::par::cpu_ms_since(self.cpu[i]),
        }
    }
}

/// References into `input` and `data` that can never be defined (a typo
/// that makes a `deny` rule fail open). A tool's package is checked against
/// the inputSchema of the tools that name it; a library package against the
/// union of every tool's (any tool's engine holds it).
fn references(
    source: &Source,
    modules: &[rego::PolicyModule],
    owners: &[Option<&str>],
    parsed_all: bool,
    claims: Option<&Value>,
) -> Vec<Diagnostic> {
    let tools: Vec<(&str, [Option<&str>; 2], &Value)> = source
        .tools()
        .map(|(_, _, t)| {
            let packages = [t.policy.as_deref(), t.shadow_policy.as_deref()];
            (t.name.as_str(), packages, &t.input_schema)
        })
        .collect();
    let mut by_package: HashMap<&str, Vec<(&str, &Value)>> = HashMap::new();
    for (name, packages, schema) in &tools {
        for pkg in packages.iter().flatten() {
            by_package.entry(pkg).or_default().push((name, schema));
        }
    }
    let all: Vec<(&str, &Value)> = tools.iter().map(|(n, _, s)| (*n, *s)).collect();
    let schemas = |module: usize| match owners[module] {
        Some(owner) => rego::refs::Schemas {
            tools: by_package.get(owner).cloned().unwrap_or_default(),
            library: false,
        },
        None => rego::refs::Schemas {
            tools: all.clone(),
            library: true,
        },
    };
    let data: Vec<&Value> = source.data.iter().map(|d| &d.value).collect();
    let ctx = rego::refs::Context::new(modules, owners, &data, parsed_all).with_claims(claims);
    rego::refs::check(modules, &ctx, schemas)
}

/// What `rego/portability` reads a module against: the inputSchemas of the
/// tools owning it (none for a library package) and the data documents.
fn portability_facts<'s>(
    source: &'s Source,
    modules: &[rego::PolicyModule],
    owners: &[Option<&str>],
) -> rego::portability::Facts<'s> {
    // The schemas of the tools that own each package, gathered in one pass
    // (a scan of every tool per module would be quadratic).
    let mut by_package: HashMap<&str, Vec<&Value>> = HashMap::new();
    for (_, _, t) in source.tools() {
        let shadow = t
            .shadow_policy
            .as_deref()
            .filter(|s| Some(*s) != t.policy.as_deref());
        for pkg in [t.policy.as_deref(), shadow].into_iter().flatten() {
            by_package.entry(pkg).or_default().push(&t.input_schema);
        }
    }
    let schemas = owners
        .iter()
        .map(|owner| {
            owner
                .and_then(|o| by_package.get(o))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    rego::portability::Facts {
        schemas,
        data: source.data.iter().map(|d| &d.value).collect(),
        packages: modules.iter().map(|m| m.package.clone()).collect(),
    }
}

/// What every tool's compilation shares: all policy files, the base engine
/// (libraries and data) and the library modules as (file, package).
struct Shared<'a> {
    all: &'a [PolicyFile<'a>],
    /// Whether every policy file parsed. When one did not, a package no
    /// parsed file defines may be that file's: the parse error is the
    /// finding, and no follow-on "package not defined" is added to it.
    parsed_all: bool,
    /// `rego/portability`'s findings, by the tool package that owns them.
    portability: &'a HashMap<&'a str, Vec<rego::portability::Finding>>,
    /// Where each tool package's modules (the library's under "") first
    /// refer to a request's value that may be a number
    /// (`rego::portability::number_references`).
    number_reads: &'a HashMap<&'a str, (Location, String)>,
    base: &'a std::sync::Arc<regorus::Engine>,
    library: &'a [(&'a str, &'a str)],
    /// The base's modules, parsed (`policy::Recipe::library`).
    library_modules: &'a std::sync::Arc<Vec<rego::PolicyModule>>,
    /// Where the library first indexes with a computed key, once for every
    /// tool (`rego::data_numbers::computed_index`).
    library_index: &'a Option<String>,
    /// inputSchema and outputSchema validators, one per distinct schema.
    validators: &'a schema::Validators,
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Catalog>();
    let _: HashMap<(), ()> = HashMap::new();
}
