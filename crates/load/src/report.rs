//! Turns a run into Markdown: the results section of BENCHMARKS.md (between
//! its markers) and benches/summary.md for the README. Every number in them
//! comes from the run; nothing is typed in.

use std::fmt::Write as _;
use std::time::Duration;

use crate::stats::{Latency, fmt_nanos, fmt_rate};
use crate::workload::{Era, Workload};
use crate::{Cell, Mode, Run};

pub const BEGIN: &str =
    "<!-- BEGIN RESULTS: written by `cargo bench --bench load`; do not edit by hand -->";
pub const END: &str = "<!-- END RESULTS -->";

const REGENT: &str = "regent";
const PEER: &str = "TypeScript SDK (SEP reference)";

fn find<'a>(
    run: &'a Run,
    server: &str,
    era: Era,
    w: Workload,
    mode: Mode,
    clients: usize,
) -> Option<&'a Cell> {
    run.cells.iter().find(|c| {
        c.server == server
            && c.era == era
            && c.workload == w
            && c.mode == mode
            && c.clients == clients
    })
}

fn rate_of(
    run: &Run,
    server: &str,
    era: Era,
    w: Workload,
    mode: Mode,
    clients: usize,
) -> Option<f64> {
    find(run, server, era, w, mode, clients).and_then(Cell::rate)
}

fn mode_label(mode: Mode, window: usize) -> String {
    match mode {
        Mode::Pipelined => format!("pipelined (up to {window} requests in flight per connection)"),
        Mode::Serial => "request/response (one request at a time per connection)".into(),
    }
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

/// The median over rounds of a's throughput over b's in the same round. The
/// two cells ran next to each other in every round, so this ratio is steadier
/// than the ratio of the medians when the machine's load drifts.
fn round_ratio(a: Option<&Cell>, b: Option<&Cell>) -> Option<f64> {
    let (a, b) = (a?, b?);
    if a.errors > 0 || b.errors > 0 {
        return None;
    }
    let per_round = a
        .rates
        .iter()
        .zip(&b.rates)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    crate::stats::median(per_round)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt_opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "–".into())
}

/// A cell's median rate, or why it failed (escaped for a table cell).
fn rate_text(c: &Cell) -> String {
    match c.rate() {
        Some(r) => fmt_rate(r),
        None => format!(
            "failed: {}",
            c.first_error.as_deref().unwrap_or("?").replace('|', "\\|")
        ),
    }
}

/// A cell's latency at p50, p90, p99, p99.9 and its maximum.
fn percentiles(c: &Cell) -> [String; 5] {
    let lat = c.samples.summary();
    let fields: [fn(&Latency) -> u64; 5] = [|x| x.p50, |x| x.p90, |x| x.p99, |x| x.p999, |x| x.max];
    fields.map(|f| fmt_opt(lat.as_ref(), |x| fmt_nanos(f(x))))
}

