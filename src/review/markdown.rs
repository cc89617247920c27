//! A [`Review`] as GitHub-flavoured Markdown, for CI job summaries and
//! pull-request comments.
//!
//! Everything from the catalog (descriptions, reasons, questions, argument
//! values) is untrusted text: [`text`] escapes what Markdown would read as
//! syntax or HTML, and table cells have no newlines or bare pipes. GitHub
//! takes at most 65,536 characters in a comment and 1 MiB in a job
//! summary: a review longer than the limit it is given is rendered as a
//! summary (per-tool counts and the findings), which says so.

use super::{Coverage, Decision, Review, Row, RowOutcome, ToolTable, class_text, plural, show};
use crate::catalog::hints::Hint;

/// A pull-request comment's limit (GitHub: 65,536 characters; bytes are
/// never fewer).
pub const COMMENT_LIMIT: usize = 65_536;

/// `review` as Markdown of at most `limit` bytes: the full tables when they
/// fit, else a summary that says so (itself cut to fit, saying how many
/// tools were left out).
pub fn render(review: &Review, limit: usize) -> String {
    let full = full(review);
    if full.len() <= limit {
        return full;
    }
    summary(review, full.len(), limit)
}

fn header(review: &Review, out: &mut String) {
    out.push_str("# regent review\n\n");
    out.push_str(&format!(
        "Catalog: {} · {} tool{} declared, {} reviewed · `regent check`: {} error{}, {} warning{}\n\n",
        review
            .paths
            .iter()
            .map(|p| text(p))
            .collect::<Vec<_>>()
            .join(", "),
        review.declared,
        plural(review.declared),
        review.tools.len(),
        review.errors(),
        plural(review.errors()),
        review.warnings(),
        plural(review.warnings()),
    ));
}

/// The whole review.
pub fn full(review: &Review) -> String {
    let mut out = String::new();
    header(review, &mut out);
    out.push_str(
        "Each tool's listing is its worst case; each row is what a call with that class of arguments (and, where the policy reads the caller, that caller) resolves to. The classes are the worst-case proof's: arguments that can change the annotations, each class shown by one representative value; `deny`, `confirm` and `_meta` are those of the representative and may differ for other values of its class (`regent test` cases pin them). Hints safer than listed are marked *(safer)*; riskier ones are errors. *Set by* names the rule behind each field that differs from the listing.\n\n",
    );
    out.push_str("## Contents\n\n");
    for t in &review.tools {
        let c = t.counts();
        out.push_str(&format!(
            "- [{}](#{}): {} row{}{}\n",
            text(&t.name),
            anchor(&t.name),
            c.rows,
            plural(c.rows),
            if t.sampled() { ", sampled" } else { "" }
        ));
    }
    out.push_str("- [Findings of regent check](#findings-of-regent-check)\n\n");
    for t in &review.tools {
        tool(t, &mut out);
    }
    findings(review, &mut out, usize::MAX);
    out
}

