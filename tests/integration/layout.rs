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
//! It reads files only; it does not build or run regent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

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
    ("par", &[]),
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
    // judges what a client would be sent, built in one place.
    (
        "testing",
        &[
            "analysis", "caller", "catalog", "fence", "protocol", "source",
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
    // builtins against regorus and OPA, on the catalogs `catalog` builds.
    // Nothing uses it.
    (
        "differential",
        &[
            "analysis",
            "caller",
            "catalog",
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
    "par",
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

/// A module of the crate as its path segments (`["http", "jwt"]`; the crate
/// root is `[]`).
type ModPath = Vec<String>;

/// What one file uses: per target file, the first path seen naming it.
#[derive(Debug, Default)]
pub struct Graph {
    /// file (relative to `src/`) -> used file -> an example path, as written.
    pub edges: BTreeMap<String, BTreeMap<String, String>>,
    /// module path of each file's root -> the file.
    pub files: BTreeMap<ModPath, String>,
}

/// Reads every `.rs` file under `src` (but `main.rs`) and builds the graph.
pub fn read_crate(src: &Path) -> Result<Graph, String> {
    let mut paths = Vec::new();
    collect_rs(src, &mut paths)?;
    let mut files = BTreeMap::new();
    for path in &paths {
        let rel = relative(src, path);
        if rel == "main.rs" {
            continue;
        }
        files.insert(module_of(&rel), rel);
    }
    let mut graph = Graph {
        files,
        ..Graph::default()
    };
    let sources: Vec<(ModPath, String)> = graph
        .files
        .iter()
        .map(|(m, f)| (m.clone(), f.clone()))
        .collect();
    for (module, rel) in sources {
        let text = std::fs::read_to_string(src.join(&rel))
            .map_err(|e| format!("cannot read src/{rel}: {e}"))?;
        let parsed = syn::parse_file(&text).map_err(|e| format!("cannot parse src/{rel}: {e}"))?;
        let mut reader = Reader {
            graph: &graph,
            file: rel.clone(),
            current: module,
            aliases: BTreeMap::new(),
            found: BTreeMap::new(),
        };
        reader.visit_file(&parsed);
        let found = reader.found;
        graph.edges.entry(rel).or_default().extend(found);
    }
    Ok(graph)
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn relative(src: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(src).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `http/jwt.rs` -> `[http, jwt]`, `http/mod.rs` -> `[http]`, `lib.rs` -> `[]`.
pub fn module_of(rel: &str) -> ModPath {
    let mut segs: ModPath = rel.split('/').map(str::to_owned).collect();
    let last = segs.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (segs.is_empty() && stem == "lib")) {
        segs.push(stem.to_owned());
    }
    segs
}

/// The top-level module a file belongs to (`crate` for `lib.rs`).
pub fn top_of(rel: &str) -> String {
    module_of(rel)
        .first()
        .cloned()
        .unwrap_or_else(|| "crate".to_owned())
}

struct Reader<'g> {
    graph: &'g Graph,
    file: String,
    /// The module being read: the file's, plus any inline `mod x { … }`.
    current: ModPath,
    /// Names a `use` bound to a module of the crate, per module.
    aliases: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    found: BTreeMap<String, String>,
}

impl Reader<'_> {
    /// Resolves a path as written in the module being read; records an
    /// arrow to the file defining the longest module prefix of it. Returns
    /// the module the whole path names, when it names one.
    fn path(&mut self, segs: &[String]) -> Option<ModPath> {
        let first = segs.first()?;
        let (mut full, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (self.current.clone(), &segs[1..]),
            "super" => {
                let mut base = self.current.clone();
                let mut n = 0;
                while segs.get(n).is_some_and(|s| s == "super") {
                    base.pop()?;
                    n += 1;
                }
                (base, &segs[n..])
            }
            name => {
                let mut child = self.current.clone();
                child.push(name.to_owned());
                if let Some(alias) = self.aliases.get(&self.current).and_then(|a| a.get(name)) {
                    (alias.clone(), &segs[1..])
                } else if self.graph.files.contains_key(&child) {
                    (child, &segs[1..])
                } else {
                    return None;
                }
            }
        };
        full.extend(rest.iter().cloned());
        let mut prefix = full.clone();
        loop {
            if let Some(target) = self.graph.files.get(&prefix) {
                if *target != self.file {
                    self.found
                        .entry(target.clone())
                        .or_insert_with(|| segs.join("::"));
                }
                break;
            }
            prefix.pop()?;
        }
        self.graph.files.contains_key(&full).then_some(full)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                self.use_leaf(prefix, &name, &name);
            }
            syn::UseTree::Rename(r) => {
                self.use_leaf(prefix, &r.ident.to_string(), &r.rename.to_string());
            }
            syn::UseTree::Glob(_) => {
                self.path(prefix);
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], name: &str, bound: &str) {
        let mut segs = prefix.to_vec();
        if name != "self" {
            segs.push(name.to_owned());
        }
        let bound = if bound == "self" {
            prefix.last().cloned().unwrap_or_default()
        } else {
            bound.to_owned()
        };
        if let Some(module) = self.path(&segs) {
            self.aliases
                .entry(self.current.clone())
                .or_default()
                .insert(bound, module);
        }
    }

    /// Paths inside a macro call are not parsed by syn: read them from the
    /// tokens (`crate :: a :: b`, `super :: x`, `a :: b`).
    fn tokens(&mut self, tokens: TokenStream) {
        let mut segs: Vec<String> = Vec::new();
        let mut colons = 0;
        for tt in tokens {
            match tt {
                TokenTree::Ident(ident) => {
                    if colons == 2 || segs.is_empty() {
                        segs.push(ident.to_string());
                    } else {
                        self.flush(&mut segs);
                        segs.push(ident.to_string());
                    }
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !segs.is_empty() && colons < 2 => {
                    colons += 1;
                }
                TokenTree::Group(g) => {
                    self.flush(&mut segs);
                    colons = 0;
                    self.tokens(g.stream());
                }
                _ => {
                    self.flush(&mut segs);
                    colons = 0;
                }
            }
        }
        self.flush(&mut segs);
    }

    fn flush(&mut self, segs: &mut Vec<String>) {
        if segs.len() > 1 {
            self.path(segs);
        }
        segs.clear();
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // `mod x;` declares a child: not a use of it.
        if let Some((_, items)) = &item.content {
            self.current.push(item.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.current.pop();
        }
    }

    // `pub(crate)`, `pub(super)`, `pub(in crate::x)` say who may see an
    // item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.path(&segs);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The strongly connected components of more than one node (the cycles),
/// each sorted, by Tarjan's algorithm.
pub fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let lw = s.low[w.as_str()];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w.as_str()) {
                    let iw = s.index[w.as_str()];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// Whether `child`'s module lies inside the module whose root file is
/// `parent` (`http/mod.rs` encloses `http/jwt.rs`; `lib.rs` encloses all).
fn encloses(parent: &str, child: &str) -> bool {
    let (p, c) = (module_of(parent), module_of(child));
    p.len() < c.len() && c.starts_with(&p)
}

/// Every problem the graph has against the table and the known lists, as
/// lines of a message; empty when the layout is as allowed.
pub fn problems(
    graph: &Graph,
    allowed: &[(&str, &[&str])],
    leaves: &[&str],
    known_arrows: &[(&str, &str, &str)],
    known_module_cycles: &[(&[&str], &str)],
    known_file_cycles: &[(&[&str], &str)],
) -> Vec<String> {
    let mut out = Vec::new();
    let table: BTreeMap<&str, BTreeSet<&str>> = allowed
        .iter()
        .map(|(m, to)| (*m, to.iter().copied().collect()))
        .collect();

    // The table itself runs down.
    let table_edges: BTreeMap<String, BTreeSet<String>> = allowed
        .iter()
        .map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect()))
        .collect();
    for (m, to) in allowed {
        if leaves.contains(m) {
            for t in to.iter().filter(|t| !leaves.contains(t)) {
                out.push(format!(
                    "leaf `{m}` may use `{t}` in the table: a leaf uses only leaves (LEAVES)"
                ));
            }
        }
    }
    for cycle in cycles(&table_edges) {
        out.push(format!(
            "the table of allowed arrows has a cycle: {}",
            cycle.join(", ")
        ));
    }

    // Arrows between top-level modules, with an example of each.
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut example: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, to) in &graph.edges {
        let top = top_of(from);
        modules.entry(top.clone()).or_default();
        for (target, path) in to {
            let target_top = top_of(target);
            if target_top != top {
                modules
                    .entry(top.clone())
                    .or_default()
                    .insert(target_top.clone());
                example
                    .entry((top.clone(), target_top))
                    .or_insert_with(|| format!("src/{from} uses {path}"));
            }
        }
    }
    for (from, to) in &modules {
        let Some(may) = table.get(from.as_str()) else {
            out.push(format!(
                "module `{from}` has no row in the table of allowed arrows (tests/integration/layout.rs, ALLOWED): add one saying what it may use"
            ));
            continue;
        };
        for target in to {
            let known = known_arrows
                .iter()
                .any(|(f, t, _)| f == from && t == target);
            let leaf = leaves.contains(&target.as_str()) && !leaves.contains(&from.as_str());
            if !may.contains(target.as_str()) && !leaf && !known {
                out.push(format!(
                    "forbidden arrow {from} -> {target} ({}): dependencies run down (ARCHITECTURE.md); move the code below both, or add the arrow to ALLOWED if the table is wrong",
                    example[&(from.clone(), target.clone())]
                ));
            }
        }
    }
    for (from, to, _) in known_arrows {
        if !modules.get(*from).is_some_and(|t| t.contains(*to)) {
            out.push(format!(
                "known arrow {from} -> {to} no longer occurs: remove it from KNOWN_ARROWS"
            ));
        }
    }

    // `LAYOUT_DUMP=1 cargo test --test integration layout` prints the arrows
    // found, for updating the table.
    if std::env::var_os("LAYOUT_DUMP").is_some() {
        for (m, t) in &modules {
            eprintln!(
                "DUMP {m}: {}",
                t.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let module_cycles = cycles(&modules);
    check_cycles(
        &mut out,
        "modules",
        &module_cycles,
        known_module_cycles,
        |m| m.to_owned(),
    );

    // Cycles between files, leaving out arrows between a file and the root
    // file of a module enclosing it.
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in &graph.edges {
        let next = files.entry(from.clone()).or_default();
        for target in to.keys() {
            if !encloses(target, from) && !encloses(from, target) {
                next.insert(target.clone());
            }
        }
    }
    let file_cycles = cycles(&files);
    check_cycles(&mut out, "files", &file_cycles, known_file_cycles, |f| {
        let uses: Vec<String> = files[f]
            .iter()
            .filter(|t| {
                file_cycles
                    .iter()
                    .any(|c| c.iter().any(|x| x == f) && c.contains(t))
            })
            .map(|t| format!("{f} -> {t} ({})", graph.edges[f][t]))
            .collect();
        uses.join("; ")
    });
    out
}

fn check_cycles(
    out: &mut Vec<String>,
    what: &str,
    found: &[Vec<String>],
    known: &[(&[&str], &str)],
    describe: impl Fn(&str) -> String,
) {
    let within = |k: &[&str], cycle: &[String]| cycle.iter().all(|n| k.contains(&n.as_str()));
    for cycle in found {
        if !known.iter().any(|(k, _)| within(k, cycle)) {
            let arrows: Vec<String> = cycle.iter().map(|n| describe(n)).collect();
            out.push(format!(
                "cycle between {what}: {}\n    arrows: {}",
                cycle.join(", "),
                arrows.join("\n            ")
            ));
        }
    }
    for (k, _) in known {
        if !found.iter().any(|c| within(k, c)) {
            out.push(format!(
                "known cycle between {what} [{}] no longer occurs: remove it from the known list",
                k.join(", ")
            ));
        }
    }
}

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

/// The checker on a crate written here: every kind of path is read, an
/// allowed arrow passes, a cycle and a forbidden arrow are reported, and a
/// known cycle that is gone is reported as stale.
#[test]
fn layout_checker_reads_paths_and_finds_cycles() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "lib.rs",
        "pub mod low;\npub mod high;\npub(crate) mod leaf;\n",
    );
    write("leaf.rs", "pub fn f() {}\n");
    write("low/mod.rs", "pub mod a;\npub mod b;\n");
    // a <-> b through a nested group with `self`, and through a macro.
    write(
        "low/a.rs",
        "use crate::{leaf, low::{self, b::{self as bee}}};\npub fn g() { bee::h(); leaf::f(); }\n",
    );
    write(
        "low/b.rs",
        "pub fn h() { println!(\"{}\", super::a::g()); }\n",
    );
    // high -> low by a path in an expression, through a child module.
    write("high/mod.rs", "mod inner;\npub fn k() { inner::m() }\n");
    write("high/inner.rs", "pub fn m() { crate::low::a::g() }\n");
    let graph = read_crate(src).expect("parses");
    let uses = |from: &str| -> Vec<&str> { graph.edges[from].keys().map(String::as_str).collect() };
    assert_eq!(uses("low/a.rs"), ["leaf.rs", "low/b.rs", "low/mod.rs"]);
    assert_eq!(uses("low/b.rs"), ["low/a.rs"]);
    assert_eq!(uses("high/mod.rs"), ["high/inner.rs"]);
    assert_eq!(uses("high/inner.rs"), ["low/a.rs"]);

    let allowed: &[(&str, &[&str])] = &[
        ("leaf", &[]),
        ("low", &[]),
        ("high", &["low"]),
        ("crate", &[]),
    ];
    let found = problems(&graph, allowed, &["leaf"], &[], &[], &[]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("cycle between files: low/a.rs, low/b.rs"),
        "{found:#?}"
    );
    // Known, it passes; a known entry no longer found is stale.
    let known: &[(&[&str], &str)] = &[
        (&["low/a.rs", "low/b.rs"], "test"),
        (&["high/inner.rs", "high/x.rs"], "gone"),
    ];
    let found = problems(&graph, allowed, &["leaf"], &[], &[], known);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("[high/inner.rs, high/x.rs] no longer occurs"),
        "{found:#?}"
    );

    // low -> high is not in the table: a forbidden arrow, and a cycle between modules.
    write("low/b.rs", "pub fn h() { crate::high::k() }\n");
    let graph = read_crate(src).expect("parses");
    let found = problems(&graph, allowed, &["leaf"], &[], &[], &[]);
    assert!(
        found.iter().any(
            |p| p.starts_with("forbidden arrow low -> high (src/low/b.rs uses crate::high::k)")
        ),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("cycle between modules: high, low")),
        "{found:#?}"
    );
    // The table must run down itself.
    let circular: &[(&str, &[&str])] = &[
        ("leaf", &[]),
        ("low", &["high"]),
        ("high", &["low"]),
        ("crate", &[]),
    ];
    let found = problems(&graph, circular, &["leaf"], &[], &[], &[]);
    assert!(
        found
            .iter()
            .any(|p| p == "the table of allowed arrows has a cycle: high, low"),
        "{found:#?}"
    );
}
