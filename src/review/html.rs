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

use super::{Coverage, Decision, Review, Row, RowOutcome, ToolTable, class_text, plural, show};
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
td.riskier, .fails { color: var(--risk); font-weight: 700; }
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
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<title>regent review</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n");
    out.push_str("<a class=\"skip\" href=\"#main\">Skip to the decision tables</a>\n");
    out.push_str("<header>\n<h1>regent review</h1>\n");
    out.push_str(&format!(
        "<p>Catalog: {} · {} tool{} declared, {} reviewed · <code>regent check</code>: {} error{}, {} warning{}</p>\n",
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
    out.push_str("<p>Each tool's listing is its worst case; each row is what a call with that class of arguments (and, where the policy reads the caller, that caller) resolves to. The classes are the worst-case proof's: arguments that can change the annotations, each class shown by one representative value; <code>deny</code>, <code>confirm</code> and <code>_meta</code> are those of the representative and may differ for other values of its class (<code>regent test</code> cases pin them). Hints safer than listed are marked <em>safer</em>; riskier ones are errors. <em>Set by</em> names the rule behind each field that differs from the listing.</p>\n</header>\n");
    out.push_str("<nav aria-label=\"Contents\">\n<h2>Contents</h2>\n<ul>\n");
    for t in &review.tools {
        let c = t.counts();
        out.push_str(&format!(
            "<li><a href=\"#{}\">{}</a>: {} row{}{}</li>\n",
            esc(&id(&t.name)),
            esc(&t.name),
            c.rows,
            plural(c.rows),
            if t.sampled() { ", sampled" } else { "" }
        ));
    }
    out.push_str("<li><a href=\"#findings\">Findings of regent check</a></li>\n</ul>\n</nav>\n");
    out.push_str("<main id=\"main\" tabindex=\"-1\">\n");
    for t in &review.tools {
        tool(t, &mut out);
    }
    findings(review, &mut out);
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn tool(t: &ToolTable, out: &mut String) {
    let id = id(&t.name);
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
    table(t, &id, out);
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
fn table(t: &ToolTable, id: &str, out: &mut String) {
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
    out.push_str("<th scope=\"col\">arguments</th>");
    if t.per_caller {
        out.push_str("<th scope=\"col\">caller</th>");
    }
    for h in Hint::ALL {
        out.push_str(&format!("<th scope=\"col\">{}</th>", h.key()));
    }
    out.push_str("<th scope=\"col\">deny</th><th scope=\"col\">confirm</th><th scope=\"col\">other fields</th><th scope=\"col\">set by</th></tr>\n</thead>\n<tbody>\n");
    for r in &t.rows {
        row(t, r, out);
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

fn row(t: &ToolTable, r: &Row, out: &mut String) {
    out.push_str(&format!(
        "<tr><th scope=\"row\"><code>{}</code></th>",
        esc(&class_text(r))
    ));
    if t.per_caller {
        out.push_str(&format!(
            "<td>{}</td>",
            r.caller.as_deref().map_or("(none)".to_string(), esc)
        ));
    }
    match &r.outcome {
        RowOutcome::Decided(d) => decided(d, out),
        other => {
            let (what, why) = match other {
                RowOutcome::Hidden { why: None } => ("hidden from this caller", None),
                RowOutcome::Hidden { why: Some(w) } => ("hidden: its visible rule fails", Some(w)),
                RowOutcome::Invalid(w) => ("refused by inputSchema", Some(w)),
                RowOutcome::Failed(w) => ("the policy fails (internal error)", Some(w)),
                RowOutcome::Decided(_) => unreachable!(),
            };
            let class = if matches!(other, RowOutcome::Failed(_)) {
                " class=\"fails\""
            } else {
                ""
            };
            out.push_str(&format!(
                "<td colspan=\"7\"{class}>{what}</td><td class=\"by\">{}</td>",
                why.map(|w| esc(w)).unwrap_or_default()
            ));
        }
    }
    out.push_str("</tr>\n");
}

fn decided(d: &Decision, out: &mut String) {
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
    out.push_str(&format!(
        "<td>{}</td>",
        list(d.deny.iter().map(|f| esc(&show(&f.value))).collect())
    ));
    out.push_str(&format!(
        "<td>{}</td>",
        d.confirm
            .as_ref()
            .map(|f| esc(&show(&f.value)))
            .unwrap_or_default()
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
