//! Printing a [`TestReport`]: for people (each failure with expected and
//! actual side by side, then coverage), and as JUnit XML for CI.

use super::{CaseResult, Coverage, TestReport};
use crate::diag::{Style, display_path};

/// The report for a terminal: failures, or with `verbose` every test with
/// its result.
pub fn human(r: &TestReport, style: Style, verbose: bool) -> String {
    let mut out = String::new();
    for d in r.diagnostics.iter().chain(&r.malformed) {
        out.push_str(&d.render_styled(style));
        out.push('\n');
    }
    for c in &r.cases {
        let loc = c.case.location.to_string();
        if c.outcome.passed {
            if !verbose {
                continue;
            }
            out.push_str(&format!(
                "{} {} {}\n",
                style.green("ok  "),
                c.case.title(),
                style.dim(&loc)
            ));
        } else {
            out.push_str(&format!(
                "{} {} {}\n",
                style.red("FAIL"),
                c.case.title(),
                style.dim(&loc)
            ));
            out.push_str(&diff_table(c, style));
        }
    }
    for t in &r.rego {
        let loc = t.location.to_string();
        match &t.failure {
            None if !verbose => {}
            None => out.push_str(&format!(
                "{} {} {}\n",
                style.green("ok  "),
                t.name,
                style.dim(&loc)
            )),
            Some(why) => {
                out.push_str(&format!(
                    "{} {} {}\n",
                    style.red("FAIL"),
                    t.name,
                    style.dim(&loc)
                ));
                out.push_str(&format!("       {why}\n"));
            }
        }
    }
    if let Some(cov) = &r.coverage {
        out.push_str(&coverage(cov, style));
    }
    if r.cases.is_empty() && r.rego.is_empty() && r.diagnostics.is_empty() && r.malformed.is_empty()
    {
        if r.filtered_out > 0 {
            out.push_str(&format!(
                "{}: no test name matches --run ({} left out)\n  {} names are a case's `name` (or its tool and arguments) and a Rego test's `data.package.test_name`; run with -v to list them\n",
                style.red("error"),
                r.filtered_out,
                style.cyan("= help:")
            ));
        } else {
            out.push_str(&format!(
                "{}: no tests found\n  {} add cases in *.test.yaml files or test_* rules in *_test.rego files next to the catalog\n",
                style.red("error"),
                style.cyan("= help:")
            ));
        }
    }
    let mut line = format!("{} passed, {} failed", r.passed(), r.failed());
    if !r.malformed.is_empty() {
        let n = r.malformed.len();
        line.push_str(&format!(
            " ({n} malformed case{})",
            if n == 1 { "" } else { "s" }
        ));
    }
    if r.filtered_out > 0 {
        line.push_str(&format!(", {} filtered out by --run", r.filtered_out));
    }
    out.push_str(&if r.exit_code() == 0 {
        style.green(&line)
    } else {
        style.red(&line)
    });
    out.push('\n');
    out
}

