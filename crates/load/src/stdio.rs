//! One MCP client over a server's stdin/stdout, on raw JSON lines: spawn,
//! handshake, and the two measuring loops (request/response and pipelined).
//! One server process per client, as MCP clients run stdio servers.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{TryRecvError, sync_channel};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stats::Samples;
use crate::workload::{Era, Workload, initialize, is_error, response_id};

/// Every this-many responses one is parsed in full and checked.
const CHECK_EVERY: usize = 997;

/// How a server process is started.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: Option<PathBuf>,
    /// A regent binary: started as the test kit starts it (no `RUST_LOG`,
    /// no colour), so the caller's environment changes nothing measured.
    pub regent: bool,
}

impl Spawn {
    /// `bin` (a regent build) with `args`.
    pub fn regent(bin: &Path, args: Vec<String>) -> Spawn {
        Spawn {
            program: bin.to_path_buf(),
            args,
            dir: None,
            regent: true,
        }
    }

    pub fn command(&self) -> Command {
        let mut c = if self.regent {
            regent_testkit::regent_at(&self.program)
        } else {
            Command::new(&self.program)
        };
        c.args(&self.args);
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c
    }
}

/// What one client measured in one run.
#[derive(Debug, Default)]
pub struct RunOut {
    pub samples: Samples,
    pub start: Option<Instant>,
    pub end: Option<Instant>,
    pub errors: usize,
    pub first_error: Option<String>,
}

impl RunOut {
    /// Counts one failed request, keeping the first reason.
    pub fn note(&mut self, what: String) {
        self.error(what);
    }

    /// Times `n` requests made one at a time, `one(i, out)` making the
    /// `i`th: from the release of `barrier` until `one` has made all `n` or
    /// returned `false` (a failure it noted that ends the run).
    pub fn serial(
        n: usize,
        barrier: &Barrier,
        mut one: impl FnMut(usize, &mut RunOut) -> bool,
    ) -> RunOut {
        let mut out = RunOut::default();
        barrier.wait();
        out.start = Some(Instant::now());
        for i in 0..n {
            if !one(i, &mut out) {
                break;
            }
        }
        out.end = Some(Instant::now());
        out
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what);
        }
    }
}

pub struct Conn {
    child: Child,
    /// `None` once closed.
    w: Option<BufWriter<ChildStdin>>,
    r: BufReader<ChildStdout>,
    pub pid: u32,
    pub era: Era,
    next_id: u64,
    stderr: PathBuf,
    pub spawned: Instant,
}

impl Conn {
    /// Starts the server; its stderr goes to `stderr_log`.
    pub fn spawn(how: &Spawn, era: Era, stderr_log: &Path) -> Result<Conn, String> {
        let log = File::create(stderr_log).map_err(|e| format!("{}: {e}", stderr_log.display()))?;
        let spawned = Instant::now();
        let mut child = how
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", how.program.display()))?;
        let w = Some(BufWriter::with_capacity(
            64 * 1024,
            child.stdin.take().expect("piped stdin"),
        ));
        let r = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped stdout"));
        Ok(Conn {
            pid: child.id(),
            child,
            w,
            r,
            era,
            next_id: 1,
            stderr: stderr_log.to_path_buf(),
            spawned,
        })
    }

    /// The end of the server's stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }

