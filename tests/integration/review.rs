//! `regent review`: golden Markdown of the shipped examples (rewritten with
//! `REGENT_BLESS=1`), the HTML page's structure (self-contained, semantic
//! tables, keyboard and print affordances) and the escaping of untrusted
//! text in both formats. The headless-browser check of the page is a later
//! slice.

use crate::common::{self, regent};

/// Runs `regent review ARGS…` from the repository's root (so locations in
/// the output are relative and stable) and returns its stdout. The policy
/// time limit is wall-clock: on a loaded machine the default 250 ms can cut
/// an evaluation short and change a golden row, so it is raised here.
fn review(args: &[&str]) -> String {
    let out = regent()
        .current_dir(common::repo_root())
        .args(["review", "--policy-timeout-ms", "60000"])
        .args(args)
        .output()
        .expect("the regent binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "regent review {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Compares `actual` with the golden file `tests/review/NAME`, or rewrites
/// it when `REGENT_BLESS=1`.
fn golden(name: &str, actual: &str) {
    let path = common::repo_path("tests/review").join(name);
    if std::env::var_os("REGENT_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run with REGENT_BLESS=1 to write it",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output at line {}:\n  expected: {:?}\n  actual:   {:?}\n(run with REGENT_BLESS=1 to accept the new output)",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

#[test]
fn review_markdown_of_manage_files_is_golden() {
    let md = review(&["examples/manage_files"]);
    golden("manage_files.md", &md);
    // What a reviewer looks for: delete is destructive and asks first, by
    // the rules named.
    let delete = md
        .lines()
        .find(|l| l.starts_with("| action=\"delete\""))
        .expect("a row for delete");
    assert!(delete.contains("| true |"), "{delete}");
    assert!(
        delete.contains("delete \"x\" under the root directory? This cannot be undone."),
        "{delete}"
    );
    assert!(
        delete.contains("manage\\_files.rego:18"),
        "confirm's rule is named: {delete}"
    );
}

#[test]
fn review_markdown_of_team_ops_is_golden_per_caller() {
    // A job summary's limit holds the whole review.
    let md = review(&["--max-bytes", "1048576", "examples/team_ops"]);
    golden("team_ops.md", &md);
    assert!(!md.contains("Summary only"));
    // rollback: hidden without a caller; no argument changes its hints.
    let rollback = &md[md.find("## rollback").expect("rollback's table")..];
    assert!(rollback.contains("| (any) | (none) | hidden from this caller"));
    // deploy is covered by the proof over the caller schema's classes: its
    // rows are the proof's classes, prod is the on-call group's.
    let deploy =
        &md[md.find("## deploy").expect("deploy's table")..md.find("## rollback").unwrap()];
    assert!(deploy.contains("Proof: covered"), "{deploy}");
    assert!(deploy.contains("bob is not on call: only the oncall group deploys to prod"));
}

#[test]
fn review_without_test_case_callers_tabulates_the_caller_schema_classes() {
    // No `regent test` cases: the caller classes are those the proof
    // enumerates from the declared caller schema, so the one member set the
    // listing understates has its own row.
    let md = review(&["tests/corpus/check/caller-class-counterexample/catalog"]);
    let row = md
        .lines()
        .find(|l| {
            l.starts_with("| mode=\"hard\" | caller \\{\"groups\":\\[\"ops\",\"admin\"\\]\\}")
        })
        .unwrap_or_else(|| panic!("a row for ops and admin: {md}"));
    assert!(row.contains("**true (riskier than listed)**"), "{row}");
    assert!(md.contains("| mode=\"hard\" | (none) |"), "{md}");
}

#[test]
fn review_markdown_over_the_limit_is_a_summary_that_says_so() {
    // The whole review of team_ops is about 7 KB.
    let md = review(&["--max-bytes", "5000", "examples/team_ops"]);
    golden("team_ops.summary.md", &md);
    assert!(md.len() <= 5000);
    assert!(md.contains("**Summary only**"));
    assert!(md.contains("| deploy | "));
    // Too small even for the summary: cut, and said.
    let tiny = review(&["--max-bytes", "1000", "examples/team_ops"]);
    assert!(tiny.len() <= 1000, "{} bytes", tiny.len());
    assert!(tiny.contains("more tool"), "{tiny}");
}

/// A tool whose text tries to break out of Markdown and HTML.
const HOSTILE: &str = r#"
tools:
  - name: archive
    title: "Archive <b>now</b>"
    description: "Archives <script>alert('x')</script> a | b & c\nsecond line"
    inputSchema:
      type: object
      properties:
        path: {type: string}
        mode: {type: string, enum: [copy, move]}
      required: [path, mode]
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false}
    resolve:
      - when: {mode: copy}
        annotations: {destructiveHint: false}
        deny: ["<img src=x onerror=alert(1)> | denied"]
      - when: {mode: move}
        confirm: "Move `it` | **now**? <a href=\"https://evil.example\">x</a>"
"#;

#[test]
fn review_html_is_self_contained_semantic_and_escaped() {
    let dir = common::catalog(&[("tools.yaml", HOSTILE)]);
    let page = dir.path().join("review.html");
    let out = regent()
        .arg("review")
        .arg(dir.path())
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "-o writes the file only");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "a .html output is HTML"
    );

    // Self-contained: no script, no external resource, every link an anchor.
    for tag in [
        "<script", "<link", "<img", "<iframe", "<object", "@import", "url(",
    ] {
        assert!(!html.contains(tag), "found {tag} in the page");
    }
    for (i, _) in html.match_indices("href=\"") {
        let target = &html[i + 6..];
        assert!(
            target.starts_with('#'),
            "a link that leaves the page: {}",
            &target[..40.min(target.len())]
        );
    }
    // Escaped text holds `src=&quot;`, never `src="`.
    assert!(!html.contains(" src=\""), "nothing is loaded from anywhere");
    // The untrusted text, escaped.
    assert!(
        html.contains("Archives &lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; a | b &amp; c")
    );
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt; | denied"));
    assert!(html.contains("&lt;a href=&quot;https://evil.example&quot;&gt;x&lt;/a&gt;"));
    assert!(html.contains("Archive &lt;b&gt;now&lt;/b&gt;"));

    // Semantic tables, keyboard and print.
    for needle in [
        "<html lang=\"en\">",
        "<meta charset=\"utf-8\">",
        "<a class=\"skip\" href=\"#main\">",
        "<main id=\"main\" tabindex=\"-1\">",
        "<nav aria-label=\"Contents\">",
        "<a href=\"#tool-archive\">archive</a>",
        "<section id=\"tool-archive\"",
        "<caption>Decisions of <code>archive</code></caption>",
        "<th scope=\"col\">destructiveHint</th>",
        "<th scope=\"row\"><code>mode=&quot;copy&quot;</code></th>",
        "<td class=\"safer\">false (safer)</td>",
        "@media print",
        "<section id=\"findings\"",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    assert_eq!(
        html.matches("<table>").count(),
        html.matches("</table>").count()
    );
    assert_eq!(html.matches("<tr>").count(), html.matches("</tr>").count());
}

#[test]
fn review_markdown_escapes_untrusted_text() {
    let dir = common::catalog(&[("tools.yaml", HOSTILE)]);
    let out = regent().arg("review").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("Archives \\<script\\>alert('x')\\</script\\> a \\| b &amp; c<br>second line")
    );
    // The only HTML is regent's own line breaks; every other `<` is escaped.
    for (i, _) in md.match_indices('<') {
        assert!(
            md[i..].starts_with("<br>") || md[..i].ends_with('\\'),
            "an unescaped `<` at {}",
            &md[i..(i + 20).min(md.len())]
        );
    }
    // Every row of the table has as many unescaped pipes as its header.
    let cells = |l: &str| l.replace("\\|", "").matches('|').count();
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
    let header = cells(table[0]);
    assert!(table.len() >= 3, "{md}");
    for l in &table {
        assert_eq!(cells(l), header, "{l}");
    }
    assert!(md.contains("Move \\`it\\` \\| \\*\\*now\\*\\*?"));
}

#[test]
fn review_format_follows_the_output_name_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("review.md");
    let forced = dir.path().join("forced.html");
    let manage = common::repo_path("examples/manage_files");
    for (file, extra) in [(&md, None), (&forced, Some("markdown"))] {
        let mut cmd = regent();
        cmd.arg("review").arg(&manage).arg("-o").arg(file);
        if let Some(f) = extra {
            cmd.args(["--format", f]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(
            std::fs::read_to_string(file)
                .unwrap()
                .starts_with("# regent review")
        );
    }
    let out = regent()
        .args(["review", "--format", "html"])
        .arg(&manage)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("<!DOCTYPE html>"));
}

#[test]
fn review_of_nothing_cannot_run() {
    let out = regent()
        .args(["review", "/nonexistent/catalog"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to review"), "{err}");
    assert!(out.stdout.is_empty());
    let unwritable = regent()
        .arg("review")
        .arg(common::repo_path("examples/manage_files"))
        .args(["-o", "/nonexistent/dir/review.html"])
        .output()
        .unwrap();
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unwritable.stderr).contains("cannot write the review to"));
}

#[test]
fn review_html_of_manage_files_shows_delete_destructive_with_its_question() {
    let html = review(&["--format", "html", "examples/manage_files"]);
    let row = html
        .lines()
        .find(|l| l.starts_with("<tr><th scope=\"row\"><code>action=&quot;delete&quot;"))
        .expect("a row for delete");
    let cells: Vec<&str> = row.split("<td").skip(1).collect();
    // readOnlyHint, destructiveHint, idempotentHint, openWorldHint, deny, confirm, …
    assert_eq!(cells[1], ">true</td>", "{row}");
    assert_eq!(cells[4], "></td>", "not denied: {row}");
    assert!(
        cells[5].contains("delete &quot;x&quot; under the root directory? This cannot be undone."),
        "{row}"
    );
}
