//! A [`Review`] as one self-contained HTML page: inline CSS, no script, no
//! network (no external stylesheet, font or image), semantic tables
//! (`<caption>`, `<th scope>`), a skip link and a table of contents with
//! anchors for the keyboard, and print styles. What only a browser shows
//! (focus, print layout, contrast in both colour schemes, axe-core's rules)
//! is checked in headless Chromium by tests/browser/review.mjs.
//!
//! Everything from the catalog is untrusted text and goes through [`esc`]
//! (quick-xml's escaping of `& < > ' "`), in text and in attributes alike.
//! Marks are words, not only colours (*safer*, *riskier than listed*), so
//! they survive printing in black and white and screen readers.

use std::collections::BTreeMap;

use super::diff::{Direction, Mark, Note, OneSided, RowChange};
use super::{
    Compared, Coverage, Decision, Other, Review, Row, RowKey, RowOutcome, ToolTable, class_text,
    plural, show,
};
use crate::catalog::hints::Hint;

const STYLE: &str = r#"
:root { color-scheme: light dark; --line: #8884; --mark: #0a7d2c; --risk: #b3261e; }
/* The system colours explicitly, so that text is measured against the
   background it is drawn on (an accessibility checker takes a transparent
   page for white, in the dark scheme too). */
html { background: Canvas; color: CanvasText; }
/* The marks' light colours are too dark on a dark background (WCAG AA 4.5:1). */
@media (prefers-color-scheme: dark) { :root { --mark: #6fdc8c; --risk: #ff8a80; } }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 90rem; padding: 1rem 1.5rem; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; background: Canvas; color: LinkText; padding: .5rem; z-index: 1; }
a:focus, [tabindex]:focus { outline: 3px solid Highlight; outline-offset: 2px; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; width: 100%; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border: 1px solid var(--line); padding: .3rem .45rem; text-align: left; vertical-align: top; }
thead th { background: #8881; }
/* Rule locations may break anywhere, so that a table fits a window more
   often (a wider one scrolls in its region); the minimum width keeps a
   crowded table from squeezing them to a letter a line. */
td.by { overflow-wrap: anywhere; min-width: 14em; }
td.safer { color: var(--mark); font-weight: 600; }
td.riskier, .fails, .less-safe { color: var(--risk); font-weight: 700; }
tr.changed > th, tr.changed > td:first-child { border-left: 4px solid var(--risk); }
.safer { color: var(--mark); }
.by { font-size: .85em; opacity: .85; }
code { font-size: .9em; }
.sampled { border-left: 4px solid var(--risk); padding-left: .5rem; }
.finding-error { color: var(--risk); }
.table-wrap { overflow-x: auto; }
@media print {
  .skip, nav { display: none; }
  body { max-width: none; padding: 0; font-size: 10pt; }
  .table-wrap { overflow: visible; }
  /* Paper does not scroll: any long value may break, so that every table
     fits the page. */
  tbody th, tbody td { overflow-wrap: anywhere; }
  tr, .finding { break-inside: avoid; }
  section { break-before: auto; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// The whole page.
pub fn render(review: &Review) -> String {
    page(review, None)
}

/// The page compared with a base: what changed first, then every tool's
/// table with each row's change marked, the base's tables of the tools
/// that changed or were removed, and the findings.
pub fn render_compared(review: &Review, base: &Compared) -> String {
    page(review, Some(base))
}

fn page(review: &Review, base: Option<&Compared>) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(if base.is_some() {
        "<title>regent review: what changed</title>\n<style>"
    } else {
        "<title>regent review</title>\n<style>"
    });
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n");
    out.push_str("<a class=\"skip\" href=\"#main\">Skip to the decision tables</a>\n");
    out.push_str(if base.is_some() {
        "<header>\n<h1>regent review: what changed</h1>\n"
    } else {
        "<header>\n<h1>regent review</h1>\n"
    });
    summary_line("Catalog", review, &mut out);
    if let Some(b) = base {
        let label = format!("<code>{}</code>", esc(b.label));
        let mut line = String::new();
        summary_line("Base", b.review, &mut line);
        // The base is named as given (a revision and its commit).
        let paths_end = line.find(" · ").unwrap_or(line.len());
        out.push_str(&format!("<p>Base: {label}{}", &line[paths_end..]));
    }
    out.push_str("<p>Each tool's listing is its worst case; each row is what a call with that class of arguments (and, where the policy reads the caller, that caller) resolves to. The classes are the worst-case proof's: arguments that can change the annotations, each class shown by one representative value; <code>deny</code>, <code>confirm</code> and <code>_meta</code> are those of the representative; the other values of the class the catalog's test cases call the tool with are resolved too, and a <code>deny</code> or a <code>confirm</code> one of them gets where the representative does not is shown below the representative's, <em>for</em> its arguments. Hints safer than listed are marked <em>safer</em>; riskier ones are errors. <em>Set by</em> names the rule behind each field that differs from the listing.");
    if base.is_some() {
        out.push_str(" Each row's <em>change</em> column says whether it is <strong>less safe</strong>, safer, changed or a new class than in the base.");
    }
    out.push_str("</p>\n</header>\n");
    out.push_str("<nav aria-label=\"Contents\">\n<h2>Contents</h2>\n<ul>\n");
    if base.is_some() {
        out.push_str("<li><a href=\"#changes\">What changed</a></li>\n");
    }
    for t in &review.tools {
        let c = t.counts();
        let change = match base {
            Some(b) if b.diff.added.contains(&t.name) => " (added)",
            Some(b) if b.diff.changed_tools.contains(&t.name) => " (changed)",
            Some(_) => " (unchanged)",
            None => "",
        };
        out.push_str(&format!(
            "<li><a href=\"#{}\">{}</a>: {} row{}{}{change}</li>\n",
            esc(&id(&t.name)),
            esc(&t.name),
            c.rows,
            plural(c.rows),
            if t.sampled() { ", sampled" } else { "" }
        ));
    }
    if base.is_some() {
        out.push_str("<li><a href=\"#before\">Before: the base's tables</a></li>\n");
    }
    out.push_str("<li><a href=\"#findings\">Findings of regent check</a></li>\n</ul>\n</nav>\n");
    out.push_str("<main id=\"main\" tabindex=\"-1\">\n");
    if let Some(b) = base {
        changes(b, &mut out);
    }
    for t in &review.tools {
        tool(t, "tool-", base.map(|b| &b.diff.marks), &mut out);
    }
    if let Some(b) = base {
        let d = b.diff;
        out.push_str("<section id=\"before\" aria-labelledby=\"before-h\">\n<h2 id=\"before-h\">Before: the base's tables</h2>\n");
        let before: Vec<&ToolTable> = b
            .review
            .tools
            .iter()
            .filter(|t| d.changed_tools.contains(&t.name) || d.removed.contains(&t.name))
            .collect();
        if before.is_empty() {
            out.push_str("<p>No tool of the base changed or was removed.</p>\n");
        }
        for t in before {
            tool(t, "base-", None, &mut out);
        }
        out.push_str("</section>\n");
    }
    findings(review, &mut out);
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn summary_line(what: &str, review: &Review, out: &mut String) {
    out.push_str(&format!(
        "<p>{what}: {} · {} tool{} declared, {} reviewed · <code>regent check</code>: {} error{}, {} warning{}</p>\n",
        review
            .paths
            .iter()
            .map(|p| format!("<code>{}</code>", esc(p)))
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

/// A change's words with its mark: the less safe in bold with the words
/// *less safe*, never by colour alone.
fn note(n: &Note) -> String {
    match n.direction {
        Direction::LessSafe => format!(
            "<strong class=\"less-safe\">{} (less safe)</strong>",
            esc(&n.text)
        ),
        Direction::Safer => format!("<span class=\"safer\">{} (safer)</span>", esc(&n.text)),
        Direction::Other => esc(&n.text),
    }
}

/// The section of what changed.
fn changes(b: &Compared, out: &mut String) {
    let d = b.diff;
    out.push_str("<section id=\"changes\" aria-labelledby=\"changes-h\">\n<h2 id=\"changes-h\">What changed</h2>\n");
    if d.is_empty() {
        out.push_str(&format!(
            "<p>Nothing: every tool is listed and decides every class as in <code>{}</code>.</p>\n</section>\n",
            esc(b.label)
        ));
        return;
    }
    let less = d.count(Direction::LessSafe);
    out.push_str(&format!(
        "<p>Against <code>{}</code>: {} row{} less safe, {} safer, {} otherwise changed; {} class{} new, {} gone; {} tool{} added, {} removed; {} listing change{}; {} tool{} unchanged.</p>\n",
        esc(b.label),
        if less > 0 { format!("<strong class=\"less-safe\">{less}</strong>") } else { "0".to_string() },
        plural(less),
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
    for (dir, heading) in [
        (Direction::LessSafe, "Less safe"),
        (Direction::Safer, "Safer"),
        (Direction::Other, "Other changes"),
    ] {
        let rows: Vec<&RowChange> = d.changed.iter().filter(|c| c.direction == dir).collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("<div class=\"table-wrap\" role=\"region\" aria-label=\"{heading}\" tabindex=\"0\">\n<table>\n<caption>{heading}</caption>\n<thead>\n<tr><th scope=\"col\">tool</th><th scope=\"col\">arguments</th><th scope=\"col\">caller</th><th scope=\"col\">what changed</th><th scope=\"col\">set by now</th></tr>\n</thead>\n<tbody>\n"));
        for c in rows {
            let by: Vec<String> = c
                .set_by
                .iter()
                .map(|(fields, who)| format!("{}: {}", esc(&fields.join(", ")), esc(who)))
                .collect();
            out.push_str(&format!(
                "<tr><th scope=\"row\"><a href=\"#{}\"><code>{}</code></a></th><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"by\">{}</td></tr>\n",
                esc(&id(&c.tool)),
                esc(&c.tool),
                esc(&c.class),
                c.caller.as_deref().map_or("(none)".to_string(), esc),
                c.notes.iter().map(note).collect::<Vec<_>>().join("<br>"),
                by.join("<br>")
            ));
        }
        out.push_str("</tbody>\n</table>\n</div>\n");
    }
    for (rows, heading, col) in [
        (&d.new_classes, "New classes", "decision now"),
        (&d.gone_classes, "Classes gone", "decision before"),
    ] {
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("<div class=\"table-wrap\" role=\"region\" aria-label=\"{heading}\" tabindex=\"0\">\n<table>\n<caption>{heading}</caption>\n<thead>\n<tr><th scope=\"col\">tool</th><th scope=\"col\">arguments</th><th scope=\"col\">caller</th><th scope=\"col\">{col}</th></tr>\n</thead>\n<tbody>\n"));
        for r in rows.iter() {
            out.push_str(&one_sided(r));
        }
        out.push_str("</tbody>\n</table>\n</div>\n");
    }
    for (names, heading, anchor) in [
        (&d.added, "Tools added", "tool-"),
        (&d.removed, "Tools removed", "base-"),
    ] {
        if names.is_empty() {
            continue;
        }
        out.push_str(&format!("<h3>{heading}</h3>\n<ul>\n"));
        for n in names {
            let target = format!("{anchor}{}", &id(n)["tool-".len()..]);
            out.push_str(&format!(
                "<li><a href=\"#{}\"><code>{}</code></a></li>\n",
                esc(&target),
                esc(n)
            ));
        }
        out.push_str("</ul>\n");
    }
    if !d.listings.is_empty() {
        out.push_str("<div class=\"table-wrap\" role=\"region\" aria-label=\"Listings changed\" tabindex=\"0\">\n<table>\n<caption>Listings changed</caption>\n<thead>\n<tr><th scope=\"col\">tool</th><th scope=\"col\">what changed</th></tr>\n</thead>\n<tbody>\n");
        for l in &d.listings {
            out.push_str(&format!(
                "<tr><th scope=\"row\"><code>{}</code></th><td>{}</td></tr>\n",
                esc(&l.tool),
                note(&l.note)
            ));
        }
        out.push_str("</tbody>\n</table>\n</div>\n");
    }
    out.push_str("</section>\n");
}

fn one_sided(r: &OneSided) -> String {
    format!(
        "<tr><th scope=\"row\"><code>{}</code></th><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
        esc(&r.tool),
        esc(&r.class),
        r.caller.as_deref().map_or("(none)".to_string(), esc),
        esc(&r.decision)
    )
}

/// A tool's section; `prefix` starts its anchor (`tool-`, or `base-` for
/// the base's table of it); with `marks`, a first column says how each row
/// changed.
fn tool(t: &ToolTable, prefix: &str, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    let id = format!("{prefix}{}", &id(&t.name)["tool-".len()..]);
    // tabindex=-1: following a contents link moves focus to the section, so
    // that the next Tab goes on from the tool, not from the contents.
    out.push_str(&format!(
        "<section id=\"{}\" tabindex=\"-1\" aria-labelledby=\"{}-h\">\n<h2 id=\"{}-h\"><code>{}</code>{}</h2>\n",
        esc(&id),
        esc(&id),
        esc(&id),
        esc(&t.name),
        t.title
            .as_ref()
            .map(|s| format!(": {}", esc(s)))
            .unwrap_or_default()
    ));
    if let Some(d) = &t.description {
        out.push_str(&format!("<p>{}</p>\n", esc(d)));
    }
    out.push_str("<dl>\n<dt>Listed (the worst case)</dt>\n<dd>");
    out.push_str(
        &Hint::ALL
            .iter()
            .map(|&h| format!("{} <strong>{}</strong>", h.key(), t.listed.get(h)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str(&format!(
        " <span class=\"by\">({})</span>",
        esc(&t.location)
    ));
    if !t.listed_meta.is_empty() {
        out.push_str(&format!(
            "; <code>_meta</code> <code>{}</code>",
            esc(&serde_json::Value::Object(t.listed_meta.clone()).to_string())
        ));
    }
    if let Some(s) = &t.listed_security_schemes {
        out.push_str(&format!(
            "; securitySchemes <code>{}</code>",
            esc(&serde_json::Value::Array(s.clone()).to_string())
        ));
    }
    out.push_str("</dd>\n<dt>Proof</dt>\n<dd");
    if t.sampled() {
        out.push_str(" class=\"sampled\"");
    }
    out.push('>');
    out.push_str(&coverage(t));
    out.push_str("</dd>\n");
    for p in &t.partitions {
        out.push_str(&format!("<dt>Partitioned</dt>\n<dd>{}</dd>\n", esc(p)));
    }
    if !t.held.is_empty() {
        out.push_str(&format!(
            "<dt>Held at sample values</dt>\n<dd>{}</dd>\n",
            t.held
                .iter()
                .map(|a| format!("<code>{}</code>", esc(a)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out.push_str("</dl>\n");
    table(t, &id, marks, out);
    if t.omitted > 0 {
        out.push_str(&format!(
            "<p>{} more row{} not shown (at most {} per tool).</p>\n",
            t.omitted,
            plural(t.omitted),
            super::MAX_ROWS
        ));
    }
    out.push_str("</section>\n");
}

fn coverage(t: &ToolTable) -> String {
    let args = if t.arguments.is_empty() {
        "no argument".to_string()
    } else {
        t.arguments
            .iter()
            .map(|a| format!("<code>{}</code>", esc(a)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &t.coverage {
        Coverage::ListedOnly => "No rules and no policy: every call gets the listing.".to_string(),
        Coverage::Proved { combinations } => format!(
            "Covered: {combinations} combination{} of {args}, none riskier than listed.",
            plural(*combinations)
        ),
        Coverage::Refuted { combinations } => format!(
            "Covered: {combinations} combination{} of {args}; <strong class=\"fails\">some resolve riskier than listed or fail</strong> (see the rows and the findings).",
            plural(*combinations)
        ),
        Coverage::Partial {
            combinations,
            rejected,
        } => format!(
            "Partial: {combinations} combination{} of {args}, {rejected} refused by inputSchema with sample values.",
            plural(*combinations)
        ),
        Coverage::NotCovered { warning } => format!(
            "<strong>Not covered by the proof</strong>: the rows are the combinations <code>regent check</code> sampled. {}",
            esc(warning)
        ),
    }
}

/// A wide table scrolls inside its wrapper; the wrapper is a named region in
/// the Tab order so that a keyboard can scroll it (axe-core's
/// scrollable-region-focusable).
fn table(t: &ToolTable, id: &str, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    out.push_str(&format!(
        "<div class=\"table-wrap\" role=\"region\" aria-labelledby=\"{}-c\" tabindex=\"0\">\n<table>\n",
        esc(id)
    ));
    out.push_str(&format!(
        "<caption id=\"{}-c\">Decisions of <code>{}</code>{}</caption>\n<thead>\n<tr>",
        esc(id),
        esc(&t.name),
        if t.sampled() {
            " (sampled, not covered by the proof)"
        } else {
            ""
        }
    ));
    if marks.is_some() {
        out.push_str("<th scope=\"col\">change</th>");
    }
    out.push_str("<th scope=\"col\">arguments</th>");
    if t.per_caller {
        out.push_str("<th scope=\"col\">caller</th>");
    }
    for h in Hint::ALL {
        out.push_str(&format!("<th scope=\"col\">{}</th>", h.key()));
    }
    out.push_str("<th scope=\"col\">deny</th><th scope=\"col\">confirm</th><th scope=\"col\">other fields</th><th scope=\"col\">set by</th></tr>\n</thead>\n<tbody>\n");
    for r in &t.rows {
        row(t, r, marks, out);
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

fn row(t: &ToolTable, r: &Row, marks: Option<&BTreeMap<RowKey, Mark>>, out: &mut String) {
    let mark = marks.map(|m| m.get(&r.key).copied());
    match mark {
        None => out.push_str("<tr>"),
        Some(None) => out.push_str("<tr><td></td>"),
        Some(Some(Mark::Changed(Direction::LessSafe))) => out.push_str(
            "<tr class=\"changed\"><td class=\"less-safe\"><strong>less safe</strong></td>",
        ),
        Some(Some(m)) => out.push_str(&format!("<tr class=\"changed\"><td>{}</td>", m.text())),
    }
    out.push_str(&format!(
        "<th scope=\"row\"><code>{}</code></th>",
        esc(&class_text(r))
    ));
    if t.per_caller {
        out.push_str(&format!(
            "<td>{}</td>",
            r.caller.as_deref().map_or("(none)".to_string(), esc)
        ));
    }
    match &r.outcome {
        RowOutcome::Decided(d) => decided(d, &r.others, out),
        other => {
            let (what, why) = super::undecided(other).unwrap_or_default();
            let class = if matches!(other, RowOutcome::Failed(_)) {
                " class=\"fails\""
            } else {
                ""
            };
            out.push_str(&format!(
                "<td colspan=\"7\"{class}>{what}</td><td class=\"by\">{}</td>",
                why.map(esc).unwrap_or_default()
            ));
        }
    }
    out.push_str("</tr>\n");
}

fn decided(d: &Decision, others: &[Other], out: &mut String) {
    for h in &d.hints {
        if h.riskier() {
            out.push_str(&format!(
                "<td class=\"riskier\">{} (riskier than listed)</td>",
                h.value
            ));
        } else if h.safer() {
            out.push_str(&format!("<td class=\"safer\">{} (safer)</td>", h.value));
        } else {
            out.push_str(&format!("<td>{}</td>", h.value));
        }
    }
    let list = |items: Vec<String>| -> String {
        match items.len() {
            0 => String::new(),
            1 => items.into_iter().next().unwrap_or_default(),
            _ => format!(
                "<ul>{}</ul>",
                items
                    .iter()
                    .map(|i| format!("<li>{i}</li>"))
                    .collect::<String>()
            ),
        }
    };
    // The representative's, then other values of the class that differ.
    out.push_str(&format!(
        "<td>{}</td>",
        list(
            d.deny
                .iter()
                .map(|f| esc(&show(&f.value)))
                .chain(others.iter().filter(|o| !o.deny.is_empty()).map(|o| {
                    format!(
                        "<em>for <code>{}</code>:</em> {}",
                        esc(&o.arguments),
                        esc(&o.deny.join("; "))
                    )
                }))
                .collect()
        )
    ));
    out.push_str(&format!(
        "<td>{}</td>",
        list(
            d.confirm
                .iter()
                .map(|f| esc(&show(&f.value)))
                .chain(others.iter().filter_map(|o| {
                    let q = o.confirm.as_ref()?;
                    Some(format!(
                        "<em>for <code>{}</code>:</em> {}",
                        esc(&o.arguments),
                        esc(q)
                    ))
                }))
                .collect()
        )
    ));
    out.push_str(&format!(
        "<td>{}</td>",
        list(
            d.fields
                .iter()
                .map(|f| {
                    let listed = f
                        .listed
                        .as_ref()
                        .map_or("(absent)".to_string(), |v| v.to_string());
                    format!(
                        "<code>{}</code>: {} → {}",
                        esc(&f.name),
                        esc(&listed),
                        esc(&f.value.to_string())
                    )
                })
                .collect()
        )
    ));
    let by: Vec<String> = d
        .set_by()
        .into_iter()
        .map(|(fields, who)| {
            format!(
                "{}: {}",
                fields
                    .iter()
                    .map(|f| format!("<code>{}</code>", esc(f)))
                    .collect::<Vec<_>>()
                    .join(", "),
                esc(&who)
            )
        })
        .collect();
    out.push_str(&format!("<td class=\"by\">{}</td>", list(by)));
}

fn findings(review: &Review, out: &mut String) {
    out.push_str("<section id=\"findings\" tabindex=\"-1\" aria-labelledby=\"findings-h\">\n<h2 id=\"findings-h\">Findings of regent check</h2>\n");
    if review.findings.is_empty() {
        out.push_str("<p>None: <code>regent check</code> is clean.</p>\n</section>\n");
        return;
    }
    out.push_str("<ul>\n");
    for f in &review.findings {
        out.push_str(&format!(
            "<li class=\"finding finding-{}\"><strong>{}</strong> <code>{}</code> <span class=\"by\">{}</span>: {}{}</li>\n",
            f.severity.as_str(),
            f.severity.as_str(),
            esc(f.code),
            esc(&f.location),
            esc(&f.message),
            f.help
                .as_ref()
                .map(|h| format!("<br><span class=\"by\">help: {}</span>", esc(h)))
                .unwrap_or_default()
        ));
    }
    out.push_str("</ul>\n</section>\n");
}

/// Untrusted text for HTML text and attribute values (`& < > ' "`).
pub fn esc(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

/// The anchor of a tool's section: `tool-` and the name (MCP tool names
/// are letters, digits, `_`, `-` and `.`; anything else becomes `_`).
fn id(name: &str) -> String {
    let mut s = String::from("tool-");
    s.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
            c
        } else {
            '_'
        }
    }));
    s
}
