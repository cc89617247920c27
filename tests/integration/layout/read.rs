//! Reading the crate: every `src/**/*.rs` file (but `main.rs`) parsed with
//! `syn`, each path that names a module of the crate (`use` trees with
//! nested groups, `self`/`super`, paths in expressions and types, paths in
//! macro calls read as tokens, names a `use` bound to a module) resolved to
//! the file that defines it, as a [`Graph`] between files. What the graph
//! may hold is `report`'s; finding cycles in it is `graph`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

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
