//! Running a command line (a compiled [`CliSpec`], see `run_plan::cli`):
//! argv rendering, the environment allow-list, and a child process that
//! cannot outlive its call.
//!
//! Rendering turns the compiled argv template and the call's arguments into
//! a vector of strings, each placeholder exactly one element (one per item
//! of an array argument). A value that starts with `-` where the program
//! would read it as an option is refused unless the tool lists the argument
//! under `flags` or a literal `--` came before it. The program is started
//! directly (no shell) in a new session, so that its process group can be
//! killed as a whole: on timeout (SIGTERM, then SIGKILL after a grace
//! period), on cancellation, when output passes the cap, and when the
//! program exits while processes it started are still running.

use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{Outcome, Refusal, Status, TAIL};
use crate::run_plan::cli::{ArgNode, CliSpec, Program, find_in_path};
use crate::run_plan::template::{self, RenderError};

/// The longest single argv element Linux accepts (MAX_ARG_STRLEN, 32 pages,
/// less the terminating NUL).
pub const MAX_ARG_LEN: usize = 32 * 4096 - 1;
/// How long a timed-out process group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);
/// How long regent keeps reading output after the program exited, for
/// output still in flight from processes outside its group.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// A command ready to start.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub program: PathBuf,
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// The whole environment of the program.
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
}

/// A rendered argv element and where its start came from.
struct Element {
    text: String,
    /// The argument whose value starts the element, if a placeholder does.
    leading: Option<String>,
    /// A literal `--`: what follows is not read as options.
    end_of_options: bool,
}

impl CliSpec {
    /// Renders the command for `args`, or says why it cannot run.
    pub fn prepare(&self, args: &Value) -> Result<Prepared, Refusal> {
        let program = self.resolve_program()?;
        let program_name = program
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| program.display().to_string());

        let mut elements = Vec::new();
        render_nodes(&self.args, args, &mut elements).map_err(|e| match e {
            RenderError::Absent(name) => Refusal(format!(
                "the command line needs argument `{name}`, which is absent"
            )),
            RenderError::Refused(msg) => Refusal(msg),
        })?;

        let mut argv = Vec::with_capacity(elements.len());
        let mut options_ended = false;
        for e in elements {
            if e.end_of_options {
                options_ended = true;
            }
            if let Some(arg) = &e.leading {
                check_text(arg, &e.text)?;
                if e.text.starts_with('-') && !options_ended && !self.flags.contains(arg) {
                    return Err(Refusal(format!(
                        "argument `{arg}` is {}, which starts with `-` and would be read by {program_name} as an option; \
                         regent refuses it (a tool that means it as an option lists `{arg}` under run.cli.flags)",
                        template::preview(&e.text)
                    )));
                }
            } else {
                check_text("a command-line element", &e.text)?;
            }
            argv.push(e.text);
        }

        let cwd = match &self.cwd {
            None => None,
            Some(t) => {
                let text = t.render(args).map_err(|e| match e {
                    RenderError::Absent(name) => Refusal(format!(
                        "the working directory needs argument `{name}`, which is absent"
                    )),
                    RenderError::Refused(msg) => Refusal(msg),
                })?;
                check_text("the working directory", &text)?;
                Some(self.base_dir.join(text))
            }
        };

        let mut env = Vec::new();
        for name in &self.env_inherit {
            if let Ok(v) = std::env::var(name) {
                env.push((name.clone(), v));
            }
        }
        for (name, from) in &self.env_set {
            match from.read() {
                Ok(Some(v)) => {
                    if v.contains('\0') {
                        return Err(Refusal(format!(
                            "environment variable {name} for the command would hold a NUL byte ({})",
                            from.describe()
                        )));
                    }
                    env.retain(|(k, _)| k != name);
                    env.push((name.clone(), v));
                }
                Ok(None) => {}
                Err(why) => {
                    return Err(Refusal(format!("cannot set {name} for the command: {why}")));
                }
            }
        }

        let stdin = self.stdin.as_ref().and_then(|name| {
            template::lookup(args, name).map(|v| match v {
                Value::String(s) => s.clone().into_bytes(),
                other => other.to_string().into_bytes(),
            })
        });

        Ok(Prepared {
            program,
            argv,
            cwd,
            env,
            stdin,
        })
    }

    fn resolve_program(&self) -> Result<PathBuf, Refusal> {
        match &self.program {
            Program::Path(p) => Ok(p.clone()),
            Program::Search(name) => find_in_path(name).ok_or_else(|| {
                Refusal(format!(
                    "program `{name}` was not found in regent's PATH; install it or give its absolute path in run.cli.program"
                ))
            }),
        }
    }
}

/// Refuses text that cannot be an argv element: a NUL byte, or more than the
/// kernel accepts in one element.
fn check_text(what: &str, text: &str) -> Result<(), Refusal> {
    let what = if what.contains(' ') {
        what.to_string()
    } else {
        format!("argument `{what}`")
    };
    if text.contains('\0') {
        return Err(Refusal(format!(
            "{what} contains a NUL byte, which no command-line element can hold"
        )));
    }
    if text.len() > MAX_ARG_LEN {
        return Err(Refusal(format!(
            "{what} is {} bytes; one command-line element holds at most {MAX_ARG_LEN} bytes on Linux \
             (a tool that takes large values passes them with run.cli.stdin)",
            text.len()
        )));
    }
    Ok(())
}

