//! A [`Review`] as GitHub-flavoured Markdown, for CI job summaries and
//! pull-request comments.
//!
//! Everything from the catalog (descriptions, reasons, questions, argument
//! values) is untrusted text: [`text`] escapes what Markdown would read as
//! syntax or HTML, and table cells have no newlines or bare pipes. GitHub
//! takes at most 65,536 characters in a comment and 1 MiB in a job
//! summary: a review longer than the limit it is given is rendered as a
//! summary (per-tool counts and the findings), which says so.

use std::collections::BTreeMap;

use super::diff::{Direction, Mark, OneSided, RowChange};
use super::{
    Compared, Coverage, Decision, Other, Review, Row, RowKey, RowOutcome, ToolTable, class_text,
    plural, show,
};
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

/// `review` compared with its base, as Markdown of at most `limit` bytes:
/// what changed first, then the tables of the tools that changed (the
/// others counted), the base's tables of those tools, and the findings.
/// Past the limit, what changed (cut to fit, saying so) and the findings.
pub fn render_compared(review: &Review, base: &Compared, limit: usize) -> String {
    let full = full_compared(review, base);
    if full.len() <= limit {
        return full;
    }
    let mut out = String::new();
    header(review, Some(base), &mut out);
    out.push_str(&format!(
        "**Summary only**: the whole review is {} bytes, over this output's limit of {limit}; the tables are left out. Run `regent review --base … -o review.html` (or `--max-bytes`) for every row.\n\n",
        full.len()
    ));
    // Room kept for the findings' heading and at least one line of them.
    changes(base, &mut out, limit.saturating_sub(768));
    findings(review, &mut out, limit.saturating_sub(200));
    out
}

fn full_compared(review: &Review, base: &Compared) -> String {
    let diff = base.diff;
    let mut out = String::new();
    header(review, Some(base), &mut out);
    changes(base, &mut out, usize::MAX);
    out.push_str(EXPLAIN);
    out.push_str(
        " With `--base`, each row of a changed tool's table is marked in its *change* column.\n\n",
    );
    out.push_str("## Contents\n\n");
    let shown: Vec<&ToolTable> = review
        .tools
        .iter()
        .filter(|t| diff.touches(&t.name))
        .collect();
    for t in &shown {
        contents_line(t, &mut out);
    }
    if !diff.unchanged.is_empty() {
        out.push_str(&format!(
            "- {} tool{} unchanged, not shown\n",
            diff.unchanged.len(),
            plural(diff.unchanged.len())
        ));
    }
    out.push_str("- [Findings of regent check](#findings-of-regent-check)\n\n");
    for t in &shown {
        tool(t, Some(&diff.marks), &mut out);
    }
    let before: Vec<&ToolTable> = base
        .review
        .tools
        .iter()
        .filter(|t| diff.changed_tools.contains(&t.name) || diff.removed.contains(&t.name))
        .collect();
    if !before.is_empty() {
        out.push_str(&format!(
            "## Before: the base's tables\n\n<details><summary>{} table{} of {}</summary>\n\n",
            before.len(),
            plural(before.len()),
            text(base.label)
        ));
        for t in before {
            tool_at(t, 3, None, &mut out);
        }
        out.push_str("</details>\n\n");
    }
    findings(review, &mut out, usize::MAX);
    out
}

