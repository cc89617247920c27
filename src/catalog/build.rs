//! Compiling a [`Source`] into a [`Catalog`]: schemas, YAML rules, policies
//! and data, with every problem reported at its `file:line:column`.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::hints::Hints;
use super::resolvers;
use super::run;
use super::schema;
use super::schema_keywords;
use super::{BuildOptions, Catalog, Field, Rule, Tool};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::policy::budget::Limits;
use crate::policy::engine::{self as policy, EnginePool, Step};
use crate::rego;
use crate::rego::generate;
use crate::source::{FileKind, Source, ToolDecl, ToolSource, YamlPath};

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
    let mut phase = Phases::default();

    let (policies, linted) = parse_policies(source, &mut diags);
    phase.parsed = started.elapsed();
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
    // The whole-catalog analyses below read the modules and nothing of one
    // another, so they run side by side over the cores (`par::join`); their
    // findings are taken in the order they always were.
    let ((cycles, meta), ((refs, safety), found)) = crate::par::join(
        || {
            crate::par::join(
                || rego::recursion(&modules),
                || rego::reserved_meta(&modules, &claimed),
            )
        },
        || {
            crate::par::join(
                || {
                    crate::par::join(
                        || references(source, &modules, &owners, parsed_all, claims),
                        // Variables no body binds (OPA's safety rule):
                        // regorus finds them only when the expression
                        // runs, so at request time.
                        || rego::safety::check(&modules),
                    )
                },
                || rego::portability::check(&modules, &facts),
            )
        },
    );
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
    // `meta` keys that would forge regent's or MCP's own `_meta`, written
    // literally in a tool's package: refused at load, as in YAML (all
    // packages in one pass: one per tool would be quadratic). Then the
    // references that can never be defined and the unbound variables.
    for d in meta.into_iter().chain(refs).chain(safety) {
        diags.push(d);
    }
    // Constructs where regorus answers differently from OPA: a warning
    // here; for a tool whose policy runs on regorus, an error at the tool
    // (`compile_tool`).
    let mut portability: HashMap<&str, Vec<rego::portability::Finding>> = HashMap::new();
    for f in found {
        diags.push(f.diagnostic.clone());
        // A library package's under "": every engine holds it.
        let owner = owner_of(&f.package).unwrap_or("");
        portability.entry(owner).or_default().push(f);
    }
    // Data numbers spelled otherwise than regent writes them (OPA writes
    // the spelling back): refused where a policy could write one.
    for d in rego::data_numbers::check(&source.data, &modules) {
        diags.push(d);
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
            Err(d) => diags.push(d),
        }
    }
    for data in &source.data {
        let value = regorus::Value::from(data.value.clone());
        if let Err(e) = base.add_data(value) {
            diags.push(
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
    let shared = Shared {
        validators: &validators,
        all: &policies,
        parsed_all,
        portability: &portability,
        base: &base,
        library: &library,
        library_modules: &library_modules,
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
    let compiled = crate::par::map_ordered(&decls, 32, |(file, at, decl)| {
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
            let digests: Vec<&[u8; 32]> = reached.iter().map(|&i| &library_digests[i]).collect();
            tool.fingerprint = fingerprint(&data_digest, &digests, file, decl, &own, &shadow);
            tool.reach = super::Reach {
                library: library_paths.clone(),
                reached: reached
                    .into_iter()
                    .map(|i| library_files[i].path.clone())
                    .collect(),
            };
            (tool, ds)
        })
    });
    phase.compiled = started.elapsed();
    let mut tools = Vec::with_capacity(compiled.len());
    for c in compiled {
        match c {
            Ok((tool, mut ds)) => {
                diags.0.append(&mut ds);
                tools.push(tool);
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

/// Parses every serving policy file to learn its package, reporting parse
/// errors and the reserved `regent` namespace. Beside the files that may
/// serve, the module of every file that parsed, in the files' order (those
/// in a reserved package too): what `check`'s lints read
/// ([`Catalog::take_policy_modules`]), so that they parse nothing again.
fn parse_policies<'a>(
    source: &'a Source,
    diags: &mut Diagnostics,
) -> (Vec<PolicyFile<'a>>, Vec<rego::PolicyModule>) {
    let files: Vec<_> = source
        .policies
        .iter()
        .filter(|f| f.kind == FileKind::Policy)
        .collect();
    // Each file is parsed on its own scratch engine, so files are parsed in
    // parallel; the order (and so the diagnostics) stays the files' order.
    // Nothing evaluates on it: a bare engine, without the guards.
    let parsed = crate::par::map_ordered(&files, 32, |file| {
        let path = file.path.to_string_lossy().to_string();
        let mut scratch = policy::parse_engine();
        let pkg =
            policy::add_policy(&mut scratch, &path, &file.text).map_err(|d| Box::new((d, None)))?;
        let package = pkg.strip_prefix("data.").unwrap_or(&pkg).to_string();
        let module = rego::modules(&mut scratch).pop();
        if package == "regent" || package.starts_with("regent.") {
            return Err(Box::new((
                Diagnostic::error(
                    "reserved-package",
                    package_location(&file.path, &file.text),
                    format!("package `{package}` is reserved for regent's generated rules"),
                )
                .with_help("rename the package, for example to `tools.<tool name>`"),
                module,
            )));
        }
        Ok(PolicyFile {
            path,
            text: &file.text,
            package,
            module,
        })
    });
    let mut out = Vec::new();
    let mut linted = Vec::new();
    for p in parsed {
        match p {
            Ok(p) => {
                linted.extend(p.module.clone());
                out.push(p);
            }
            Err(failed) => {
                let (d, module) = *failed;
                linted.extend(module);
                diags.push(d);
            }
        }
    }
    (out, linted)
}

/// Where the `package` line of a policy is.
fn package_location(path: &std::path::Path, text: &str) -> Location {
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("package "))
        .map_or(1, |i| i + 1);
    Location::new(path, line, 1)
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
    base: &'a std::sync::Arc<regorus::Engine>,
    library: &'a [(&'a str, &'a str)],
    /// The base's modules, parsed (`policy::Recipe::library`).
    library_modules: &'a std::sync::Arc<Vec<rego::PolicyModule>>,
    /// inputSchema and outputSchema validators, one per distinct schema.
    validators: &'a schema::Validators,
}

fn compile_tool(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    (own, shadow): (&[&PolicyFile], &[&PolicyFile]),
    shared: &Shared<'_>,
    opts: &BuildOptions,
) -> Result<(Tool, Vec<Diagnostic>), Vec<Diagnostic>> {
    let Shared {
        all,
        parsed_all,
        portability,
        base,
        library,
        library_modules,
        validators,
    } = *shared;
    let mut diags = Vec::new();
    // Findings that do not stop the tool from compiling.
    let mut warnings = Vec::new();
    let location = file.locate(&at.key("name"));

    if decl.name.is_empty() {
        diags.push(
            Diagnostic::error("empty-name", location.clone(), "tool name is empty")
                .with_help("give the tool a name, unique in the catalog"),
        );
    } else if let Some(problem) = crate::source::tool_name::check(&decl.name) {
        // A character that can make a name display as another is refused;
        // the rest of MCP's guidance is a warning (clients may know the
        // tool by an older name).
        let d = if problem.is_deceptive() {
            Diagnostic::error(
                "tool-name-deceptive",
                location.clone(),
                format!("tool name {:?} cannot be listed: {problem}", decl.name),
            )
        } else {
            Diagnostic::warning(
                "tool-name",
                location.clone(),
                format!(
                    "tool name {:?} does not follow MCP's naming guidance: {problem}",
                    decl.name
                ),
            )
        };
        let d = d.with_help(crate::source::tool_name::HELP);
        if problem.is_deceptive() {
            diags.push(d);
        } else {
            warnings.push(d);
        }
    }
    if decl.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        diags.push(
            Diagnostic::error(
                "input-schema-not-object",
                file.locate(&at.key("inputSchema")),
                format!("inputSchema of `{}` must have `type: object`", decl.name),
            )
            .with_help(
                "MCP tool arguments are always an object; declare `type: object` with `properties`",
            ),
        );
    }
    let validator = match validators.compile(
        &decl.input_schema,
        file,
        &at.key("inputSchema"),
        "inputSchema",
    ) {
        Ok(v) => Some(v),
        Err(d) => {
            diags.push(d);
            None
        }
    };
    let output_validator = match &decl.output_schema {
        None => None,
        Some(out) => match validators.compile(out, file, &at.key("outputSchema"), "outputSchema") {
            Ok(v) => Some(v),
            Err(d) => {
                diags.push(d);
                None
            }
        },
    };
    // Keys no validator reads, in the schemas the catalog wrote (an
    // upstream's own schema is its author's to fix, and has no YAML here).
    if decl.upstream.is_none() {
        if validator.is_some() {
            warnings.extend(schema_keywords::check(
                &decl.input_schema,
                file,
                &at.key("inputSchema"),
                "inputSchema",
            ));
        }
        if let (Some(out), Some(_)) = (&decl.output_schema, &output_validator) {
            warnings.extend(schema_keywords::check(
                out,
                file,
                &at.key("outputSchema"),
                "outputSchema",
            ));
        }
    }

    let declared = decl
        .annotations
        .as_ref()
        .map(|a| a.hints())
        .unwrap_or_default();
    let listed = Hints::WORST.overlay(&declared);
    reserved_meta(
        decl.meta.as_ref(),
        file,
        &at.key("meta"),
        &decl.name,
        &mut diags,
    );
    let rules = compile_rules(file, at, decl, &listed, &mut diags);
    let mut probes = Vec::new();
    let run = run::compile(file, at, decl, &mut diags, &mut warnings, &mut probes);
    let mut resolvers = resolvers::compile(file, at, decl, &mut diags);
    let resolver_rules: Vec<(usize, String)> = resolvers
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.source {
            resolvers::Source::Policy { rule, .. } => Some((i, rule.clone())),
            _ => None,
        })
        .collect();

    let packages = [decl.policy.as_ref(), decl.shadow_policy.as_ref()];
    let needs_engine = !rules.is_empty()
        || decl.policy.is_some()
        || decl.shadow_policy.is_some()
        || !resolver_rules.is_empty();
    if let Some(pkg) = &decl.policy
        && own.is_empty()
    {
        if !parsed_all {
            // A policy file did not parse; its error is the one to fix.
            return Err(diags);
        }
        diags.push(missing_package(file, at, "policy", pkg, all));
    }
    if let Some(pkg) = &decl.shadow_policy {
        if decl.policy.as_deref() == Some(pkg.as_str()) {
            diags.push(
                Diagnostic::error(
                    "shadow-is-enforced",
                    file.locate(&at.key("shadow_policy")),
                    format!("shadow_policy `{pkg}` is the tool's enforced policy"),
                )
                .with_help("name the new package under test here, the one `policy` will point to once it has proven itself"),
            );
        } else if shadow.is_empty() {
            if !parsed_all {
                return Err(diags);
            }
            diags.push(missing_package(file, at, "shadow_policy", pkg, all));
        }
    }
    // With `keep_riskier_rules` (regent check), a riskier YAML rule is still
    // reported but does not stop the tool from compiling, so the worst-case
    // proof can name the exact arguments that reach it.
    let blocking = |ds: &[Diagnostic]| {
        ds.iter()
            .any(|d| !(opts.keep_riskier_rules && d.code == "riskier-than-listed"))
    };
    let mut engines = None;
    let mut plan = Vec::new();
    let mut visible = None;
    let mut upstream_request = None;
    let mut shadow_plan = Vec::new();
    if needs_engine && !blocking(&diags) {
        let rule_refs: Vec<&str> = resolver_rules.iter().map(|(_, r)| r.as_str()).collect();
        let own = Own { own, shadow };
        match tool_engine(decl, own, base, library, &rule_refs, &opts.policy_limits) {
            Ok(ToolEngine {
                engine,
                added,
                plan: p,
                resolver_steps: steps,
                visible: v,
                upstream_request: ur,
                shadow: (sp, shadow_errors),
            }) => {
                let pool = EnginePool::new(engine, opts.policy_limits);
                let lowered = p.iter().map(|(_, s)| s).chain(steps.iter().flatten());
                let lowered = lowered.chain(sp.iter().map(|(_, s)| s));
                let lowered: Vec<&Step> = lowered.chain(v.iter()).chain(ur.iter()).collect();
                let pool = pool.with_native(lowered.iter().copied());
                // Every step on `native`: regorus is only its fallback, so
                // the engine, warmed and lowered, is dropped and made again
                // when first needed (`policy::EnginePool::shed`).
                let all_native = pool.is_native(lowered.iter().copied());
                let warm = lowered.first().map(|s| (*s).clone());
                // A construct where regorus answers differently from OPA:
                // native answers as OPA and, where it hands a request to
                // regorus, only regorus' error may come back; a tool whose
                // enforced policy does not run natively is refused (a shadow
                // policy's findings stay warnings: it never stops a tool).
                let flagged = packages
                    .iter()
                    .flatten()
                    .map(|pkg| pkg.as_str())
                    .chain([""])
                    .filter_map(|pkg| portability.get(pkg))
                    .flatten()
                    .next()
                    .map(|f| format!("{}: {}", f.diagnostic.location, f.diagnostic.message));
                let enforced: Vec<&Step> = p
                    .iter()
                    .map(|(_, s)| s)
                    .chain(steps.iter().flatten())
                    .chain(v.iter())
                    .chain(ur.iter())
                    .collect();
                let own_findings = decl
                    .policy
                    .as_deref()
                    .and_then(|pkg| portability.get(pkg))
                    .map_or(&[][..], Vec::as_slice);
                if !own_findings.is_empty() && !pool.is_native(enforced.iter().copied()) {
                    for f in own_findings {
                        let mut d = f.diagnostic.clone();
                        d.severity = crate::diag::Severity::Error;
                        d.message = format!(
                            "{}; tool `{}` runs this policy on regorus, so regent refuses it",
                            d.message, decl.name
                        );
                        diags.push(d);
                    }
                }
                let pool = pool.with_flagged(flagged);
                engines = Some(if all_native {
                    // The modules the build parsed, so that reading the
                    // shed tool's (`check::on_load`) parses none again.
                    let parsed = own.own.iter().chain(own.shadow);
                    let parsed = parsed.filter_map(|p| p.module.clone()).collect();
                    pool.shed(policy::Recipe {
                        base: base.clone(),
                        library: library_modules.clone(),
                        modules: added,
                        warm,
                    })
                    .with_parsed(parsed)
                } else {
                    pool
                });
                plan = p;
                visible = v;
                upstream_request = ur;
                shadow_plan = sp;
                // A shadow rule that fails on the sample arguments is worth
                // knowing, but never stops the enforced policy from loading.
                for e in shadow_errors {
                    let mut d = e.located_or(
                        file.locate(&at.key("shadow_policy")),
                        &schema::sample(&decl.input_schema),
                    );
                    d.severity = crate::diag::Severity::Warning;
                    d.code = "shadow-policy-eval";
                    d.message = format!(
                        "shadow policy `{}` (log-only) fails: {}; its decisions are logged as errors and the enforced policy is unaffected",
                        decl.shadow_policy.as_deref().unwrap_or("?"),
                        d.message
                    );
                    warnings.push(d);
                }
                for ((i, _), step) in resolver_rules.iter().zip(steps) {
                    match step {
                        Ok(step) => {
                            if let resolvers::Source::Policy { step: s, .. } =
                                &mut resolvers[*i].source
                            {
                                *s = Some(step);
                            }
                        }
                        Err(d) => diags.push(d.located_or(
                            resolvers[*i].location.clone(),
                            &schema::sample(&decl.input_schema),
                        )),
                    }
                }
            }
            Err(d) => {
                diags.push(d.located_or(location.clone(), &schema::sample(&decl.input_schema)))
            }
        }
    }

    // Arguments as a client (or a test case) sends them: resolved parameters
    // may be missing, but a value given for one is still checked.
    let partial_validator = if resolvers.is_empty() {
        None
    } else {
        match jsonschema::validator_for(&resolvers::partial_schema(&decl.input_schema, &resolvers))
        {
            Ok(v) => Some(v),
            Err(e) => {
                diags.push(Diagnostic::error(
                    "invalid-schema",
                    file.locate(&at.key("inputSchema")),
                    format!("inputSchema without its resolved parameters cannot be compiled: {e}"),
                ));
                None
            }
        }
    };
    let fences = compile_paths(file, at, decl, &mut diags);
    let ok = !blocking(&diags);
    diags.append(&mut warnings);
    match validator {
        Some(validator) if ok => Ok((
            Tool {
                name: decl.name.clone(),
                title: decl.title.clone(),
                description: decl.description.clone(),
                input_schema: decl.input_schema.clone(),
                listed_input_schema: resolvers::listed_schema(&decl.input_schema, &resolvers),
                output_schema: decl.output_schema.clone(),
                annotations_title: decl.annotations.as_ref().and_then(|a| a.title.clone()),
                listed,
                meta: decl.meta.clone().unwrap_or_default(),
                security_schemes: decl.security_schemes.clone(),
                rules,
                policy: decl.policy.clone(),
                shadow_policy: decl.shadow_policy.clone(),
                shadow_plan,
                location,
                validator,
                partial_validator,
                resolvers,
                output_validator,
                engines,
                run,
                probes,
                upstream: decl.upstream.clone(),
                plan,
                visible,
                upstream_request,
                fences,
                fingerprint: [0; 32],
                reach: super::Reach::default(),
            },
            diags,
        )),
        _ => Err(diags),
    }
}

/// The tool's `paths:`: each names a declared argument that holds a string
/// or an array of strings, and an absolute root.
fn compile_paths(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    diags: &mut Vec<Diagnostic>,
) -> Vec<crate::fence::Fence> {
    let props = schema::properties(&decl.input_schema);
    let mut out = Vec::new();
    for (arg, p) in &decl.paths {
        let here = at.key("paths").key(arg);
        let Some(prop) = props.and_then(|ps| ps.get(arg)) else {
            diags.push(
                Diagnostic::error(
                    "unknown-argument",
                    file.locate(&here),
                    format!("`paths` of `{}` names argument `{arg}`, which inputSchema does not declare", decl.name),
                )
                .with_help("name an argument of the tool's inputSchema that holds a path"),
            );
            continue;
        };
        let ty = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_string);
        let holds_paths = match ty(prop).as_deref() {
            None | Some("string") => true,
            Some("array") => prop
                .get("items")
                .is_none_or(|items| matches!(ty(items).as_deref(), None | Some("string"))),
            _ => false,
        };
        if !holds_paths {
            diags.push(
                Diagnostic::error(
                    "path-argument-type",
                    file.locate(&here),
                    format!("argument `{arg}` of `{}` is fenced under a root but holds neither a string nor an array of strings", decl.name),
                )
                .with_help("fence the argument that names the file (a string, or an array of strings)"),
            );
            continue;
        }
        let root = std::path::PathBuf::from(&p.root);
        if !root.is_absolute() {
            diags.push(
                Diagnostic::error(
                    "path-root",
                    file.locate(&here.key("root")),
                    format!(
                        "root {:?} of argument `{arg}` is not an absolute path",
                        p.root
                    ),
                )
                .with_help("write the directory from `/`, as the tool or upstream sees it"),
            );
            continue;
        }
        out.push(crate::fence::Fence {
            argument: arg.clone(),
            root,
        });
    }
    out
}