fn tool(t: &ToolTable, out: &mut String) {
    out.push_str(&format!("## {}\n\n", text(&t.name)));
    if let Some(title) = &t.title {
        out.push_str(&format!("**{}**", text(title)));
        out.push_str(if t.description.is_some() {
            ": "
        } else {
            "\n\n"
        });
    }
    if let Some(d) = &t.description {
        out.push_str(&format!("{}\n\n", text(d)));
    }
    let listed: Vec<String> = Hint::ALL
        .iter()
        .map(|&h| format!("{} {}", h.key(), t.listed.get(h)))
        .collect();
    out.push_str(&format!(
        "Listed (the worst case): {} (`{}`)",
        listed.join(", "),
        text(&t.location)
    ));
    if !t.listed_meta.is_empty() {
        out.push_str(&format!(
            "; `_meta` {}",
            text(&serde_json::Value::Object(t.listed_meta.clone()).to_string())
        ));
    }
    if let Some(s) = &t.listed_security_schemes {
        out.push_str(&format!(
            "; securitySchemes {}",
            text(&serde_json::Value::Array(s.clone()).to_string())
        ));
    }
    out.push_str("\n\n");
    out.push_str(&coverage(t));
    out.push_str("\n\n");
    for p in &t.partitions {
        out.push_str(&format!("- partitioned: {}\n", text(p)));
    }
    if !t.held.is_empty() {
        out.push_str(&format!(
            "- held at sample values: {}\n",
            t.held
                .iter()
                .map(|a| text(a))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !t.partitions.is_empty() || !t.held.is_empty() {
        out.push('\n');
    }
    table(t, out);
    if t.omitted > 0 {
        out.push_str(&format!(
            "\n{} more row{} not shown (at most {} per tool).\n",
            t.omitted,
            plural(t.omitted),
            super::MAX_ROWS
        ));
    }
    out.push('\n');
}

fn coverage(t: &ToolTable) -> String {
    let args = if t.arguments.is_empty() {
        "no argument".to_string()
    } else {
        t.arguments
            .iter()
            .map(|a| text(a))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &t.coverage {
        Coverage::ListedOnly => "No rules and no policy: every call gets the listing.".to_string(),
        Coverage::Proved { combinations } => format!(
            "Proof: covered, {combinations} combination{} of {args}, none riskier than listed.",
            plural(*combinations)
        ),
        Coverage::Refuted { combinations } => format!(
            "Proof: covered, {combinations} combination{} of {args}; **some resolve riskier than listed or fail** (see the rows and the findings).",
            plural(*combinations)
        ),
        Coverage::Partial {
            combinations,
            rejected,
        } => format!(
            "Proof: partial, {combinations} combination{} of {args}, {rejected} refused by inputSchema with sample values.",
            plural(*combinations)
        ),
        Coverage::NotCovered { warning } => format!(
            "**Not covered by the proof**: the rows are the combinations `regent check` sampled. {}",
            text(warning)
        ),
    }
}

fn table(t: &ToolTable, out: &mut String) {
    let mut head: Vec<String> = vec!["arguments".to_string()];
    if t.per_caller {
        head.push("caller".to_string());
    }
    head.extend(Hint::ALL.iter().map(|h| h.key().to_string()));
    head.extend(["deny", "confirm", "other fields", "set by"].map(String::from));
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    out.push_str(&format!(
        "|{}\n",
        head.iter().map(|_| " --- |").collect::<String>()
    ));
    for r in &t.rows {
        out.push_str(&format!("| {} |\n", cells(t, r).join(" | ")));
    }
}

/// The cells of one row, escaped.
fn cells(t: &ToolTable, r: &Row) -> Vec<String> {
    let mut c = vec![text(&class_text(r))];
    if t.per_caller {
        c.push(match &r.caller {
            Some(l) => text(l),
            None => "(none)".to_string(),
        });
    }
    match &r.outcome {
        RowOutcome::Decided(d) => c.extend(decided(d)),
        other => {
            let (what, why) = match other {
                RowOutcome::Hidden { why: None } => ("hidden from this caller", None),
                RowOutcome::Hidden { why: Some(w) } => ("hidden: its visible rule fails", Some(w)),
                RowOutcome::Invalid(w) => ("refused by inputSchema", Some(w)),
                RowOutcome::Failed(w) => ("**the policy fails** (internal error)", Some(w)),
                RowOutcome::Decided(_) => unreachable!(),
            };
            c.push(what.to_string());
            c.extend(std::iter::repeat_n(String::new(), 6));
            c.push(why.map(|w| text(w)).unwrap_or_default());
        }
    }
    c
}

fn decided(d: &Decision) -> Vec<String> {
    let mut c: Vec<String> = d
        .hints
        .iter()
        .map(|h| {
            if h.riskier() {
                format!("**{} (riskier than listed)**", h.value)
            } else if h.safer() {
                format!("{} *(safer)*", h.value)
            } else {
                h.value.to_string()
            }
        })
        .collect();
    c.push(
        d.deny
            .iter()
            .map(|f| text(&show(&f.value)))
            .collect::<Vec<_>>()
            .join("<br>"),
    );
    c.push(
        d.confirm
            .as_ref()
            .map(|f| text(&show(&f.value)))
            .unwrap_or_default(),
    );
    c.push(
        d.fields
            .iter()
            .map(|f| {
                let listed = f
                    .listed
                    .as_ref()
                    .map_or("(absent)".to_string(), |v| v.to_string());
                text(&format!("{}: {listed} → {}", f.name, f.value))
            })
            .collect::<Vec<_>>()
            .join("<br>"),
    );
    let by: Vec<String> = d
        .set_by()
        .into_iter()
        .map(|(fields, who)| text(&format!("{}: {who}", fields.join(", "))))
        .collect();
    c.push(by.join("<br>"));
    c
}

fn findings(review: &Review, out: &mut String, limit: usize) {
    out.push_str("## Findings of regent check\n\n");
    if review.findings.is_empty() {
        out.push_str("None: `regent check` is clean.\n");
        return;
    }
    for (i, f) in review.findings.iter().enumerate() {
        let line = format!(
            "- **{}** `{}` {}: {}{}\n",
            f.severity.as_str(),
            f.code,
            text(&f.location),
            text(&f.message),
            f.help
                .as_ref()
                .map(|h| format!(" (help: {})", text(h)))
                .unwrap_or_default()
        );
        if out.len() + line.len() > limit {
            out.push_str(&format!(
                "- … and {} more finding{}: run `regent check` for all of them.\n",
                review.findings.len() - i,
                plural(review.findings.len() - i)
            ));
            return;
        }
        out.push_str(&line);
    }
}

/// The review as counts per tool, for a catalog whose tables are over
/// `limit` bytes.
fn summary(review: &Review, full_len: usize, limit: usize) -> String {
    let mut out = String::new();
    header(review, &mut out);
    out.push_str(&format!(
        "**Summary only**: the full tables are {full_len} bytes, over this output's limit of {limit}. Run `regent review -o review.html` (or `--max-bytes`) for every row.\n\n"
    ));
    out.push_str("| tool | rows | denied | confirm | safer than listed | riskier than listed | hidden | failing | proof |\n");
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    // Room kept for the findings' heading and at least one line of them.
    let reserve = 512;
    for (i, t) in review.tools.iter().enumerate() {
        let c = t.counts();
        let proof = match t.coverage {
            Coverage::ListedOnly => "listed only",
            Coverage::Proved { .. } => "covered",
            Coverage::Refuted { .. } => "covered, refuted",
            Coverage::Partial { .. } => "partial",
            Coverage::NotCovered { .. } => "not covered (sampled)",
        };
        let line = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {proof} |\n",
            text(&t.name),
            c.rows,
            c.denied,
            c.confirmed,
            c.safer,
            c.riskier,
            c.hidden,
            c.failed
        );
        if out.len() + line.len() + reserve > limit {
            out.push_str(&format!(
                "\n… and {} more tool{} not shown.\n",
                review.tools.len() - i,
                plural(review.tools.len() - i)
            ));
            break;
        }
        out.push_str(&line);
    }
    out.push('\n');
    findings(review, &mut out, limit.saturating_sub(200));
    out
}

/// Untrusted text for Markdown: ASCII punctuation that Markdown or HTML
/// would read as syntax is backslash-escaped (CommonMark allows it for any
/// ASCII punctuation), `&` becomes an entity, and line breaks become
/// `<br>` so that a table cell stays one line.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '!' | '#' | '{' | '}' => {
                out.push('\\');
                out.push(ch);
            }
            '&' => out.push_str("&amp;"),
            '\r' => {}
            '\n' => out.push_str("<br>"),
            c => out.push(c),
        }
    }
    out
}

/// GitHub's heading anchor for a tool name heading: lowercased, spaces to
/// `-`, punctuation other than `-` and `_` dropped.
fn anchor(name: &str) -> String {
    name.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_escapes_what_markdown_and_html_would_read() {
        assert_eq!(
            text("<script>a|b</script> *x* [l](u) & `c`\nnext"),
            "\\<script\\>a\\|b\\</script\\> \\*x\\* \\[l\\](u) &amp; \\`c\\`<br>next"
        );
        assert_eq!(text("plain words, 1.2"), "plain words, 1.2");
    }

    #[test]
    fn anchors_are_github_s() {
        assert_eq!(anchor("manage_files"), "manage_files");
        assert_eq!(anchor("Tool.Name-2"), "toolname-2");
    }
}
