//! A compiled `run.cli`: the program, the argv template (elements, groups
//! dropped when an argument is absent, `if` branches), the arguments allowed
//! to start with `-`, the environment, standard input and the limits.
//!
//! Rendering it for a call, the checks on each element and starting the
//! program are `exec::cli`'s. [`find_in_path`] is the one lookup of a bare
//! program name in regent's `PATH`, at each call (and by `check` and
//! `upstream`), never while a catalog is built.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::template::{self, Template};
use super::{Conditions, ValueFrom};

/// Environment variables a command gets from regent when the tool does not
/// list its own: enough to find programs and to speak the user's language.
pub const DEFAULT_INHERIT: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

/// A compiled `run.cli`.
#[derive(Debug)]
pub struct CliSpec {
    pub program: Program,
    pub args: Vec<ArgNode>,
    /// Arguments whose values may start with `-`.
    pub flags: BTreeSet<String>,
    pub cwd: Option<Template>,
    /// The tool file's directory: relative paths are relative to it.
    pub base_dir: PathBuf,
    pub env_inherit: Vec<String>,
    pub env_set: Vec<(String, ValueFrom)>,
    pub stdin: Option<String>,
    pub timeout: Duration,
    pub max_output: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An absolute path.
    Path(PathBuf),
    /// A bare name, looked up in regent's `PATH` at each call.
    Search(String),
}

/// One node of an argv template.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgNode {
    Element(Template),
    /// Dropped as a whole when an argument it names is absent.
    Group(Vec<ArgNode>),
    If {
        condition: Condition,
        then: Vec<ArgNode>,
        otherwise: Vec<ArgNode>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The argument is present and not `false`.
    Arg(String),
    When(Conditions),
}

impl Condition {
    /// Whether the condition holds for `args`.
    pub fn holds(&self, args: &Value) -> bool {
        match self {
            Condition::Arg(name) => !matches!(
                template::lookup(args, name),
                None | Some(Value::Bool(false))
            ),
            Condition::When(c) => c.matches(args),
        }
    }
}

/// The first executable file called `name` in regent's `PATH`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `path` made absolute against `base` (the tool file's directory).
pub fn absolute(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}