/// One library file, digested once per build: the tools that reach it
/// take its digest into their fingerprints.
fn library_digest(path: &str, text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(format!("library {} {}\n", path.len(), text.len()));
    h.update(path);
    h.update(text);
    h.finalize().into()
}

/// The data documents every engine holds, digested once per build.
fn data_digest(source: &Source) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for d in &source.data {
        let text = d.value.to_string();
        h.update(format!("data {} {}\n", d.path.display(), text.len()));
        h.update(text);
    }
    h.finalize().into()
}

/// A digest of everything a tool's answers are made from (see
/// [`Tool::fingerprint`]): its declaration where it stands, its own and
/// shadow packages' files, the library files it reaches and the data. A
/// library file it does not reach can change nothing it answers (nor what
/// `check` finds about it), so changing one does not run it again.
fn fingerprint(
    data: &[u8; 32],
    library: &[&[u8; 32]],
    file: &ToolSource,
    decl: &ToolDecl,
    own: &[&PolicyFile],
    shadow: &[&PolicyFile],
) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(data);
    for l in library {
        h.update(l);
    }
    // The declaration as parsed, and the file it is in (diagnostics name
    // its lines).
    h.update(format!("{}\n{decl:?}\n", file.path.display()));
    for (kind, files) in [("own", own), ("shadow", shadow)] {
        for p in files {
            h.update(format!("{kind} {} {}\n", p.path, p.text.len()));
            h.update(p.text);
        }
    }
    h.finalize().into()
}