fn render_nodes(
    nodes: &[ArgNode],
    args: &Value,
    out: &mut Vec<Element>,
) -> Result<(), RenderError> {
    for node in nodes {
        match node {
            ArgNode::Element(t) => {
                let leading = t.leading_arg().map(str::to_string);
                let end_of_options = t.as_literal() == Some("--");
                for text in t.render_each(args)? {
                    out.push(Element {
                        text,
                        leading: leading.clone(),
                        end_of_options,
                    });
                }
            }
            ArgNode::Group(inner) => {
                let mut group = Vec::new();
                match render_nodes(inner, args, &mut group) {
                    Ok(()) => out.append(&mut group),
                    Err(RenderError::Absent(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            ArgNode::If {
                condition,
                then,
                otherwise,
            } => {
                let branch = if condition.holds(args) {
                    then
                } else {
                    otherwise
                };
                render_nodes(branch, args, out)?;
            }
        }
    }
    Ok(())
}

/// A process group that is killed if it is still alive when this is dropped
/// (a cancelled request drops the future that owns it).
struct Group {
    pgid: libc::pid_t,
    live: bool,
}

impl Group {
    fn signal(&self, sig: libc::c_int) {
        if self.pgid > 0 {
            // SAFETY: kill(2) with a negative pid signals a process group; it
            // touches no memory of ours.
            unsafe {
                libc::kill(-self.pgid, sig);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.live {
            self.signal(libc::SIGKILL);
        }
    }
}

/// Starts `p` and waits for it under `timeout`, keeping at most `max_output`
/// bytes of standard output. `cancel` completing stops the call.
pub async fn run(
    p: &Prepared,
    timeout: Duration,
    max_output: usize,
    cancel: impl Future<Output = ()>,
) -> Outcome {
    let started = Instant::now();
    let outcome = |status, output, error_tail| Outcome {
        status,
        output,
        error_tail,
        content_type: None,
        duration: started.elapsed(),
    };
    if let Some(dir) = &p.cwd
        && !dir.is_dir()
    {
        return outcome(
            Status::Failed(format!(
                "the working directory {} does not exist or is not a directory",
                dir.display()
            )),
            Vec::new(),
            String::new(),
        );
    }

    let mut cmd = tokio::process::Command::new(&p.program);
    cmd.args(&p.argv)
        .env_clear()
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .stdin(if p.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &p.cwd {
        cmd.current_dir(dir);
    }
    // SAFETY: setsid(2) is async-signal-safe, which is all pre_exec requires.
    // A new session makes the program leader of its own process group (so
    // the whole group can be killed) and detaches it from regent's terminal
    // (so nothing it starts can stop to ask for a password there).
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = if e.raw_os_error() == Some(libc::E2BIG) {
                "the command line and environment are too long for the operating system; \
                 a tool that takes large values passes them with run.cli.stdin"
                    .to_string()
            } else {
                crate::diag::lower_io(&e)
            };
            return outcome(
                Status::Failed(format!("cannot start {}: {why}", p.program.display())),
                Vec::new(),
                String::new(),
            );
        }
    };
    let mut group = Group {
        pgid: child.id().map_or(0, |id| id as libc::pid_t),
        live: true,
    };

    if let (Some(bytes), Some(mut stdin)) = (p.stdin.clone(), child.stdin.take()) {
        // A program that does not read its input closes the pipe; that is
        // its business, not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out: Vec<u8> = Vec::new();
    let mut err: Vec<u8> = Vec::new();
    let mut out_buf = vec![0u8; 64 * 1024];
    let mut err_buf = vec![0u8; 8 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    tokio::pin!(cancel);
    let mut exited: Option<std::process::ExitStatus> = None;
    let mut stopped: Option<Status> = None;

    loop {
        if stdout.is_none() && stderr.is_none() && exited.is_some() {
            break;
        }
        tokio::select! {
            r = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match r {
                Some(n) => {
                    let room = max_output - out.len();
                    if n > room {
                        out.extend_from_slice(&out_buf[..room]);
                        stopped = Some(Status::OutputCapped(max_output));
                        group.signal(libc::SIGKILL);
                        break;
                    }
                    out.extend_from_slice(&out_buf[..n]);
                }
                None => stdout = None,
            },
            r = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match r {
                Some(n) => {
                    err.extend_from_slice(&err_buf[..n]);
                    if err.len() > 4 * TAIL {
                        err.drain(..err.len() - TAIL);
                    }
                }
                None => stderr = None,
            },
            status = child.wait(), if exited.is_none() => {
                match status {
                    Ok(s) => exited = Some(s),
                    Err(e) => {
                        stopped = Some(Status::Failed(format!("cannot wait for the command: {e}")));
                        group.signal(libc::SIGKILL);
                        break;
                    }
                }
                // The program is done; anything it left running in its group
                // goes with it. (The group id cannot be reused while any
                // member lives, and this runs right after the leader is reaped.)
                group.signal(libc::SIGKILL);
                group.live = false;
                let drain_until = tokio::time::Instant::now() + DRAIN_GRACE;
                if drain_until < deadline.deadline() {
                    deadline.as_mut().reset(drain_until);
                }
            },
            _ = &mut deadline => {
                if exited.is_none() {
                    stopped = Some(Status::TimedOut(timeout));
                    group.signal(libc::SIGTERM);
                    if tokio::time::timeout(KILL_GRACE, child.wait()).await.is_ok() {
                        // The leader is gone; its group may not be.
                    }
                    group.signal(libc::SIGKILL);
                }
                break;
            },
            _ = &mut cancel => {
                stopped = Some(Status::Cancelled);
                group.signal(libc::SIGKILL);
                break;
            },
        }
    }

    if exited.is_none() {
        group.signal(libc::SIGKILL);
        // Should the group signal fail, the program itself still goes.
        let _ = child.start_kill();
        let _ = child.wait().await;
        group.live = false;
    }
    let status = match (stopped, exited) {
        (Some(s), _) => s,
        (None, Some(s)) => exit_status(s),
        (None, None) => Status::Failed("the command ended in an unknown state".into()),
    };
    outcome(status, out, super::tail_text(&err, TAIL))
}

async fn read_some<R: AsyncRead + Unpin>(r: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match r.as_mut()?.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn exit_status(s: std::process::ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(code), _) => Status::Exited(code),
        (None, Some(sig)) => Status::Signaled(sig),
        (None, None) => Status::Failed("the command ended without a status".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_plan::cli::{Condition, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT};
    use crate::run_plan::template::Template;
    use serde_json::json;

    fn spec(args: Vec<ArgNode>, flags: &[&str]) -> CliSpec {
        CliSpec {
            program: Program::Path("/bin/echo".into()),
            args,
            flags: flags.iter().map(|s| s.to_string()).collect(),
            cwd: None,
            base_dir: "/".into(),
            env_inherit: Vec::new(),
            env_set: Vec::new(),
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }

    fn el(s: &str) -> ArgNode {
        ArgNode::Element(Template::parse(s).unwrap())
    }

    #[test]
    fn groups_drop_when_an_argument_is_absent() {
        let s = spec(
            vec![
                el("log"),
                ArgNode::Group(vec![el("--author"), el("{author}")]),
                ArgNode::If {
                    condition: Condition::Arg("stat".into()),
                    then: vec![el("--stat")],
                    otherwise: vec![],
                },
                el("{paths}"),
            ],
            &[],
        );
        let argv = |a: Value| s.prepare(&a).map(|p| p.argv);
        assert_eq!(
            argv(json!({"paths": ["a", "b c"]})).unwrap(),
            ["log", "a", "b c"]
        );
        assert_eq!(
            argv(json!({"author": "x y", "stat": true, "paths": []})).unwrap(),
            ["log", "--author", "x y", "--stat"]
        );
        assert_eq!(
            argv(json!({"stat": false, "paths": ["p"]})).unwrap(),
            ["log", "p"]
        );
    }

    #[test]
    fn leading_dashes_are_refused_unless_flagged_or_after_double_dash() {
        let s = spec(vec![el("{a}"), el("--"), el("{b}")], &[]);
        let err = s
            .prepare(&json!({"a": "--upload-pack=x", "b": "c"}))
            .unwrap_err();
        assert!(err.0.contains("argument `a`"), "{err}");
        assert!(err.0.contains("starts with `-`"), "{err}");
        assert_eq!(
            s.prepare(&json!({"a": "ok", "b": "-rf"})).unwrap().argv,
            ["ok", "--", "-rf"]
        );
        let flagged = spec(vec![el("{a}")], &["a"]);
        assert_eq!(
            flagged.prepare(&json!({"a": "--hard"})).unwrap().argv,
            ["--hard"]
        );
        // A value after a literal prefix is not read as an option.
        let prefixed = spec(vec![el("--message={m}")], &[]);
        assert_eq!(
            prefixed.prepare(&json!({"m": "-x"})).unwrap().argv,
            ["--message=-x"]
        );
        // Negative numbers look like options too.
        assert!(
            spec(vec![el("{n}")], &[])
                .prepare(&json!({"n": -5}))
                .is_err()
        );
    }

    #[test]
    fn nul_and_oversized_values_are_refused() {
        let s = spec(vec![el("{a}")], &[]);
        let e = s.prepare(&json!({"a": "x\u{0}y"})).unwrap_err();
        assert!(e.0.contains("NUL"), "{e}");
        let big = "x".repeat(MAX_ARG_LEN + 1);
        let e = s.prepare(&json!({"a": big})).unwrap_err();
        assert!(e.0.contains("stdin"), "{e}");
    }
}
