//! The parsed source model: every catalog file read from disk, checked for
//! shape, with positions kept for later diagnostics.
//!
//! This layer knows YAML, JSON and file names. It does not know Rego (policy
//! files are carried as text), JSON Schema semantics or MCP; `catalog`
//! compiles what is here into something that can answer requests.

pub mod files;
pub mod json_numbers;
pub mod locate;
pub mod model;
pub mod resolvers;
pub mod run;
pub mod tool_name;
pub mod upstream;

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::diag::{Diagnostic, Diagnostics, Location};
pub use files::{FileKind, SourceFile};
pub use locate::{LocationIndex, YamlPath};
pub use model::{HintValues, MappingRule, StaticAnnotations, ToolDecl};

/// One `*.yaml` tool file. Defined here, above `model` and `upstream`,
/// because it holds both tools and upstreams.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFile {
    #[serde(default)]
    pub tools: Vec<ToolDecl>,
    /// MCP servers whose tools regent imports (see `source::upstream`).
    #[serde(default)]
    pub upstreams: Vec<upstream::UpstreamDecl>,
    /// The shape of the verified caller (`input.caller`), at most one per
    /// catalog (see `catalog::caller_schema`).
    #[serde(default)]
    pub caller: Option<model::CallerDecl>,
}

/// One parsed tool file.
#[derive(Debug, Clone)]
pub struct ToolSource {
    pub path: PathBuf,
    pub model: ToolFile,
    pub index: LocationIndex,
}

impl ToolSource {
    /// Where `path` (inside this file) is, as a diagnostic location.
    pub fn locate(&self, path: &YamlPath) -> Location {
        let (line, column) = self.index.locate(path);
        Location::new(&self.path, line, column)
    }
}

/// One parsed `*.json` data document.
#[derive(Debug, Clone)]
pub struct DataSource {
    pub path: PathBuf,
    pub value: Value,
    /// Its numbers other than plain integers, as the file spells them
    /// (OPA keeps that text; `rego::data_numbers` compares it with
    /// regent's).
    pub numbers: Vec<json_numbers::NumberText>,
}

/// Everything under the paths regent was given.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub tool_files: Vec<ToolSource>,
    /// `*.rego` files, with `*_test.rego` marked as [`FileKind::PolicyTest`].
    pub policies: Vec<SourceFile>,
    pub data: Vec<DataSource>,
    /// `*.test.yaml` case files for `regent test`.
    pub cases: Vec<SourceFile>,
    /// sha256 over every file's path and content: the catalog revision
    /// (with the upstreams' snapshots folded in once they are imported).
    pub digest: String,
    /// Tools imported from upstream MCP servers (`Source::import_upstreams`).
    pub imported: Vec<upstream::Imported>,
    /// Upstream tools held back because they drifted from their pin
    /// (`Source::import_served`), for the catalog to refuse by name.
    pub quarantined: Vec<upstream::Quarantined>,
}

impl Source {
    /// Reads and parses every catalog file under `paths`. Returns all the
    /// problems found, not only the first, so one run shows everything to fix.
    pub fn load(paths: &[PathBuf]) -> Result<Source, Diagnostics> {
        let (source, diags) = Source::load_partial(paths).map_err(|d| Diagnostics(vec![d]))?;
        if diags.has_errors() {
            return Err(diags);
        }
        Ok(source)
    }