/// The results section.
pub fn render(run: &Run) -> String {
    let o = &run.opts;
    let m = &run.machine;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Measured {} on {} ({} cores, {:.1} GiB memory), Linux {}, {}, node {}; TypeScript peer on `@modelcontextprotocol/sdk` {}. \
         Load average (1, 5, 15 min) {} at the start and {} at the end; the run took {:.0} s.",
        run.started,
        m.cpu,
        m.cores,
        m.memory_gib,
        m.kernel,
        m.rustc,
        m.node,
        run.peer.as_deref().unwrap_or("(not measured)"),
        run.load_before,
        run.load_after,
        run.took.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "\n{} round{} of every cell, interleaved; per client and round: {} pipelined requests (window {}), {} request/response requests \
         (`tools/call`: a twentieth of those). Throughput is the median over rounds of all clients' requests divided by wall time; \
         latency percentiles are over every request of every round.",
        o.rounds,
        if o.rounds == 1 { "" } else { "s" },
        o.requests,
        o.window,
        o.serial_requests
    );
    for n in &run.notes {
        let _ = writeln!(s, "\n> {n}");
    }

    targets(&mut s, run);
    policies(&mut s, run);

    let _ = writeln!(s, "\n### Throughput and latency over stdio\n");
    let _ = writeln!(
        s,
        "One server process per client. \"vs floor\" is the request's throughput over `tools/list` of the same server, era, mode and clients."
    );
    for mode in [Mode::Pipelined, Mode::Serial] {
        for &clients in &o.clients {
            let _ = writeln!(
                s,
                "\n#### {}, {} client{}\n",
                capitalise(&mode_label(mode, o.window)),
                clients,
                if clients == 1 { "" } else { "s" }
            );
            let _ = writeln!(
                s,
                "| server | era | request | req/s | vs floor | p50 | p90 | p99 | p99.9 | max |"
            );
            let _ = writeln!(
                s,
                "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            );
            for c in run
                .cells
                .iter()
                .filter(|c| c.mode == mode && c.clients == clients)
            {
                let floor = rate_of(run, c.server, c.era, Workload::List, mode, clients);
                let [p50, p90, p99, p999, max] = percentiles(c);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {p50} | {p90} | {p99} | {p999} | {max} |",
                    c.server,
                    c.era.label(),
                    c.workload.label(),
                    rate_text(c),
                    fmt_opt(ratio(c.rate(), floor), |r| format!("{:.0}%", r * 100.0)),
                );
            }
        }
    }

    let _ = writeln!(s, "\n### Over HTTP\n");
    if run.http.is_empty() {
        let _ = writeln!(s, "Nothing measured over HTTP in this run.");
    } else {
        let _ = writeln!(
            s,
            "One connection per client, one request at a time on each (HTTP/1.1 keep-alive, `Accept: application/json, text/event-stream`).\n"
        );
        let _ = writeln!(
            s,
            "| server | era | request | clients | req/s | p50 | p90 | p99 | p99.9 |"
        );
        let _ = writeln!(
            s,
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for c in &run.http {
            let [p50, p90, p99, p999, _] = percentiles(c);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {p50} | {p90} | {p99} | {p999} |",
                c.server,
                c.era.label(),
                c.workload.label(),
                c.clients,
                rate_text(c),
            );
        }
    }

    scale(&mut s, run);

    let mut skipped = Vec::new();
    if let Err(e) = &run.features.exec {
        skipped.push(format!("`tools/call`: not available in this build ({e})"));
    }
    for n in run
        .http_notes
        .iter()
        .filter(|n| n.contains("not available"))
    {
        skipped.push(n.clone());
    }
    if !run.features.reload && !run.scale.is_empty() {
        skipped.push("reload time: not available in this build (`regent serve --help` has no `--status-file`)".into());
    }
    if let Err(e) = &run.peer {
        skipped.push(format!("TypeScript peer: {e}"));
    }
    if !skipped.is_empty() {
        let _ = writeln!(s, "\n### Not measured in this run\n");
        for k in skipped {
            let _ = writeln!(s, "- {k}");
        }
    }
    s
}

