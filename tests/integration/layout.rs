//! The dependency check of issue 34: "dependencies run down" (ARCHITECTURE.md's
//! invariants), checked on the source rather than trusted to review.
//!
//! It parses every `src/**/*.rs` file with `syn` (not regexes: nested `use`
//! groups, `self`/`super`, paths in expressions and types, paths inside macro
//! calls read as tokens), resolves each path that names a module of the crate
//! (`crate::…`, `super::…`, `self::…`, a child module, a name a `use` bound to
//! a module) to the file that defines it, and builds two graphs: between
//! files, and between top-level modules (`src/x.rs` and everything under
//! `src/x/`). It then fails, with every problem listed, on
//! - an arrow between top-level modules that [`ALLOWED`] does not list,
//! - a cycle between top-level modules,
//! - a cycle between files of the crate (a module's root file, `mod.rs` or
//!   `x.rs` beside `x/`, declares its children and may re-export them, and a
//!   child may use what its parent defines: arrows between a file and the root
//!   file of a module enclosing it are not counted),
//!
//! except the known ones of [`KNOWN_ARROWS`], [`KNOWN_MODULE_CYCLES`] and
//! [`KNOWN_FILE_CYCLES`], each with why it is still there. A known entry that
//! no longer occurs fails too, so the lists only shrink. `src/main.rs` is
//! another crate (it uses `regent::`) and is not read.
//!
//! It reads files only; it does not build or run regent. This file holds
//! the tables and the check of the project's layout; the checker is one job
//! per file: `read` (the `use` paths into a graph between files), `graph`
//! (its cycles), `report` (the problems against the tables), `self_test`
//! (the checker on a crate written for it).

use std::path::Path;

mod graph;
mod read;
mod report;
mod self_test;

use read::read_crate;
use report::problems;