    /// Sends one request line and returns its response, skipping
    /// notifications. `None` at end of output (the server exited).
    pub fn request(&mut self, line: &[u8]) -> Result<Value, String> {
        let w = self.w.as_mut().ok_or("the connection is closed")?;
        let sent = w.write_all(line).and_then(|_| w.flush());
        sent.map_err(|e| self.died(e))?;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = self
                .r
                .read_until(b'\n', &mut buf)
                .map_err(|e| self.died(e))?;
            if n == 0 {
                return Err(self.died("end of output"));
            }
            let v: Value = serde_json::from_slice(&buf).map_err(|e| {
                format!(
                    "unparsable response ({e}): {}",
                    String::from_utf8_lossy(&buf)
                )
            })?;
            if v.get("id").is_some() {
                return Ok(v);
            }
        }
    }

    fn died(&self, e: impl std::fmt::Display) -> String {
        format!(
            "server {} failed: {e}; its stderr ends with:\n{}",
            self.pid,
            self.stderr_tail()
        )
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// Opens the session: `initialize` + `notifications/initialized` in the
    /// legacy era; nothing in the 2026-07-28 era (each request carries its
    /// `_meta`). Returns the first response's round trip.
    pub fn handshake(&mut self) -> Result<(), String> {
        match self.era {
            Era::Legacy => {
                let id = self.take_id();
                let init = initialize(id);
                let resp = self.request(format!("{init}\n").as_bytes())?;
                if resp.get("result").is_none() {
                    return Err(format!("initialize failed: {resp}"));
                }
                let w = self.w.as_mut().ok_or("the connection is closed")?;
                let sent = w
                    .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                    .and_then(|_| w.flush());
                sent.map_err(|e| self.died(e))
            }
            Era::Modern => Ok(()),
        }
    }

    /// One request of `workload`, checked in full.
    pub fn once(&mut self, workload: Workload) -> Result<Value, String> {
        let id = self.take_id();
        let mut line = Vec::new();
        workload.write_line(self.era, id, &mut line);
        let v = self.request(&line)?;
        workload.check(id, &v)?;
        Ok(v)
    }

    /// `n` requests, one at a time: send, wait for the answer, repeat.
    pub fn run_serial(&mut self, workload: Workload, n: usize, barrier: &Barrier) -> RunOut {
        let mut line = Vec::with_capacity(1024);
        let mut resp = Vec::with_capacity(4096);
        RunOut::serial(n, barrier, |i, out| {
            let id = self.take_id();
            line.clear();
            workload.write_line(self.era, id, &mut line);
            let t = Instant::now();
            let w = self.w.as_mut().expect("open connection");
            if let Err(e) = w.write_all(&line).and_then(|_| w.flush()) {
                out.error(self.died(e));
                return false;
            }
            let got = loop {
                resp.clear();
                match self.r.read_until(b'\n', &mut resp) {
                    Ok(0) => break Err(self.died("end of output")),
                    Ok(_) => {
                        if let Some(got) = response_id(&resp) {
                            break Ok(got);
                        }
                    }
                    Err(e) => break Err(self.died(e)),
                }
            };
            let elapsed = t.elapsed().as_nanos() as u64;
            match got {
                Err(e) => {
                    out.error(e);
                    return false;
                }
                Ok(got) if got != id => {
                    out.error(format!("expected the answer to {id}, got one to {got}"));
                    return false;
                }
                Ok(_) => {}
            }
            out.samples.record(elapsed);
            check_line(workload, id, &resp, i, out);
            true
        })
    }

    /// `n` requests with up to `window` in flight: a writer thread sends
    /// them in batches whenever half the window is free, this thread reads
    /// answers and reopens the window. Latency is from the write of a
    /// request to the read of its answer, so it includes queueing in the
    /// window.
    pub fn run_pipelined(
        &mut self,
        workload: Workload,
        n: usize,
        window: usize,
        barrier: &Barrier,
    ) -> RunOut {
        let base = self.next_id;
        self.next_id += n as u64;
        let era = self.era;
        let sent: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        let clock = Instant::now();
        let (tokens, room) = sync_channel::<()>(window);
        for _ in 0..window {
            let _ = tokens.send(());
        }
        let pid = self.pid;
        let stderr = self.stderr.clone();
        let (w, r) = (self.w.as_mut().expect("open connection"), &mut self.r);
        let mut out = RunOut::default();
        barrier.wait();
        out.start = Some(Instant::now());
        thread::scope(|s| {
            let sent = &sent;
            let writer = s.spawn(move || -> std::io::Result<()> {
                let mut line = Vec::with_capacity(1024);
                // Requests go out in batches: when the window is used up,
                // wait until half of it is free again, then write that many
                // with one flush. Refilling it one request per answer would
                // cost the client a write(2) per request, CPU that the
                // servers under test need on a 2-core machine.
                let batch = (window / 2).max(1);
                let mut credit = 0usize;
                for (i, slot) in sent.iter().enumerate() {
                    if credit == 0 {
                        w.flush()?;
                        let want = batch.min(n - i);
                        while credit < want {
                            if room.recv().is_err() {
                                return Ok(()); // the reader gave up
                            }
                            credit += 1;
                        }
                        loop {
                            match room.try_recv() {
                                Ok(()) => credit += 1,
                                Err(TryRecvError::Empty) => break,
                                Err(TryRecvError::Disconnected) => return Ok(()),
                            }
                        }
                    }
                    credit -= 1;
                    line.clear();
                    workload.write_line(era, base + i as u64, &mut line);
                    slot.store(clock.elapsed().as_nanos() as u64, Ordering::Release);
                    w.write_all(&line)?;
                }
                w.flush()
            });
            let died = |e: &dyn std::fmt::Display| {
                let text = std::fs::read_to_string(&stderr).unwrap_or_default();
                format!("server {pid} failed: {e}; its stderr: {}", text.trim_end())
            };
            let mut resp = Vec::with_capacity(4096);
            let mut got = 0;
            while got < n {
                resp.clear();
                match r.read_until(b'\n', &mut resp) {
                    Ok(0) => {
                        out.error(died(&"end of output"));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        out.error(died(&e));
                        break;
                    }
                }
                let now = clock.elapsed().as_nanos() as u64;
                let Some(id) = response_id(&resp) else {
                    continue; // a notification
                };
                let i = id.wrapping_sub(base) as usize;
                if i >= n {
                    out.error(format!("answer to an unknown request {id}"));
                    break;
                }
                out.samples
                    .record(now.saturating_sub(sent[i].load(Ordering::Acquire)));
                check_line(workload, id, &resp, got, &mut out);
                got += 1;
                let _ = tokens.send(());
            }
            out.end = Some(Instant::now());
            drop(tokens);
            match writer.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => out.error(format!("writing to server {pid}: {e}")),
                Err(_) => out.error("the writer thread panicked".into()),
            }
        });
        out
    }

    /// Closes stdin and waits for the server to exit (killing it after a
    /// grace period).
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Closing stdin is how a stdio server is told to stop.
        if let Some(mut w) = self.w.take() {
            let _ = w.flush();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
            }
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.shutdown();
        }
    }
}

/// Counts an error response; parses and checks every [`CHECK_EVERY`]th one.
fn check_line(workload: Workload, id: u64, line: &[u8], i: usize, out: &mut RunOut) {
    if is_error(line) {
        out.error(String::from_utf8_lossy(line).trim().to_string());
    } else if i.is_multiple_of(CHECK_EVERY) {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => {
                if let Err(e) = workload.check(id, &v) {
                    out.error(e);
                }
            }
            Err(e) => out.error(format!("unparsable response: {e}")),
        }
    }
}