/// Checks each mapping rule against the tool's schema and listed worst case.
fn compile_rules(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    listed: &Hints,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Rule> {
    let props = schema::properties(&decl.input_schema);
    let mut rules = Vec::new();
    for (i, rule) in decl.resolve.iter().enumerate() {
        let rule_at = at.key("resolve").index(i);
        for (arg, expected) in &rule.when {
            let arg_at = rule_at.key("when").key(arg);
            let Some(prop) = props.and_then(|p| p.get(arg)) else {
                let known: Vec<String> = props
                    .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                    .unwrap_or_default();
                diags.push(
                    Diagnostic::error(
                        "unknown-argument",
                        file.locate(&arg_at),
                        format!("rule {} of `{}` tests argument `{arg}`, which inputSchema does not declare", i + 1, decl.name),
                    )
                    .with_help(if known.is_empty() {
                        "declare it under inputSchema.properties".to_string()
                    } else {
                        format!("declared arguments: {}", known.join(", "))
                    }),
                );
                continue;
            };
            if let Some(why) = type_mismatch(prop, expected) {
                diags.push(
                    Diagnostic::error(
                        "value-wrong-type",
                        file.locate(&arg_at),
                        format!("rule {} of `{}` compares `{arg}` with {why}, so the rule can never match", i + 1, decl.name),
                    )
                    .with_help(
                        "a `when` value is compared for equality (a list means any of, null means absent); write the value itself, and test patterns or ranges in a Rego policy",
                    ),
                );
                continue;
            }
            if let Some(allowed) = prop.get("enum").and_then(Value::as_array) {
                for v in when_values(expected) {
                    if !allowed.contains(v) {
                        diags.push(
                            Diagnostic::error(
                                "value-not-in-enum",
                                file.locate(&arg_at),
                                format!("rule {} of `{}` compares `{arg}` with {v}, which its enum does not allow", i + 1, decl.name),
                            )
                            .with_help(format!(
                                "allowed values: {}",
                                allowed.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")
                            )),
                        );
                    }
                }
            }
        }
        let hints = rule.annotations.unwrap_or_default();
        let resolved = listed.overlay(&hints);
        for h in resolved.riskier_than(listed) {
            diags.push(
                Diagnostic::error(
                    "riskier-than-listed",
                    file.locate(&rule_at.key("annotations").key(h.key())),
                    format!(
                        "rule {} of `{}` sets {} to {}, riskier than the listed {}",
                        i + 1,
                        decl.name,
                        h.key(),
                        resolved.get(h),
                        listed.get(h)
                    ),
                )
                .with_help(format!(
                    "the listed annotations must state the worst case; set annotations.{} to {} on the tool, or change the rule",
                    h.key(),
                    resolved.get(h)
                )),
            );
        }
        reserved_meta(
            rule.meta.as_ref(),
            file,
            &rule_at.key("meta"),
            &decl.name,
            diags,
        );
        rules.push(Rule {
            when: rule.when.clone(),
            annotations: hints,
            meta: rule.meta.clone(),
            security_schemes: rule.security_schemes.clone(),
            deny: rule.deny.0.clone(),
            confirm: rule.confirm.clone(),
            location: file.locate(&rule_at),
        });
    }
    rules
}

/// Refuses the keys of a YAML `meta` that regent or MCP write themselves
/// (see `meta_keys`): merged into an answer, they would stand beside
/// regent's real decision.
fn reserved_meta(
    meta: Option<&serde_json::Map<String, Value>>,
    file: &ToolSource,
    at: &YamlPath,
    tool: &str,
    diags: &mut Vec<Diagnostic>,
) {
    for key in meta.into_iter().flat_map(|m| m.keys()) {
        if let Some(whose) = crate::meta_keys::reserved(key) {
            diags.push(
                Diagnostic::error(
                    "reserved-meta-key",
                    file.locate(&at.key(key)),
                    format!("meta of `{tool}` sets `{key}`, a key of {whose} `_meta`"),
                )
                .with_help(crate::meta_keys::HELP),
            );
        }
    }
}

fn missing_package(
    file: &ToolSource,
    at: &YamlPath,
    key: &str,
    pkg: &str,
    all: &[PolicyFile],
) -> Diagnostic {
    let mut known: Vec<&str> = all.iter().map(|p| p.package.as_str()).collect();
    known.sort();
    known.dedup();
    let nearest = known
        .iter()
        .map(|k| (strsim::levenshtein(k, pkg), *k))
        .min()
        .filter(|(d, _)| *d <= 3);
    let help = match nearest {
        Some((_, k)) => format!("did you mean `{k}`?"),
        None if known.is_empty() => format!("add a .rego file that starts with `package {pkg}`"),
        None => format!(
            "add a .rego file with `package {pkg}`; defined packages: {}",
            known.join(", ")
        ),
    };
    Diagnostic::error(
        "missing-package",
        file.locate(&at.key(key)),
        format!("{key} package `{pkg}` is not defined by any .rego file"),
    )
    .with_help(help)
}

/// A prepared engine for one tool (base + own packages + generated mapping
/// module) and its evaluation plan. Every planned rule is evaluated once on a
/// sample input, which warms the engine so clones start prepared, surfaces
/// the errors regorus only reports at evaluation, and tells which contract
/// rules the package actually declares.
fn tool_engine(
    decl: &ToolDecl,
    Own { own, shadow }: Own<'_>,
    base: &std::sync::Arc<regorus::Engine>,
    library: &[(&str, &str)],
    resolver_rules: &[&str],
    limits: &Limits,
) -> Result<ToolEngine, LocatedError> {
    let mut engine = (**base).clone();
    // What is added to the base, in order, for the engine's recipe.
    let mut added: Vec<(String, std::sync::Arc<str>)> = Vec::new();
    // Every module that could declare a contract rule: (file, package).
    let modules: Vec<(&str, &str)> = own
        .iter()
        .chain(shadow)
        .map(|p| (p.path.as_str(), p.package.as_str()))
        .chain(library.iter().copied())
        .collect();
    for p in own.iter().chain(shadow) {
        policy::add_policy(&mut engine, &p.path, p.text).map_err(LocatedError::Diag)?;
        added.push((p.path.clone(), p.text.into()));
    }
    let mut candidates = Vec::new();
    if let Some(module) = generate::mapping_module(&decl.name, &decl.resolve) {
        let gen_path = format!("regent-generated/{}.rego", decl.name);
        policy::add_policy(&mut engine, &gen_path, &module).map_err(LocatedError::Diag)?;
        added.push((gen_path, module.into()));
        candidates.push((
            Field::Mapping,
            generate::MAPPING_RULE.to_string(),
            String::new(),
        ));
    }
    if let Some(pkg) = &decl.policy {
        for rule in generate::CONTRACT_RULES {
            candidates.push((
                Field::Contract(rule),
                generate::rule_ref(pkg, rule),
                format!("{pkg}.{rule}"),
            ));
        }
    }

    engine.set_input(policy::input(
        &decl.name,
        &schema::sample(&decl.input_schema),
    ));
    let mut plan = Vec::new();
    let mut visible = None;
    for (field, path, dotted) in candidates {
        // A contract rule is planned when a loaded module declares it.
        if field != Field::Mapping && !declares(&engine, &modules, &dotted) {
            continue;
        }
        if field == Field::Contract(generate::VISIBLE_RULE) {
            visible = Some(path);
            continue;
        }
        let step = warmed_step(path, &mut engine, limits)
            .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?;
        plan.push((field, step));
    }
    // The shadow plan: the same mapping rule (YAML rules are layered under
    // either policy), then the shadow package's contract rules but
    // `visible`, which decides listing, not a request. A failure here is
    // kept beside the step, for a warning: it must not stop the enforced
    // policy from loading.
    let mut shadow_plan: Vec<(Field, policy::Step)> = plan
        .iter()
        .filter(|(f, _)| *f == Field::Mapping)
        .cloned()
        .collect();
    let mut shadow_errors = Vec::new();
    if let Some(pkg) = &decl.shadow_policy {
        for rule in generate::CONTRACT_RULES {
            if *rule == generate::VISIBLE_RULE {
                continue;
            }
            if !declares(&engine, &modules, &format!("{pkg}.{rule}")) {
                continue;
            }
            let path = generate::rule_ref(pkg, rule);
            let step = match warmed_step(path.clone(), &mut engine, limits) {
                Ok(step) => step,
                Err((e, step)) => {
                    shadow_errors.push(LocatedError::Eval(e.location, e.message));
                    step
                }
            };
            shadow_plan.push((Field::Contract(rule), step));
        }
    }
    let steps = resolver_rules
        .iter()
        .map(|rule| resolver_step(&mut engine, &modules, rule, limits))
        .collect();
    // `visible` is warmed last, on the listing's input (no arguments, no
    // caller): an error there is a load error, as for the other contract
    // rules; a value of the wrong type is judged per caller, where it hides
    // the tool.
    let visible = match visible {
        Some(path) => {
            engine.set_input(policy::listing_input(&decl.name, None));
            Some(
                warmed_step(path, &mut engine, limits)
                    .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?,
            )
        }
        None => None,
    };
    // `upstream_request` likewise, on the input of an upstream's request
    // during a call (the sample arguments, an elicitation without params).
    let upstream_request = match &decl.policy {
        Some(pkg)
            if declares(
                &engine,
                &modules,
                &format!("{pkg}.{}", generate::UPSTREAM_REQUEST_RULE),
            ) =>
        {
            engine.set_input(policy::upstream_request_input(
                &decl.name,
                &schema::sample(&decl.input_schema),
                None,
                "elicitation/create",
                &serde_json::json!({}),
            ));
            let path = generate::rule_ref(pkg, generate::UPSTREAM_REQUEST_RULE);
            Some(
                warmed_step(path, &mut engine, limits)
                    .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))?,
            )
        }
        _ => None,
    };
    Ok(ToolEngine {
        engine,
        added,
        plan,
        resolver_steps: steps,
        visible,
        upstream_request,
        shadow: (shadow_plan, shadow_errors),
    })
}

