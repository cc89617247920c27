//! User-facing diagnostics: one problem, where it is, and what to do about it.
//!
//! Every error that reaches a person (a bad catalog at start-up, a failed
//! reload, `regent check`) is a [`Diagnostic`]. This module only describes and
//! renders them; it does not decide what is wrong, which is the job of the
//! loaders in `source` and `catalog`.

use std::fmt;
use std::path::{Path, PathBuf};

/// How bad a diagnostic is. Errors stop a catalog from loading; warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The codes of the diagnostics that mean a command could not look at what it
/// was asked to (a path it cannot read, a file of no catalog kind, no tool
/// files at all), as opposed to problems in what it read. The one list: `check`
/// and `test` end [`Outcome::CannotRun`] on any of them, and so does a
/// catalog that fails to load for one of them.
pub const CANNOT_RUN_CODES: [&str; 3] = ["unreadable-path", "unknown-file-kind", "no-tool-files"];

/// What a command that reads a catalog came to, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It could not look at what it was asked to ([`CANNOT_RUN_CODES`]).
    CannotRun,
    /// It looked and found errors (or, for `test`, failures).
    FoundErrors,
    Clean,
}

impl Outcome {
    /// [`Outcome::CannotRun`] when any of `diags` is a could-not-run one,
    /// else [`Outcome::FoundErrors`] when `found_errors`, else clean.
    pub fn of<'a>(diags: impl IntoIterator<Item = &'a Diagnostic>, found_errors: bool) -> Outcome {
        if diags.into_iter().any(Diagnostic::is_cannot_run) {
            Outcome::CannotRun
        } else if found_errors {
            Outcome::FoundErrors
        } else {
            Outcome::Clean
        }
    }

    /// The process exit code: 0 clean, 1 errors found, 2 could not run. Here
    /// rather than in `commands` because `check`'s JSON report states it.
    pub const fn exit_code(self) -> i32 {
        match self {
            Outcome::Clean => 0,
            Outcome::FoundErrors => 1,
            Outcome::CannotRun => 2,
        }
    }
}

/// A position in a file, 1-based. A line or column of 0 means "unknown".
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    pub fn new(file: impl Into<PathBuf>, line: usize, column: usize) -> Location {
        Location {
            file: file.into(),
            line,
            column,
        }
    }

    /// A location that names only a file.
    pub fn file(file: impl Into<PathBuf>) -> Location {
        Location::new(file, 0, 0)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.column > 0 {
                write!(f, ":{}", self.column)?;
            }
        }
        Ok(())
    }
}

/// One problem found in a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable, kebab-case name for the kind of problem, for machines and docs.
    pub code: &'static str,
    pub location: Location,
    /// One line, lowercase, no trailing period.
    pub message: String,
    /// What to do about it, when we can say.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, location: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            location,
            message: message.into(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, location: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, location, message)
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Whether it means the command could not run ([`CANNOT_RUN_CODES`]).
    pub fn is_cannot_run(&self) -> bool {
        CANNOT_RUN_CODES.contains(&self.code)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic for a terminal, rustc style: the headline, the
    /// source line with a caret under the column when the file can be read,
    /// and the help line.
    pub fn render(&self) -> String {
        self.render_styled(Style::plain())
    }

    /// [`Diagnostic::render`] with colours when `style` has them.
    pub fn render_styled(&self, style: Style) -> String {
        let severity = match self.severity {
            Severity::Error => style.red(self.severity.as_str()),
            Severity::Warning => style.yellow(self.severity.as_str()),
        };
        let mut out = format!(
            "{}: {}: {}\n",
            style.bold(&self.location.to_string()),
            severity,
            style.bold(&self.message)
        );
        if let Some(snippet) = snippet(&self.location, style) {
            out.push_str(&snippet);
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  {} {help}\n", style.cyan("= help:")));
        }
        out
    }
}

/// Whether output for people gets ANSI colours, decided as clap decides its
/// own (anstream): on a terminal that supports them, never with `NO_COLOR`
/// set (https://no-color.org) or `CLICOLOR=0`, always with `CLICOLOR_FORCE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub colour: bool,
}

impl Style {
    pub fn plain() -> Style {
        Style { colour: false }
    }

    /// For what is written to stdout.
    pub fn for_stdout() -> Style {
        Style {
            colour: anstream::AutoStream::choice(&std::io::stdout())
                != anstream::ColorChoice::Never,
        }
    }

    /// For what is written to stderr (the log).
    pub fn for_stderr() -> Style {
        Style {
            colour: anstream::AutoStream::choice(&std::io::stderr())
                != anstream::ColorChoice::Never,
        }
    }

    fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    fn bold_colour(self, c: anstyle::AnsiColor, t: &str) -> String {
        self.paint(anstyle::Style::new().bold().fg_color(Some(c.into())), t)
    }

    pub fn red(self, t: &str) -> String {
        self.bold_colour(anstyle::AnsiColor::Red, t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.bold_colour(anstyle::AnsiColor::Yellow, t)
    }
    pub fn green(self, t: &str) -> String {
        self.bold_colour(anstyle::AnsiColor::Green, t)
    }
    pub fn cyan(self, t: &str) -> String {
        self.bold_colour(anstyle::AnsiColor::Cyan, t)
    }
    pub fn blue(self, t: &str) -> String {
        self.bold_colour(anstyle::AnsiColor::Blue, t)
    }
    pub fn bold(self, t: &str) -> String {
        self.paint(anstyle::Style::new().bold(), t)
    }
    pub fn dim(self, t: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), t)
    }
}

impl fmt::Display for Diagnostic {
    /// The one-line form: `file:line:col: error: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.location,
            self.severity.as_str(),
            self.message
        )
    }
}

fn snippet(loc: &Location, style: Style) -> Option<String> {
    if loc.line == 0 {
        return None;
    }
    let text = std::fs::read_to_string(&loc.file).ok()?;
    let line = text.lines().nth(loc.line - 1)?;
    let number = loc.line.to_string();
    let pad = " ".repeat(number.len());
    let bar = style.blue("|");
    let mut out = format!("{pad} {bar}\n{} {bar} {line}\n", style.blue(&number));
    if loc.column > 0 {
        // Columns count characters; tabs are kept so the caret lines up.
        let lead: String = line
            .chars()
            .take(loc.column - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!("{pad} {bar} {lead}{}\n", style.red("^")));
    }
    Some(out)
}

/// A set of diagnostics that stopped something from loading.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.is_error())
    }

    /// Sorts by file, line and column so output is stable across runs.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.location.file, a.location.line, a.location.column).cmp(&(
                &b.location.file,
                b.location.line,
                b.location.column,
            ))
        });
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.errors().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// io::Error's text, in our lowercase style ("No such file" -> "no such file").
pub fn lower_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => s,
    }
}

/// Shortens a path for messages: relative to the working directory when it is below it.
pub fn display_path(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}

/// The size of `v` as compact JSON, without making the text; counting stops
/// once it passes `stop_after` (the answer is then some size over it).
pub fn json_size(v: &serde_json::Value, stop_after: usize) -> usize {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0, stop_after);
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// A JSON value's kind as a message names it: "a string", "an object", "null".
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
