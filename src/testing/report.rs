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
            out.push_str(&log_lines(c, style));
        } else {
            out.push_str(&format!(
                "{} {} {}\n",
                style.red("FAIL"),
                c.case.title(),
                style.dim(&loc)
            ));
            out.push_str(&diff_table(c, style));
            out.push_str(&log_lines(c, style));
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
        c.case.case.sent.clone().unwrap_or_else(|| {
            serde_json::Value::Object(c.case.case.arguments.clone()).to_string()
        })
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

/// What resolving the case logged, under it.
fn log_lines(c: &CaseResult, style: Style) -> String {
    c.log
        .iter()
        .map(|l| format!("       {} {l}\n", style.cyan("log:")))
        .collect()
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

/// JUnit XML: one suite per case file, one for Rego tests, one for errors
/// that stopped tests from running. quick-junit writes it: escaping, control
/// characters (dropped, as XML 1.0 has no way to write them) and the
/// counts of each suite and of the report.
pub fn junit(r: &TestReport) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new("regent test");
    let mut by_file: std::collections::BTreeMap<String, Vec<TestCase>> = Default::default();
    for c in &r.cases {
        let file = display_path(&c.case.file).display().to_string();
        let status = if c.outcome.passed {
            TestCaseStatus::success()
        } else {
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
            for l in &c.log {
                body.push_str(&format!("log: {l}\n"));
            }
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("case at {} failed", c.case.location))
                .set_description(body);
            s
        };
        let mut tc = TestCase::new(c.case.title(), status);
        tc.set_classname(file.as_str());
        by_file.entry(file).or_default().push(tc);
    }
    for (file, cases) in by_file {
        let mut suite = TestSuite::new(file);
        suite.add_test_cases(cases);
        report.add_test_suite(suite);
    }
    if !r.rego.is_empty() {
        let mut suite = TestSuite::new("rego");
        for t in &r.rego {
            let status = match &t.failure {
                None => TestCaseStatus::success(),
                Some(why) => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(why.as_str())
                        .set_description(t.location.to_string());
                    s
                }
            };
            let mut tc = TestCase::new(t.name.as_str(), status);
            tc.set_classname(display_path(&t.location.file).display().to_string());
            suite.add_test_case(tc);
        }
        report.add_test_suite(suite);
    }
    let errors: Vec<TestCase> = r
        .diagnostics
        .iter()
        .chain(&r.malformed)
        .filter(|d| d.is_error())
        .map(|d| {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(d.message.as_str());
            if let Some(help) = &d.help {
                s.set_description(help.as_str());
            }
            let mut tc = TestCase::new(d.location.to_string(), s);
            tc.set_classname("catalog");
            tc
        })
        .collect();
    if !errors.is_empty() {
        let mut suite = TestSuite::new("catalog");
        suite.add_test_cases(errors);
        report.add_test_suite(suite);
    }
    // Serializing to a String fails only on I/O errors, which a String has not.
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit report not written: {e} -->\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::rego_test::RegoTest;
    use crate::diag::Location;

    #[test]
    fn junit_escapes_markup_and_drops_control_characters() {
        let why = "got <b> & \"c\" \u{7} 'd'";
        let r = TestReport {
            rego: vec![RegoTest {
                // An ANSI colour sequence goes whole, not just its ESC.
                name: "data.t.test_<&\"\u{1b}[31m>".to_string(),
                location: Location::new("t_test.rego", 3, 1),
                failure: Some(why.to_string()),
            }],
            ..Default::default()
        };
        let xml = junit(&r);
        assert!(
            xml.contains(
                "<failure message=\"got &lt;b&gt; &amp; &quot;c&quot;  &apos;d&apos;\">t_test.rego:3:1</failure>"
            ),
            "{xml}"
        );
        assert!(!xml.contains(['\u{7}', '\u{1b}']), "{xml}");
        // Well-formed: it parses back, with the same counts and text.
        let back = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!((back.tests, back.failures, back.errors), (1, 1, 0));
        let case = &back.test_suites[0].test_cases[0];
        assert_eq!(case.name.as_str(), "data.t.test_<&\">");
        match &case.status {
            quick_junit::TestCaseStatus::NonSuccess { message, .. } => {
                assert_eq!(message.as_deref(), Some("got <b> & \"c\"  'd'"))
            }
            other => panic!("not a failure: {other:?}"),
        }
    }
}