    /// Like [`Source::load`], but keeps every file that parsed beside the
    /// problems of those that did not, so that `regent check` can go on
    /// checking the rest. Fails only when the paths themselves cannot be read.
    pub fn load_partial(paths: &[PathBuf]) -> Result<(Source, Diagnostics), Diagnostic> {
        let mut diags = Diagnostics::default();
        let found = files::discover(paths)?;
        // Reading and parsing are independent per file, so they run in
        // parallel; hashing and collecting stay in path order.
        let loaded = crate::par::map_ordered(&found, 16, |(path, kind)| {
            let file = files::read(path, *kind)?;
            let parsed = match kind {
                FileKind::Tools => Some(parse_tool_file(path, &file.text).map(Parsed::Tools)),
                FileKind::Data => Some(parse_data(path, &file.text).map(Parsed::Data)),
                FileKind::Policy | FileKind::PolicyTest | FileKind::Cases => None,
            };
            Ok::<_, Diagnostic>((file, parsed))
        });
        let mut source = Source::default();
        let mut hasher = Sha256::new();
        for item in loaded {
            let (file, parsed) = match item {
                Ok(f) => f,
                Err(d) => {
                    diags.push(d);
                    continue;
                }
            };
            hasher.update(file.path.to_string_lossy().as_bytes());
            hasher.update([0]);
            hasher.update((file.text.len() as u64).to_le_bytes());
            hasher.update(file.text.as_bytes());
            match (file.kind, parsed) {
                (_, Some(Ok(Parsed::Tools(t)))) => source.tool_files.push(t),
                (_, Some(Ok(Parsed::Data(d)))) => source.data.push(d),
                (_, Some(Err(d))) => diags.push(d),
                (FileKind::Cases, None) => source.cases.push(file),
                (_, None) => source.policies.push(file),
            }
        }
        source.digest = base16ct::lower::encode_string(&hasher.finalize());
        check_duplicate_names(&source, &mut diags);
        upstream::check_endpoints(&source, &mut diags);
        diags.sort();
        Ok((source, diags))
    }

    /// Every declared tool with the file it came from and its path in that file.
    /// Imported upstream tools come last, at the upstream's entry in its file.
    pub fn tools(&self) -> impl Iterator<Item = (&ToolSource, YamlPath, &ToolDecl)> {
        let own = self.tool_files.iter().flat_map(|f| {
            f.model
                .tools
                .iter()
                .enumerate()
                .map(move |(i, t)| (f, YamlPath::root().key("tools").index(i), t))
        });
        let imported = self
            .imported
            .iter()
            .map(|i| (&self.tool_files[i.file], i.at.clone(), &i.decl));
        own.chain(imported)
    }
}

/// A file parsed by kind; policies and cases stay text.
enum Parsed {
    Tools(ToolSource),
    Data(DataSource),
}

/// Parses a tool file. An empty file (or one holding only comments) declares no tools.
pub fn parse_tool_file(path: &Path, text: &str) -> Result<ToolSource, Diagnostic> {
    let index = LocationIndex::build(text);
    // One parse: an empty document (or only comments) is `None`; anything
    // else deserializes, and fails, exactly as a `ToolFile` would.
    let model = yaml_serde::from_str::<Option<ToolFile>>(text)
        .map_err(|e| yaml_error(path, &e))?
        .unwrap_or(ToolFile {
            tools: Vec::new(),
            upstreams: Vec::new(),
            caller: None,
        });
    Ok(ToolSource {
        path: path.to_path_buf(),
        model,
        index,
    })
}

/// Turns a YAML error into a diagnostic: its location, a message without the
/// trailing "at line N column M", and for an unknown key the nearest valid one.
pub fn yaml_error(path: &Path, e: &yaml_serde::Error) -> Diagnostic {
    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
    let text = e.to_string();
    let message = match text.find(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text.clone(),
    };
    let is_syntax = !message.contains("unknown field")
        && !message.contains("missing field")
        && !message.contains("invalid type")
        && !message.contains("invalid value");
    // yaml_serde stops expanding aliases past its limits (a "billion laughs"
    // file would otherwise take all memory) and says so without a location.
    let expansion = message.contains("repetition limit exceeded")
        || message.contains("recursion limit exceeded");
    let code = if message.contains("unknown field") {
        "unknown-key"
    } else if expansion {
        "yaml-limit"
    } else if is_syntax {
        "yaml-syntax"
    } else {
        "yaml-shape"
    };
    let mut d = Diagnostic::error(code, Location::new(path, line, column), message.clone());
    if let Some(help) = suggest_key(&message) {
        d = d.with_help(help);
    } else if expansion {
        d = d.with_help(
            "the file expands YAML aliases (`*name`) or nests past what regent reads; write the values out instead of repeating anchors",
        );
    } else if code == "yaml-shape" && message.contains("missing field") {
        d = d.with_help("add the missing key; see the file format in the README");
    } else if code == "yaml-shape" {
        d = d.with_help(
            "give the key a value of the expected type; schemas/regent.schema.json lists them",
        );
    } else if code == "yaml-syntax" {
        d = d.with_help("fix the YAML at the caret: usual causes are an unclosed bracket or quote, a tab in indentation, or `: ` inside an unquoted value");
    }
    d
}

