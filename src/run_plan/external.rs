//! Values kept outside the catalog: regent's environment variables and
//! files, typically secrets. They are read when a call needs them (so a
//! rotated token file takes effect without a reload) and never logged:
//! messages name the variable or file, never the value.

use std::path::PathBuf;

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueFrom {
    Literal(String),
    Env {
        name: String,
        optional: bool,
        default: Option<String>,
    },
    /// An absolute path (relative paths are resolved against the tool file
    /// when the catalog loads). One trailing newline is removed.
    File {
        path: PathBuf,
        optional: bool,
        default: Option<String>,
    },
}

impl ValueFrom {
    /// The value, `Ok(None)` when it is missing and optional, or an error
    /// naming what is missing.
    pub fn read(&self) -> Result<Option<String>, String> {
        match self {
            ValueFrom::Literal(s) => Ok(Some(s.clone())),
            ValueFrom::Env {
                name,
                optional,
                default,
            } => match std::env::var(name) {
                Ok(v) => Ok(Some(v)),
                Err(std::env::VarError::NotUnicode(_)) => {
                    Err(format!("environment variable {name} is not valid utf-8"))
                }
                Err(std::env::VarError::NotPresent) => match (default, optional) {
                    (Some(d), _) => Ok(Some(d.clone())),
                    (None, true) => Ok(None),
                    (None, false) => Err(format!(
                        "environment variable {name} is not set in regent's environment"
                    )),
                },
            },
            ValueFrom::File {
                path,
                optional,
                default,
            } => match std::fs::read(path) {
                Ok(bytes) => {
                    let mut s = String::from_utf8(bytes)
                        .map_err(|_| format!("file {} is not valid utf-8", path.display()))?;
                    if s.ends_with('\n') {
                        s.pop();
                        if s.ends_with('\r') {
                            s.pop();
                        }
                    }
                    Ok(Some(s))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => match (default, optional) {
                    (Some(d), _) => Ok(Some(d.clone())),
                    (None, true) => Ok(None),
                    (None, false) => Err(format!("file {} does not exist", path.display())),
                },
                Err(e) => Err(format!(
                    "cannot read {}: {}",
                    path.display(),
                    crate::diag::lower_io(&e)
                )),
            },
        }
    }

    /// What this is, for messages: `environment variable X`, `file /p`.
    pub fn describe(&self) -> String {
        match self {
            ValueFrom::Literal(_) => "a literal value".to_string(),
            ValueFrom::Env { name, .. } => format!("environment variable {name}"),
            ValueFrom::File { path, .. } => format!("file {}", path.display()),
        }
    }
}