/// The policy files a tool's engine holds beside the libraries: those of
/// its enforced package and those of its shadow package.
#[derive(Clone, Copy)]
struct Own<'a> {
    own: &'a [&'a PolicyFile<'a>],
    shadow: &'a [&'a PolicyFile<'a>],
}

/// Evaluates `step` once to warm the engine and surface evaluation errors at
/// load. The first evaluation on a fresh engine also pays one-time costs
/// (lazily built tables, compiled patterns), which on a loaded or
/// instrumented machine (valgrind) can pass the time limit on their own; a
/// time-out is therefore tried once more, warm, before it fails the load.
fn warm(
    step: &policy::Step,
    engine: &mut regorus::Engine,
    limits: &Limits,
) -> Result<Option<Value>, policy::EvalError> {
    match step.eval(engine, limits) {
        Err(e) if e.timed_out => step.eval(engine, limits),
        other => other,
    }
}

/// A prepared engine, its per-request plan, one step (or the reason
/// there is none) per policy resolver rule, the `visible` rule's step
/// when the package declares one, and the shadow plan with the failures
/// its warm-up met.
struct ToolEngine {
    engine: regorus::Engine,
    /// The modules added to the base, in order: the engine's recipe.
    added: Vec<(String, std::sync::Arc<str>)>,
    plan: Vec<(Field, policy::Step)>,
    resolver_steps: Vec<Result<policy::Step, LocatedError>>,
    visible: Option<policy::Step>,
    upstream_request: Option<policy::Step>,
    shadow: (Vec<(Field, policy::Step)>, Vec<LocatedError>),
}