/// From serde's "unknown field `x`, expected one of `a`, `b`", the nearest
/// expected key, if one is close enough to be a likely typo.
fn suggest_key(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    key_help(unknown, &expected)
}

/// What to do about the unknown key `unknown` where `expected` are allowed:
/// the nearest one when it is close enough to be a likely typo, else the list.
pub fn key_help(unknown: &str, expected: &[&str]) -> Option<String> {
    let best = expected
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&unknown.to_lowercase(), &k.to_lowercase()),
                *k,
            )
        })
        .min()?;
    if best.0 <= 3.max(unknown.len() / 3) {
        Some(format!("did you mean `{}`?", best.1))
    } else {
        Some(format!(
            "remove it; the keys allowed here are {}",
            expected
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

fn parse_data(path: &Path, text: &str) -> Result<DataSource, Diagnostic> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = match msg.find(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        Diagnostic::error(
            "json-syntax",
            Location::new(path, e.line(), e.column()),
            format!("invalid json: {msg}"),
        )
        .with_help("fix the JSON at the caret (JSON allows no trailing commas or comments)")
    })?;
    if !value.is_object() {
        return Err(Diagnostic::error(
            "data-not-object",
            Location::new(path, 1, 1),
            "a data file must hold a json object",
        )
        .with_help("wrap the value in an object; its keys become top-level names under `data`"));
    }
    Ok(DataSource {
        path: path.to_path_buf(),
        value,
        numbers: json_numbers::unplain_numbers(text),
    })
}

fn check_duplicate_names(source: &Source, diags: &mut Diagnostics) {
    // Where a name is declared is looked up only for a duplicate: most
    // catalogs have none, and a large one has thousands of names.
    let mut first: std::collections::HashMap<&str, (&ToolSource, YamlPath)> = Default::default();
    for (file, path, tool) in source.tools() {
        if let Some((prev_file, prev_path)) = first.get(tool.name.as_str()) {
            let prev = prev_file.locate(&prev_path.key("name"));
            diags.push(
                Diagnostic::error(
                    "duplicate-tool",
                    file.locate(&path.key("name")),
                    format!("tool `{}` is declared twice", tool.name),
                )
                .with_help(format!(
                    "the first declaration is at {prev}; rename or remove one"
                )),
            );
        } else {
            first.insert(&tool.name, (file, path));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_tool_files_declare_nothing_and_errors_read_as_before() {
        for empty in ["", "\n", "# only a comment\n", "---\n", "~\n", "null\n"] {
            let t = parse_tool_file(Path::new("t.yaml"), empty)
                .unwrap_or_else(|d| panic!("{empty:?}: {d}"));
            assert!(t.model.tools.is_empty(), "{empty:?}");
        }
        for bad in [
            "tools: 5\n",
            "tool:\n  - name: x\n",
            "- a\n",
            "tools:\n  - name: x\n    inputSchema: {}\n    bogus: 1\n",
        ] {
            let direct = yaml_serde::from_str::<ToolFile>(bad).unwrap_err();
            let d = parse_tool_file(Path::new("t.yaml"), bad).unwrap_err();
            assert_eq!(d, yaml_error(Path::new("t.yaml"), &direct), "{bad:?}");
        }
    }
}