fn capitalise(t: &str) -> String {
    let mut c = t.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn targets(s: &mut String, run: &Run) {
    let l = Era::Legacy;
    let c1 = |server, w| find(run, server, l, w, Mode::Pipelined, 1);
    let vs_peer = round_ratio(c1(REGENT, Workload::Resolve), c1(PEER, Workload::Resolve));
    let vs_floor = round_ratio(c1(REGENT, Workload::Resolve), c1(REGENT, Workload::List));
    let p99_2 = find(run, REGENT, l, Workload::Resolve, Mode::Serial, 2)
        .filter(|c| c.errors == 0)
        .and_then(|c| c.samples.summary())
        .map(|x| x.p99);
    let at = |n: usize| run.scale.iter().find(|p| p.tools == n && p.error.is_none());
    let one = at(1).and_then(|p| p.resolve).map(|x| x.p50);
    let k = at(1000);
    let k_start = k.and_then(|p| p.startup());
    let k_rss = k.and_then(|p| p.rss_kib).map(|(rss, _)| rss);
    let k_p50 = k.and_then(|p| p.resolve).map(|x| x.p50);
    let ten = run.scale.iter().find(|p| p.tools == 10_000);

    let _ = writeln!(s, "\n### Targets (issue 6)\n");
    let _ = writeln!(s, "| target | goal | measured | |");
    let _ = writeln!(s, "| --- | --- | --- | --- |");
    let _ = writeln!(
        s,
        "| `tools/resolve` throughput over stdio vs the TypeScript SDK peer (pipelined, 1 client; median of per-round ratios) | ≥ 1.5× | {} | {} |",
        fmt_opt(vs_peer, |r| format!("{r:.2}×")),
        verdict(vs_peer.map(|r| r >= 1.5))
    );
    let _ = writeln!(
        s,
        "| `tools/resolve` throughput vs the floor (`tools/list`, one tool; pipelined, 1 client; median of per-round ratios) | ≥ 70% | {} | {} |",
        fmt_opt(vs_floor, |r| format!("{:.0}%", r * 100.0)),
        verdict(vs_floor.map(|r| r >= 0.7))
    );
    let _ = writeln!(
        s,
        "| `tools/resolve` p99 with 2 concurrent clients (request/response) | < 1 ms | {} | {} |",
        fmt_opt(p99_2, fmt_nanos),
        verdict(p99_2.map(|p| p < 1_000_000))
    );
    let _ = writeln!(
        s,
        "| start-up with 1,000 tools (spawn to first answer) | < 1 s | {} | {} |",
        fmt_opt(k_start, |d| fmt_nanos(d.as_nanos() as u64)),
        verdict(k_start.map(|d| d.as_secs_f64() < 1.0))
    );
    let _ = writeln!(
        s,
        "| resident memory with 1,000 tools | < 150 MB | {} | {} |",
        fmt_opt(k_rss, |r| format!("{:.0} MB", r as f64 * 1024.0 / 1e6)),
        verdict(k_rss.map(|r| (r as f64 * 1024.0) < 150e6))
    );
    let _ = writeln!(
        s,
        "| `tools/resolve` p50 with 1,000 tools vs 1 tool | ≤ 2× | {} | {} |",
        fmt_opt(
            ratio(k_p50.map(|x| x as f64), one.map(|x| x as f64)),
            |r| format!(
                "{:.2}× ({} vs {})",
                r,
                fmt_nanos(k_p50.unwrap_or(0)),
                fmt_nanos(one.unwrap_or(0))
            )
        ),
        verdict(ratio(k_p50.map(|x| x as f64), one.map(|x| x as f64)).map(|r| r <= 2.0))
    );
    // Over HTTP against the bare-axum floor (issue 32): regent's stateless
    // 2026-07-28 resolve beside the floor's fixed answer, same connections.
    let h = |server: &str, clients: usize| {
        run.http.iter().find(|c| {
            c.server == server
                && c.era == Era::Modern
                && c.workload == Workload::Resolve
                && c.clients == clients
        })
    };
    let floor = crate::http::FLOOR;
    let p50 = |c: Option<&Cell>| c.and_then(|c| c.samples.summary()).map(|x| x.p50 as f64);
    let p50_ratio = ratio(p50(h(REGENT, 1)), p50(h(floor, 1)));
    let _ = writeln!(
        s,
        "| `tools/resolve` over HTTP, p50 vs the bare-axum floor (1 connection, one request at a time) | ≤ 2× | {} | {} |",
        fmt_opt(p50_ratio, |r| format!(
            "{r:.2}× ({} vs {})",
            fmt_opt(p50(h(REGENT, 1)), |x| fmt_nanos(x as u64)),
            fmt_opt(p50(h(floor, 1)), |x| fmt_nanos(x as u64))
        )),
        verdict(p50_ratio.map(|r| r <= 2.0))
    );
    let wide = run.opts.http_clients.iter().copied().max().unwrap_or(1);
    let rate_ratio = round_ratio(h(REGENT, wide), h(floor, wide));
    let _ = writeln!(
        s,
        "| `tools/resolve` over HTTP, throughput vs the bare-axum floor ({wide} connections; median of per-round ratios) | ≥ 0.5× | {} | {} |",
        fmt_opt(rate_ratio, |r| format!("{r:.2}×")),
        verdict(rate_ratio.map(|r| r >= 0.5))
    );
    // `regent check` linear in the tools (issue 32 item 1).
    let check_at = |n: usize| {
        run.scale
            .iter()
            .find(|p| p.tools == n)
            .and_then(|p| p.check.as_ref().ok())
            .map(Duration::as_secs_f64)
    };
    let (check_k, check_ten) = (check_at(1000), check_at(10_000));
    let check_ratio = ratio(check_ten, check_k);
    let _ = writeln!(
        s,
        "| `regent check`, 10,000 tools ÷ 1,000 tools (and under 20 s) | ≤ 12× | {} | {} |",
        fmt_opt(check_ratio, |r| format!(
            "{r:.2}× ({} vs {})",
            fmt_opt(check_ten, |x| fmt_nanos((x * 1e9) as u64)),
            fmt_opt(check_k, |x| fmt_nanos((x * 1e9) as u64))
        )),
        verdict(
            check_ratio
                .zip(check_ten)
                .map(|(r, t)| r <= 12.0 && t < 20.0)
        )
    );
    // Issue 32's goal for 10,000 tools: the first answer within a second,
    // and resident memory after the warm-up and at its peak (VmHWM) both
    // under 300 MB; each figure gets its own verdict, the row all three.
    let mb_of = |kib: u64| kib as f64 * 1024.0 / 1e6;
    let ten_ok = ten.filter(|p| p.error.is_none());
    let ten_start = ten_ok.and_then(|p| p.startup());
    let ten_rss = ten_ok
        .and_then(|p| p.rss_kib)
        .map(|(r, h)| (mb_of(r), mb_of(h)));
    let ten_checks = [
        ten_start.map(|d| d.as_secs_f64() < 1.0),
        ten_rss.map(|(r, _)| r < 300.0),
        ten_rss.map(|(_, h)| h < 300.0),
    ];
    let ten_text = match ten {
        Some(p) if p.error.is_none() => format!(
            "starts in {} ({}), {} resident ({}), peak {} ({}), resolve p50 {}",
            fmt_opt(ten_start, |d| fmt_nanos(d.as_nanos() as u64)),
            verdict(ten_checks[0]),
            fmt_opt(ten_rss, |(r, _)| format!("{r:.0} MB")),
            verdict(ten_checks[1]),
            fmt_opt(ten_rss, |(_, h)| format!("{h:.0} MB")),
            verdict(ten_checks[2]),
            fmt_opt(p.resolve.map(|x| x.p50), fmt_nanos)
        ),
        Some(p) => format!("failed: {}", p.error.as_deref().unwrap_or("?")),
        None => "not run".into(),
    };
    let ten_verdict = match ten {
        Some(p) if p.error.is_some() => Some(false),
        Some(_) => ten_checks
            .iter()
            .try_fold(true, |all, c| c.map(|ok| all && ok)),
        None => None,
    };
    let _ = writeln!(
        s,
        "| 10,000 tools | starts and serves: start-up < 1 s, RSS < 300 MB, peak RSS < 300 MB | {} | {} |",
        ten_text,
        verdict(ten_verdict)
    );

    // The peer ratio in every mode, so one favourable mode cannot hide.
    if vs_peer.is_some() {
        let _ = writeln!(
            s,
            "\n`tools/resolve` throughput, regent ÷ TypeScript peer, in every mode (ratio: the median over rounds of the ratio within each round):\n"
        );
        let _ = writeln!(
            s,
            "| mode | clients | regent req/s | peer req/s | ratio | regent, decision log to /dev/null, req/s | ratio |"
        );
        let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        for mode in [Mode::Pipelined, Mode::Serial] {
            for &c in &run.opts.clients {
                let cell = |server| find(run, server, l, Workload::Resolve, mode, c);
                let rate = |server| cell(server).and_then(Cell::rate);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    match mode {
                        Mode::Pipelined => "pipelined",
                        Mode::Serial => "request/response",
                    },
                    c,
                    fmt_opt(rate(REGENT), fmt_rate),
                    fmt_opt(rate(PEER), fmt_rate),
                    fmt_opt(round_ratio(cell(REGENT), cell(PEER)), |r| format!(
                        "{r:.2}×"
                    )),
                    fmt_opt(rate(crate::NO_LOG), fmt_rate),
                    fmt_opt(round_ratio(cell(crate::NO_LOG), cell(PEER)), |r| format!(
                        "{r:.2}×"
                    )),
                );
            }
        }
    }
}