/// The step that evaluates a policy resolver's rule, checked to exist and
/// evaluated once on the sample input (which the engine holds).
fn resolver_step(
    engine: &mut regorus::Engine,
    modules: &[(&str, &str)],
    rule: &str,
    limits: &Limits,
) -> Result<policy::Step, LocatedError> {
    let dotted = rule.strip_prefix("data.").unwrap_or(rule);
    if !declares(engine, modules, dotted) {
        return Err(LocatedError::Undeclared(rule.to_string()));
    }
    warmed_step(rule.to_string(), engine, limits)
        .map_err(|(e, _)| LocatedError::Eval(e.location, e.message))
}

/// Whether a module of `modules` (file, package) declares a rule at
/// `dotted` (`tools.files.deny`) or below it (regorus takes the path
/// relative to the module's package). When regorus cannot say, assume it
/// does: evaluating an absent rule by query is merely undefined, while
/// skipping a present one would silently drop its answer.
fn declares(engine: &regorus::Engine, modules: &[(&str, &str)], dotted: &str) -> bool {
    modules.iter().any(|(file, package)| {
        dotted
            .strip_prefix(&format!("{package}."))
            .is_some_and(|root| {
                engine
                    .has_declared_rule_rooted_at(file, root)
                    .unwrap_or(true)
            })
    })
}