/// What changed, within `limit` bytes of `out` (rows past it are counted).
fn changes(base: &Compared, out: &mut String, limit: usize) {
    let d = base.diff;
    out.push_str("## What changed\n\n");
    if d.is_empty() {
        out.push_str(&format!(
            "Nothing: every tool is listed and decides every class as in {}.\n\n",
            text(base.label)
        ));
        return;
    }
    let less = d.count(Direction::LessSafe);
    out.push_str(&format!(
        "Against {}: {}{} row{} less safe{}, {} safer, {} otherwise changed; {} class{} new, {} gone; {} tool{} added, {} removed; {} listing change{}; {} tool{} unchanged.\n\n",
        text(base.label),
        if less > 0 { "**" } else { "" },
        less,
        plural(less),
        if less > 0 { "**" } else { "" },
        d.count(Direction::Safer),
        d.count(Direction::Other),
        d.new_classes.len(),
        if d.new_classes.len() == 1 { "" } else { "es" },
        d.gone_classes.len(),
        d.added.len(),
        plural(d.added.len()),
        d.removed.len(),
        d.listings.len(),
        plural(d.listings.len()),
        d.unchanged.len(),
        plural(d.unchanged.len()),
    ));
    let mut cut = 0usize;
    let mut put = |out: &mut String, line: String| {
        if cut > 0 || out.len() + line.len() > limit {
            cut += 1;
        } else {
            out.push_str(&line);
        }
    };
    for (dir, heading) in [
        (Direction::LessSafe, "Less safe"),
        (Direction::Safer, "Safer"),
        (Direction::Other, "Other changes"),
    ] {
        let rows: Vec<&RowChange> = d.changed.iter().filter(|c| c.direction == dir).collect();
        if rows.is_empty() {
            continue;
        }
        let callers = rows.iter().any(|c| c.caller.is_some());
        put(out, format!("### {heading}\n\n"));
        put(
            out,
            format!(
                "| tool | arguments |{} what changed | set by now |\n| --- | --- |{} --- | --- |\n",
                if callers { " caller |" } else { "" },
                if callers { " --- |" } else { "" }
            ),
        );
        for c in rows {
            let notes: Vec<String> = c
                .notes
                .iter()
                .map(|n| {
                    let t = text(&n.text);
                    match n.direction {
                        Direction::LessSafe => format!("**{t}** (less safe)"),
                        Direction::Safer => format!("{t} *(safer)*"),
                        Direction::Other => t,
                    }
                })
                .collect();
            let by: Vec<String> = c
                .set_by
                .iter()
                .map(|(fields, who)| text(&format!("{}: {who}", fields.join(", "))))
                .collect();
            put(
                out,
                format!(
                    "| {} | {} |{} {} | {} |\n",
                    text(&c.tool),
                    text(&c.class),
                    caller_cell(callers, &c.caller),
                    notes.join("<br>"),
                    by.join("<br>")
                ),
            );
        }
        put(out, "\n".to_string());
    }
    for (rows, heading, col) in [
        (&d.new_classes, "New classes", "decision now"),
        (&d.gone_classes, "Classes gone", "decision before"),
    ] {
        if rows.is_empty() {
            continue;
        }
        let callers = rows.iter().any(|c| c.caller.is_some());
        put(out, format!("### {heading}\n\n"));
        put(
            out,
            format!(
                "| tool | arguments |{} {col} |\n| --- | --- |{} --- |\n",
                if callers { " caller |" } else { "" },
                if callers { " --- |" } else { "" }
            ),
        );
        for r in rows.iter() {
            put(out, one_sided(r, callers));
        }
        put(out, "\n".to_string());
    }
    for (names, heading, what) in [
        (&d.added, "Tools added", "its table is below"),
        (&d.removed, "Tools removed", "its table is under *Before*"),
    ] {
        if names.is_empty() {
            continue;
        }
        put(out, format!("### {heading}\n\n"));
        for n in names {
            put(out, format!("- {} ({what})\n", text(n)));
        }
        put(out, "\n".to_string());
    }
    if !d.listings.is_empty() {
        put(
            out,
            "### Listings changed\n\n| tool | what changed |\n| --- | --- |\n".to_string(),
        );
        for l in &d.listings {
            let t = text(&l.note.text);
            let t = match l.note.direction {
                Direction::LessSafe => format!("**{t}** (less safe)"),
                Direction::Safer => format!("{t} *(safer)*"),
                Direction::Other => t,
            };
            put(out, format!("| {} | {t} |\n", text(&l.tool)));
        }
        put(out, "\n".to_string());
    }
    if cut > 0 {
        out.push_str(&format!(
            "… and {cut} more line{} of changes not shown: see the HTML review (`-o review.html`).\n\n",
            plural(cut)
        ));
    }
}

fn caller_cell(callers: bool, c: &Option<String>) -> String {
    if !callers {
        return String::new();
    }
    format!(" {} |", c.as_deref().map_or("(none)".to_string(), text))
}

fn one_sided(r: &OneSided, callers: bool) -> String {
    format!(
        "| {} | {} |{} {} |\n",
        text(&r.tool),
        text(&r.class),
        caller_cell(callers, &r.caller),
        text(&r.decision)
    )
}

fn header(review: &Review, base: Option<&Compared>, out: &mut String) {
    out.push_str(if base.is_some() {
        "# regent review: what changed\n\n"
    } else {
        "# regent review\n\n"
    });
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
    if let Some(b) = base {
        out.push_str(&format!(
            "Base: {} · {} tool{} declared, {} reviewed · `regent check`: {} error{}, {} warning{}\n\n",
            text(b.label),
            b.review.declared,
            plural(b.review.declared),
            b.review.tools.len(),
            b.review.errors(),
            plural(b.review.errors()),
            b.review.warnings(),
            plural(b.review.warnings()),
        ));
    }
}