/// What users run (issue 17) and the answers' shapes (issue 15), all with
/// the decision log to /dev/null, pipelined, 1 client: each ratio is the
/// median of per-round ratios of cells that ran side by side.
fn policies(s: &mut String, run: &Run) {
    let (l, m) = (Era::Legacy, Era::Modern);
    let c1 = |server, era, w| find(run, server, era, w, Mode::Pipelined, 1);
    let nl = crate::NO_LOG;
    let shipped = c1(nl, l, Workload::ResolveShipped);
    if shipped.is_none() && c1(nl, m, Workload::ResolveDraft).is_none() {
        return;
    }
    let r = |x: Option<f64>| fmt_opt(x, |r| format!("{r:.2}×"));
    let vs_peer = round_ratio(shipped, c1(PEER, l, Workload::Resolve));
    let overhead = round_ratio(c1(nl, l, Workload::Resolve), shipped);
    let _ = writeln!(
        s,
        "\n### Targets (issue 17) and answer shapes (issue 15)\n\nregent with the decision log to /dev/null, pipelined, 1 client; every ratio is the median of per-round ratios of cells that ran side by side. Arguments differ on every request.\n"
    );
    let _ = writeln!(s, "| comparison | goal | measured | |");
    let _ = writeln!(s, "| --- | --- | --- | --- |");
    let _ = writeln!(
        s,
        "| shipped `examples/manage_files` (YAML + Rego) vs the TypeScript SDK peer | ≥ 1.5× | {} | {} |",
        r(vs_peer),
        verdict(vs_peer.map(|x| x >= 1.5))
    );
    let _ = writeln!(
        s,
        "| cost of the shipped policy: YAML rules only ÷ YAML + Rego, same tool | ≤ 1.30× | {} | {} |",
        r(overhead),
        verdict(overhead.map(|x| x <= 1.3))
    );
    let draft = round_ratio(
        c1(nl, m, Workload::ResolveDraft),
        c1(nl, m, Workload::Resolve),
    );
    let github = round_ratio(
        c1(nl, l, Workload::ResolveGithub),
        c1(PEER, l, Workload::Resolve),
    );
    // Comparisons without a goal.
    for (what, x) in [
        (
            "extension draft's answer ÷ SEP-1862's answer (2026-07-28)",
            draft,
        ),
        (
            "shipped `examples/github_api` (Rego + data) vs the TypeScript SDK peer",
            github,
        ),
    ] {
        let _ = writeln!(s, "| {what} | – | {} | |", r(x));
    }
    if run.opts.baseline.is_some() {
        let b = crate::BASELINE;
        let _ = writeln!(
            s,
            "\nThis build ÷ the baseline (`{}`), same cells:\n",
            run.opts
                .baseline
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "| request | era | this build req/s | baseline req/s | ratio |"
        );
        let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: |");
        for (era, w) in [
            (l, Workload::Resolve),
            (m, Workload::Resolve),
            (m, Workload::ResolveDraft),
            (l, Workload::ResolveShipped),
            (l, Workload::ResolveGithub),
        ] {
            let (a, z) = (c1(nl, era, w), c1(b, era, w));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                w.label(),
                era.label(),
                fmt_opt(a.and_then(Cell::rate), fmt_rate),
                fmt_opt(z.and_then(Cell::rate), fmt_rate),
                r(round_ratio(a, z))
            );
        }
    }
}