/// The step that reads `path`, evaluated once on the input `engine` holds:
/// by `eval_rule`, or, for a rule defined by path
/// (`annotations.readOnlyHint := ...`), whose prefix `eval_rule` refuses,
/// by query. On failure, the error and the step as far as it got.
fn warmed_step(
    path: String,
    engine: &mut regorus::Engine,
    limits: &Limits,
) -> Result<policy::Step, (policy::EvalError, policy::Step)> {
    let mut step = policy::Step {
        path,
        by_query: false,
    };
    match warm(&step, engine, limits) {
        Ok(_) => Ok(step),
        Err(e) if policy::is_undeclared(&e) => {
            step.by_query = true;
            match warm(&step, engine, limits) {
                Ok(_) => Ok(step),
                Err(e) => Err((e, step)),
            }
        }
        Err(e) => Err((e, step)),
    }
}

enum LocatedError {
    Diag(Diagnostic),
    /// A resolver's rule that no loaded module declares.
    Undeclared(String),
    Eval(Option<Location>, String),
}

impl LocatedError {
    /// `sample` is the input the engine was prepared with.
    fn located_or(self, fallback: Location, sample: &Value) -> Diagnostic {
        match self {
            LocatedError::Diag(d) => d,
            LocatedError::Undeclared(rule) => Diagnostic::error(
                "resolver-policy",
                fallback,
                format!("no policy module declares the resolver rule `{rule}`"),
            )
            .with_help("define the rule in the tool's policy package, or fix its name"),
            LocatedError::Eval(loc, msg) if crate::policy::errors::is_conflict(&msg) => Diagnostic::error(
                "rego-conflict",
                loc.unwrap_or(fallback),
                format!("rules conflict for arguments {sample}: {msg}"),
            )
            .with_help(crate::policy::errors::CONFLICT_HELP),
            LocatedError::Eval(loc, msg) => Diagnostic::error(
                "policy-eval",
                loc.unwrap_or(fallback),
                format!("policy fails when evaluated on the sample arguments {sample}: {msg}"),
            )
            .with_help("fix the rule; regorus reports unknown functions, wrong arity and unsafe variables only when a rule runs"),
        }
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Catalog>();
    let _: HashMap<(), ()> = HashMap::new();
}

/// The values a `when` entry compares its argument with: the items of a
/// list (any of them), or the one value; `null` stands for an absent
/// argument, never a value, and is left out.
fn when_values(expected: &Value) -> Vec<&Value> {
    match expected {
        Value::Array(vs) => vs.iter().filter(|v| !v.is_null()).collect(),
        Value::Null => Vec::new(),
        v => vec![v],
    }
}

/// Why a `when` value can never equal the argument, judged by the
/// argument's declared `type`: "{...}, which its type string does not
/// allow". `None` when it can, or when the schema leaves it open. Arrays
/// and objects are not judged: a list in `when` means any of its items,
/// and an object argument may be compared with an object.
fn type_mismatch(prop: &Value, expected: &Value) -> Option<String> {
    let types: Vec<&str> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if types.is_empty() || types.iter().any(|t| matches!(*t, "array" | "object")) {
        return None;
    }
    let fits = |v: &Value| match v {
        Value::Null => true, // never given: `when_values` leaves it out
        Value::Bool(_) => types.contains(&"boolean"),
        Value::String(_) => types.contains(&"string"),
        Value::Number(n) => {
            types.contains(&"number")
                || (types.contains(&"integer")
                    && (n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)))
        }
        Value::Array(_) | Value::Object(_) => false,
    };
    let bad = when_values(expected).into_iter().find(|v| !fits(v))?;
    Some(format!(
        "{bad}, which its type {} does not allow",
        types.join(" or ")
    ))
}