const EXPLAIN: &str = "Each tool's listing is its worst case; each row is what a call with that class of arguments (and, where the policy reads the caller, that caller) resolves to. The classes are the worst-case proof's: arguments that can change the annotations, each class shown by one representative value; `deny`, `confirm` and `_meta` are those of the representative; the other values of the class the catalog's test cases call the tool with are resolved too, and a `deny` or a `confirm` one of them gets where the representative does not is shown below the representative's, *for* its arguments. Hints safer than listed are marked *(safer)*; riskier ones are errors. *Set by* names the rule behind each field that differs from the listing.";

fn contents_line(t: &ToolTable, out: &mut String) {
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

/// The whole review.
pub fn full(review: &Review) -> String {
    let mut out = String::new();
    header(review, None, &mut out);
    out.push_str(EXPLAIN);
    out.push_str("\n\n## Contents\n\n");
    for t in &review.tools {
        contents_line(t, &mut out);
    }
    out.push_str("- [Findings of regent check](#findings-of-regent-check)\n\n");
    for t in &review.tools {
        tool(t, None, &mut out);
    }
    findings(review, &mut out, usize::MAX);
    out
}

fn tool(t: &ToolTable, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    tool_at(t, 2, marks, out);
}

/// A tool's section under a heading of `level`; with `marks`, a first
/// column says how each row changed.
fn tool_at(t: &ToolTable, level: usize, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    out.push_str(&format!("{} {}\n\n", "#".repeat(level), text(&t.name)));
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
    table(t, marks, out);
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

fn table(t: &ToolTable, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    let mut head: Vec<String> = Vec::new();
    if marks.is_some() {
        head.push("change".to_string());
    }
    head.push("arguments".to_string());
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
        let mut c = cells(t, r);
        if let Some(marks) = marks {
            c.insert(0, mark(marks.get(&r.key).copied()));
        }
        out.push_str(&format!("| {} |\n", c.join(" | ")));
    }
}

/// A row's change mark: words, the less safe in bold.
fn mark(m: Option<Mark>) -> String {
    match m {
        None => String::new(),
        Some(Mark::Changed(Direction::LessSafe)) => "**less safe**".to_string(),
        Some(m) => m.text().to_string(),
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
        RowOutcome::Decided(d) => c.extend(decided(d, &r.others)),
        other => {
            let (what, why) = super::undecided(other).unwrap_or_default();
            // A failing policy stands out: a client gets an internal error.
            c.push(if matches!(other, RowOutcome::Failed(_)) {
                "**the policy fails** (internal error)".to_string()
            } else {
                what.to_string()
            });
            c.extend(std::iter::repeat_n(String::new(), 6));
            c.push(why.map(text).unwrap_or_default());
        }
    }
    c
}

fn decided(d: &Decision, others: &[Other]) -> Vec<String> {
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
    // The representative's, then other values of the class that differ.
    let deny: Vec<String> = d
        .deny
        .iter()
        .map(|f| text(&show(&f.value)))
        .chain(others.iter().filter(|o| !o.deny.is_empty()).map(|o| {
            let reasons: Vec<String> = o.deny.iter().map(|r| text(r)).collect();
            format!("*for {}:* {}", text(&o.arguments), reasons.join("; "))
        }))
        .collect();
    c.push(deny.join("<br>"));
    let confirm: Vec<String> = d
        .confirm
        .iter()
        .map(|f| text(&show(&f.value)))
        .chain(others.iter().filter_map(|o| {
            let q = o.confirm.as_ref()?;
            Some(format!("*for {}:* {}", text(&o.arguments), text(q)))
        }))
        .collect();
    c.push(confirm.join("<br>"));
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
    header(review, None, &mut out);
    out.push_str(&format!(
        "**Summary only**: the full tables are {full_len} bytes, over this output's limit of {limit}. Run `regent review -o review.html` (or `--max-bytes`) for every row.\n\n"
    ));
    out.push_str("| tool | rows | denied | confirm | safer than listed | riskier than listed | hidden | failing | caller refused | proof |\n");
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
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
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {proof} |\n",
            text(&t.name),
            c.rows,
            c.denied,
            c.confirmed,
            c.safer,
            c.riskier,
            c.hidden,
            c.failed,
            c.refused
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