fn scale(s: &mut String, run: &Run) {
    if run.scale.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n### Scale: catalogs of generated tools, each with its own Rego policy\n"
    );
    let _ = writeln!(
        s,
        "`manage_files` (YAML rules) plus N−1 generated tools, 100 per YAML file, each with its own policy file and package. \
         Start-up: spawn to the `initialize` answer (median of 3 starts; 1 at 10,000 tools). Memory: VmRSS (and the peak, VmHWM) \
         after 2,000 warm-up resolves of each kind. Latency: {} requests one at a time. Reload: SIGHUP after rewriting one policy, \
         until the status file counts the reload (wall), and the server's own rebuild time. \
         Check: `regent check DIR`, spawn to exit, median of 3, before the server starts.\n",
        run.opts.serial_requests
    );
    let _ = writeln!(
        s,
        "| tools | files | start-up | RSS | peak RSS | resolve p50 | p99 | resolve (Rego policy) p50 | p99 | reload (wall / rebuild) | check |"
    );
    let _ = writeln!(
        s,
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for p in &run.scale {
        if let Some(e) = &p.error {
            let _ = writeln!(
                s,
                "| {} | {} | failed: {} | | | | | | | | |",
                p.tools,
                p.files,
                e.replace('|', "\\|").replace('\n', " ")
            );
            continue;
        }
        let mb = |k: u64| format!("{:.0} MB", k as f64 * 1024.0 / 1e6);
        let reload = match &p.reload {
            Ok(r) => {
                let wall = crate::stats::median(r.wall.iter().map(|d| d.as_secs_f64()).collect());
                let server = crate::stats::median(r.server_ms.clone());
                format!(
                    "{} / {}",
                    fmt_opt(wall, |w| fmt_nanos((w * 1e9) as u64)),
                    fmt_opt(server, |ms| fmt_nanos((ms * 1e6) as u64))
                )
            }
            Err(e) if e.starts_with("not available") => "n/a".into(),
            Err(e) => format!("failed: {}", e.replace('|', "\\|")),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.tools,
            p.files,
            fmt_opt(p.startup(), |d| fmt_nanos(d.as_nanos() as u64)),
            fmt_opt(p.rss_kib, |(r, _)| mb(r)),
            fmt_opt(p.rss_kib, |(_, h)| mb(h)),
            fmt_opt(p.resolve.map(|x| x.p50), fmt_nanos),
            fmt_opt(p.resolve.map(|x| x.p99), fmt_nanos),
            fmt_opt(p.resolve_policy.map(|x| x.p50), fmt_nanos),
            fmt_opt(p.resolve_policy.map(|x| x.p99), fmt_nanos),
            reload,
            match &p.check {
                Ok(d) => fmt_nanos(d.as_nanos() as u64),
                Err(e) => format!("failed: {}", e.replace('|', "\\|")),
            }
        );
    }
}