/// The arrows allowed between top-level modules: each module and the modules
/// it may use. This is the table ARCHITECTURE.md's "Dependencies run down"
/// invariant points at; the order follows its bird's-eye view (files ->
/// source -> catalog -> protocol -> resolve/execute), leaf utilities first.
/// A module not listed here may use nothing; a new module gets a row.
/// The table itself must be acyclic (checked).
pub const ALLOWED: &[(&str, &[&str])] = &[
    // Leaf utilities (LEAVES): every module may use them, they use no
    // module but another leaf.
    ("diag", &[]),
    ("canonical", &[]),
    ("json_value", &[]),
    ("par", &[]),
    ("heap", &[]),
    ("timestamp", &[]),
    ("metrics", &[]),
    ("outbound", &[]),
    ("jwt_crypto", &[]),
    // Path fences: compiled into the catalog's tools, applied by `protocol`.
    ("fence", &[]),
    // What a compiled `run:` is, below `source`, `catalog` and `exec`.
    ("run_plan", &[]),
    // OPA v1's answers for builtins, on regorus values: pure functions.
    ("opa_builtins", &[]),
    // Which `_meta` keys a catalog may set (its YAML, a policy's literals).
    ("meta_keys", &[]),
    // Strings a regular expression matches, for the analyses' samples.
    ("regex_samples", &[]),
    // Files -> source: YAML/JSON into a shape-checked model.
    ("source", &["run_plan"]),
    ("caller", &["source"]),
    ("scopes", &["caller"]),
    ("bundle", &["source"]),
    // Rego as syntax: the only reader of regorus' syntax tree; the Rego
    // generated from YAML rules (`source`'s mapping rules).
    (
        "rego",
        &["meta_keys", "opa_builtins", "regex_samples", "source"],
    ),
    // Policy evaluation: warm regorus engines, the native evaluator, the
    // budget of one evaluation, regorus' error texts. Not `catalog`: a
    // catalog holds engine pools, the pools know nothing of tools.
    ("policy", &["caller", "opa_builtins", "rego"]),
    // Source -> catalog: the compiled, immutable snapshot.
    (
        "catalog",
        &[
            "caller",
            "fence",
            "meta_keys",
            "policy",
            "regex_samples",
            "rego",
            "run_plan",
            "source",
        ],
    ),
    // What only `check`, `test`, `review` and `--explain` ask of a built
    // catalog (the proof, the exercise, explain, Rego tests). Above
    // `catalog`: nothing on the serving path may use it, only the rows
    // below that report (`testing`, `check`, `review`, `commands`, and
    // the test-only `differential`).
    (
        "analysis",
        &[
            "caller",
            "catalog",
            "opa_builtins",
            "policy",
            "regex_samples",
            "rego",
            "source",
        ],
    ),
    ("state", &["catalog", "source"]),
    // Around a call: filling parameters, running it, logging the decision.
    ("fill", &["catalog", "run_plan", "source"]),
    ("exec", &["run_plan"]),
    // `state` names the bundle a catalog revision came from (`Bundles`).
    ("decisions", &["caller", "source", "state"]),
    ("upstream", &["exec", "run_plan", "source", "state"]),
    // Catalog -> protocol: the only place that knows MCP wire types.
    // `upstream` is below it: `protocol` forwards decided calls through it.
    (
        "protocol",
        &[
            "caller",
            "catalog",
            "decisions",
            "exec",
            "fence",
            "fill",
            "policy",
            "run_plan",
            "scopes",
            "source",
            "state",
            "upstream",
        ],
    ),
    ("http", &["caller", "protocol", "state"]),
    // What `regent test` and `regent check` run. `testing` is a client of
    // `protocol`, above it on purpose: a case is answered by the functions
    // that build the wire's answer (`resolve_result`, `shadow_result`,
    // `wire::tool_json`; refusals as `protocol::Refusal`), so `regent test`
    // judges what a client would be sent, built in one place. `policy`
    // for the numbers a case spells by hand (`policy::spelled`), which its
    // evaluations see as `serve`'s see a request's.
    (
        "testing",
        &[
            "analysis", "caller", "catalog", "fence", "policy", "protocol", "source",
        ],
    ),
    (
        "check",
        &[
            "analysis", "caller", "catalog", "policy", "rego", "run_plan", "source", "testing",
        ],
    ),
    // Hot reload: rebuilds with `check::on_load`, swaps in `state`. Not
    // `protocol`: the listing digest that decides `list_changed` is a
    // function `serve` hands in (`reload::Settings::listing`). Not
    // `upstream`: the upstreams' snapshots are `state::UpstreamSnapshots`,
    // and supervisors ask for reloads through `upstream::supervise::Reload`,
    // which `commands/serve` implements for `reload::Requester`.
    ("reload", &["bundle", "catalog", "check", "source", "state"]),
    // `regent review`: the decision tables of what `check` kept.
    (
        "review",
        &["analysis", "caller", "catalog", "check", "fence", "rego"],
    ),
    // The differential tests (test builds only): regent's evaluators and
    // builtins against regorus and OPA, on the catalogs `catalog` builds,
    // and whether `check` flags what fails closed. Nothing uses it.
    (
        "differential",
        &[
            "analysis",
            "caller",
            "catalog",
            "check",
            "opa_builtins",
            "policy",
            "regex_samples",
            "source",
        ],
    ),
    // The command line and the subcommands wire everything together; only
    // `main.rs` is above them.
    ("cli", &["decisions"]),
    (
        "commands",
        &[
            "analysis",
            "bundle",
            "caller",
            "catalog",
            "check",
            "cli",
            "decisions",
            "fence",
            "http",
            "policy",
            "protocol",
            "reload",
            "review",
            "source",
            "state",
            "testing",
            "upstream",
        ],
    ),
    // `lib.rs`: declares the modules, uses none.
    ("crate", &[]),
];

/// The leaf utilities of ARCHITECTURE.md's code map: any module may use
/// them (not repeated in [`ALLOWED`]'s rows); their own rows name leaves only.
pub const LEAVES: &[&str] = &[
    "diag",
    "canonical",
    "json_value",
    "par",
    "heap",
    "timestamp",
    "metrics",
    "outbound",
    "jwt_crypto",
];

/// Arrows between top-level modules that break the table, still to be
/// removed by the layout work of issue 34: (from, to, why it is there).
pub const KNOWN_ARROWS: &[(&str, &str, &str)] = &[];

/// Cycles between top-level modules, still to be broken (issue 34): the
/// modules of each, sorted, and why. A cycle found among a subset of a
/// known one's members is known (a cycle partly broken still passes); one
/// with a member outside it fails.
pub const KNOWN_MODULE_CYCLES: &[(&[&str], &str)] = &[];

/// Cycles between files, still to be broken (issue 34): the files of each
/// (paths under `src/`, sorted), and why; matched as the module cycles are.
pub const KNOWN_FILE_CYCLES: &[(&[&str], &str)] = &[];

#[test]
fn layout_dependencies_run_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = read_crate(&src).expect("the crate's sources parse");
    let problems = problems(
        &graph,
        ALLOWED,
        LEAVES,
        KNOWN_ARROWS,
        KNOWN_MODULE_CYCLES,
        KNOWN_FILE_CYCLES,
    );
    assert!(
        problems.is_empty(),
        "the module layout breaks \"dependencies run down\" (ARCHITECTURE.md, invariants; table in tests/integration/layout.rs):\n  {}",
        problems.join("\n  ")
    );
}