/// The compared values of a failed case in three columns.
fn diff_table(c: &CaseResult, style: Style) -> String {
    let rows = &c.outcome.rows;
    let caller = match &c.case.caller {
        Some(who) => format!(", caller {} ({})", who.subject, who.issuer),
        None => String::new(),
    };
    let mut out = format!(
        "       tool `{}`, arguments {}{caller}\n",
        c.case.case.tool,
        serde_json::Value::Object(c.case.case.arguments.clone())
    );
    let w_field = rows.iter().map(|r| r.field.len()).max().unwrap_or(0).max(5);
    let w_exp = rows
        .iter()
        .map(|r| r.expected.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    out.push_str(&format!(
        "       {}\n",
        style.bold(&format!(
            "  {:<w_field$}  {:<w_exp$}  {}",
            "field", "expected", "actual"
        ))
    ));
    for r in rows {
        let line = format!(
            "{} {:<w_field$}  {:<w_exp$}  {}",
            if r.ok { " " } else { "✗" },
            r.field,
            r.expected,
            r.actual
        );
        out.push_str(&format!(
            "       {}\n",
            if r.ok {
                style.dim(&line)
            } else {
                style.red(&line)
            }
        ));
    }
    if let Some(note) = &c.outcome.note {
        out.push_str(&format!("       {} {note}\n", style.cyan("note:")));
    }
    out
}

fn percent(covered: usize, total: usize) -> String {
    if total == 0 {
        "100.0%".to_string()
    } else {
        format!("{:.1}%", covered as f64 * 100.0 / total as f64)
    }
}

fn ranges(lines: &std::collections::BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = lines.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(", ")
}

/// Policy lines and YAML mapping rules the tests exercised.
pub fn coverage(c: &Coverage, style: Style) -> String {
    let mut out = format!("\n{}\n", style.bold("coverage"));
    let (mut hit, mut total) = (0, 0);
    for f in &c.files {
        let n = f.covered.len() + f.not_covered.len();
        hit += f.covered.len();
        total += n;
        let mut line = format!(
            "  {}: {}/{} lines ({})",
            display_path(std::path::Path::new(&f.path)).display(),
            f.covered.len(),
            n,
            percent(f.covered.len(), n)
        );
        if !f.not_covered.is_empty() {
            line.push_str(&format!(", not covered: {}", ranges(&f.not_covered)));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if !c.files.is_empty() {
        out.push_str(&format!(
            "  policy lines: {hit}/{total} ({})\n",
            percent(hit, total)
        ));
    }
    if !c.rules.is_empty() {
        let matched = c.rules.iter().filter(|r| r.matched > 0).count();
        out.push_str(&format!(
            "  yaml mapping rules: {matched}/{} matched ({})\n",
            c.rules.len(),
            percent(matched, c.rules.len())
        ));
        for r in c.rules.iter().filter(|r| r.matched == 0) {
            out.push_str(&format!(
                "    {} rule {} of `{}` at {} matched no case\n",
                style.yellow("not matched:"),
                r.index + 1,
                r.tool,
                r.location
            ));
        }
    }
    out
}

fn xml(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => String::new(),
            c => c.to_string(),
        })
        .collect()
}

/// JUnit XML: one suite per case file, one for Rego tests, one for errors
/// that stopped tests from running.
pub fn junit(r: &TestReport) -> String {
    let mut suites: Vec<(String, Vec<String>, usize)> = Vec::new();
    let mut by_file: std::collections::BTreeMap<String, (Vec<String>, usize)> = Default::default();
    for c in &r.cases {
        let file = display_path(&c.case.file).display().to_string();
        let mut tc = format!(
            "    <testcase name=\"{}\" classname=\"{}\">",
            xml(&c.case.title()),
            xml(&file)
        );
        let failed = !c.outcome.passed;
        if failed {
            let mut body = String::new();
            for row in &c.outcome.rows {
                body.push_str(&format!(
                    "{} {}: expected {}, actual {}\n",
                    if row.ok { " " } else { "x" },
                    row.field,
                    row.expected,
                    row.actual
                ));
            }
            if let Some(n) = &c.outcome.note {
                body.push_str(n);
                body.push('\n');
            }
            tc.push_str(&format!(
                "<failure message=\"{}\">{}</failure>",
                xml(&format!("case at {} failed", c.case.location)),
                xml(&body)
            ));
        }
        tc.push_str("</testcase>");
        let e = by_file.entry(file).or_default();
        e.0.push(tc);
        e.1 += failed as usize;
    }
    for (file, (cases, failures)) in by_file {
        suites.push((file, cases, failures));
    }
    if !r.rego.is_empty() {
        let mut cases = Vec::new();
        let mut failures = 0;
        for t in &r.rego {
            let file = display_path(&t.location.file).display().to_string();
            let mut tc = format!(
                "    <testcase name=\"{}\" classname=\"{}\">",
                xml(&t.name),
                xml(&file)
            );
            if let Some(why) = &t.failure {
                failures += 1;
                tc.push_str(&format!(
                    "<failure message=\"{}\">{}</failure>",
                    xml(why),
                    xml(&t.location.to_string())
                ));
            }
            tc.push_str("</testcase>");
            cases.push(tc);
        }
        suites.push(("rego".to_string(), cases, failures));
    }
    let errors: Vec<String> = r
        .diagnostics
        .iter()
        .chain(&r.malformed)
        .filter(|d| d.is_error())
        .map(|d| {
            format!(
                "    <testcase name=\"{}\" classname=\"catalog\"><error message=\"{}\">{}</error></testcase>",
                xml(&d.location.to_string()),
                xml(&d.message),
                xml(d.help.as_deref().unwrap_or(""))
            )
        })
        .collect();
    let n_errors = errors.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total: usize = suites.iter().map(|s| s.1.len()).sum::<usize>() + n_errors;
    out.push_str(&format!(
        "<testsuites name=\"regent test\" tests=\"{total}\" failures=\"{}\" errors=\"{n_errors}\">\n",
        r.failed() - r.malformed.len()
    ));
    for (name, cases, failures) in &suites {
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n",
            xml(name),
            cases.len()
        ));
        for c in cases {
            out.push_str(c);
            out.push('\n');
        }
        out.push_str("  </testsuite>\n");
    }
    if n_errors > 0 {
        out.push_str(&format!(
            "  <testsuite name=\"catalog\" tests=\"{n_errors}\" failures=\"0\" errors=\"{n_errors}\">\n"
        ));
        for e in errors {
            out.push_str(&e);
            out.push('\n');
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