/// The short block the README includes.
pub fn summary(run: &Run) -> String {
    let l = Era::Legacy;
    let p1 = |server, w| rate_of(run, server, l, w, Mode::Pipelined, 1);
    let resolve = p1(REGENT, Workload::Resolve);
    let peer = p1(PEER, Workload::Resolve);
    let floor = p1(REGENT, Workload::List);
    let serial =
        find(run, REGENT, l, Workload::Resolve, Mode::Serial, 1).and_then(|c| c.samples.summary());
    let serial2 =
        find(run, REGENT, l, Workload::Resolve, Mode::Serial, 2).and_then(|c| c.samples.summary());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!-- written by `cargo bench --bench load` ({}, {} cores, {}); do not edit by hand -->",
        run.started, run.machine.cores, run.machine.cpu
    );
    let _ = writeln!(
        s,
        "| measured (over stdio unless noted) | regent | TypeScript SDK peer |"
    );
    let _ = writeln!(s, "| --- | ---: | ---: |");
    let _ = writeln!(
        s,
        "| `tools/resolve`, pipelined, 1 client | {} req/s | {} req/s |",
        fmt_opt(resolve, fmt_rate),
        fmt_opt(peer, fmt_rate)
    );
    let nl = |w| rate_of(run, crate::NO_LOG, l, w, Mode::Pipelined, 1);
    for (w, what) in [
        (
            Workload::ResolveShipped,
            "shipped `examples/manage_files` (YAML + Rego)",
        ),
        (
            Workload::ResolveGithub,
            "shipped `examples/github_api` (Rego + data)",
        ),
    ] {
        if let Some(rate) = nl(w) {
            let _ = writeln!(
                s,
                "| `tools/resolve`, {what}, arguments varying, pipelined, 1 client, decision log to /dev/null | {} req/s | |",
                fmt_rate(rate)
            );
        }
    }
    let _ = writeln!(
        s,
        "| `tools/list` (the floor), pipelined, 1 client | {} req/s | {} req/s |",
        fmt_opt(floor, fmt_rate),
        fmt_opt(p1(PEER, Workload::List), fmt_rate)
    );
    let peer_serial =
        find(run, PEER, l, Workload::Resolve, Mode::Serial, 1).and_then(|c| c.samples.summary());
    let _ = writeln!(
        s,
        "| `tools/resolve` round trip p50 / p99, 1 client | {} / {} | {} / {} |",
        fmt_opt(serial.map(|x| x.p50), fmt_nanos),
        fmt_opt(serial.map(|x| x.p99), fmt_nanos),
        fmt_opt(peer_serial.map(|x| x.p50), fmt_nanos),
        fmt_opt(peer_serial.map(|x| x.p99), fmt_nanos)
    );
    let _ = writeln!(
        s,
        "| `tools/resolve` round trip p99, 2 clients | {} | |",
        fmt_opt(serial2.map(|x| x.p99), fmt_nanos)
    );
    // Over HTTP, one request at a time per connection; each row names the
    // era: regent's stateless 2026-07-28 requests beside the peer's
    // 2025-11-25 session, then regent's own 2025-11-25 sessions beside it.
    let http = |server: &str, era: Era, clients: usize| {
        run.http.iter().find(|c| {
            c.server == server
                && c.era == era
                && c.workload == Workload::Resolve
                && c.clients == clients
        })
    };
    let rows = run
        .opts
        .http_clients
        .iter()
        .flat_map(|&clients| [Era::Modern, Era::Legacy].map(|era| (clients, era)));
    for (clients, era) in rows {
        let (r, p) = (http(REGENT, era, clients), http(PEER, Era::Legacy, clients));
        if r.is_none() && (p.is_none() || era == Era::Legacy) {
            continue;
        }
        let cell = |c: Option<&Cell>| match c {
            Some(c) => format!(
                "{} req/s, p50 {} ({})",
                fmt_opt(c.rate(), fmt_rate),
                fmt_opt(c.samples.summary().map(|x| x.p50), fmt_nanos),
                c.era.label()
            ),
            None => "not measured".to_string(),
        };
        let _ = writeln!(
            s,
            "| `tools/resolve` over HTTP{}, {clients} client{}, one request at a time each | {} | {} |",
            if era == Era::Legacy {
                " in sessions"
            } else {
                ""
            },
            if clients == 1 { "" } else { "s" },
            cell(r),
            cell(p)
        );
    }
    for p in run
        .scale
        .iter()
        .filter(|p| p.tools >= 1000 && p.error.is_none())
    {
        let _ = writeln!(
            s,
            "| {} tools: start-up, memory, resolve p50 | {}, {}, {} | |",
            thousands(p.tools),
            fmt_opt(p.startup(), |d| fmt_nanos(d.as_nanos() as u64)),
            fmt_opt(p.rss_kib, |(r, _)| format!(
                "{:.0} MB",
                r as f64 * 1024.0 / 1e6
            )),
            fmt_opt(p.resolve.map(|x| x.p50), fmt_nanos)
        );
    }
    let _ = writeln!(
        s,
        "\nFull tables, method and machine: [BENCHMARKS.md](BENCHMARKS.md); reproduce with `cargo bench --bench load`."
    );
    s
}

fn thousands(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Replaces the marked section of BENCHMARKS.md and writes benches/summary.md.
pub fn write(run: &Run, section: &str) -> Result<String, String> {
    let root = regent_testkit::repo_root();
    let path = root.join("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "{} has no results markers ({BEGIN} … {END})",
            path.display()
        ));
    };
    let new = format!(
        "{}{BEGIN}\n\n{}\n{}",
        &text[..a],
        section.trim_end(),
        &text[b..]
    );
    std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    let summary_path = root.join("benches/summary.md");
    std::fs::write(&summary_path, summary(run))
        .map_err(|e| format!("{}: {e}", summary_path.display()))?;
    Ok(format!("{} and {}", path.display(), summary_path.display()))
}
