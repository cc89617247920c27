//! `regent review`: golden Markdown of the shipped examples (rewritten with
//! `REGENT_BLESS=1`), the HTML page's structure (self-contained, semantic
//! tables, keyboard and print affordances) and the escaping of untrusted
//! text in both formats. The page in a headless browser (console, keyboard,
//! print, axe-core) is tests/browser/review.mjs, run by .ci/run.

use crate::common::{self, git, regent};

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
    // Other values of a class the test cases use: denied where the
    // representative is not, each with its arguments.
    let read = md
        .lines()
        .find(|l| l.starts_with("| action=\"read\""))
        .expect("a row for read");
    assert!(
        read.contains("*for content absent, path=\"../../etc/passwd\":* path \"../../etc/passwd\" leaves the root directory"),
        "{read}"
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
        "<caption id=\"tool-archive-c\">Decisions of <code>archive</code></caption>",
        "<div class=\"table-wrap\" role=\"region\" aria-labelledby=\"tool-archive-c\" tabindex=\"0\">",
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
    // The representative is not denied; the test case's absolute path of
    // the same class is, and says so with its arguments.
    assert_eq!(
        cells[4],
        "><em>for <code>content absent, path=&quot;/etc/passwd&quot;</code>:</em> path &quot;/etc/passwd&quot; is absolute; paths are relative to the root directory</td>",
        "{row}"
    );
    assert!(
        cells[5].contains("delete &quot;x&quot; under the root directory? This cannot be undone."),
        "{row}"
    );
}

#[test]
fn review_team_ops_labels_a_caller_the_caller_schema_refuses_as_such() {
    let md = review(&["--max-bytes", "1048576", "examples/team_ops"]);
    let mallory: Vec<&str> = md.lines().filter(|l| l.contains("| mallory ")).collect();
    assert!(!mallory.is_empty(), "{md}");
    for l in mallory {
        assert!(
            l.contains("refused: the caller's claims do not match the declared caller schema"),
            "{l}"
        );
        assert!(!l.contains("policy fails"), "{l}");
    }
}

#[test]
fn review_base_leads_with_what_changed_and_is_golden() {
    let md = review(&[
        "--base",
        "examples/manage_files",
        "tests/review/manage_files-changed",
    ]);
    golden("manage_files.base.md", &md);
    assert!(md.starts_with("# regent review: what changed"));
    let at = |needle: &str| md.find(needle).unwrap_or_else(|| panic!("{needle}: {md}"));
    // What changed comes before any table; less safe before safer.
    assert!(at("## What changed") < at("## manage\\_files"));
    assert!(at("### Less safe") < at("### Safer"));
    assert!(at("### Safer") < at("### Other changes"));
    let less = &md[at("### Less safe")..at("### Safer")];
    assert!(less.contains(
        "| manage\\_files | action=\"delete\", path=\"x\" | **no longer asks to confirm"
    ));
    assert!(less.contains(
        "| manage\\_files | action=\"read\", path=\"x\" | **openWorldHint false → true** (less safe)"
    ));
    assert!(
        md[at("### Safer")..]
            .contains("now denied: “append is disabled during the freeze” *(safer)*")
    );
    assert!(md[at("### Tools added")..].starts_with("### Tools added\n\n- search\\_files"));
    assert!(
        md[at("### Listings changed")..]
            .contains("| manage\\_files | **openWorldHint false → true** (less safe) |")
    );
    // The head's rows are marked in words; the base's table is kept.
    assert!(md.contains("| **less safe** | action=\"delete\""));
    assert!(md.contains("<details><summary>1 table of examples/manage\\_files</summary>"));

    // Against itself: nothing changed, every tool collapsed to a count.
    let same = review(&["--base", "examples/manage_files", "examples/manage_files"]);
    assert!(same.contains(
        "Nothing: every tool is listed and decides every class as in examples/manage\\_files."
    ));
    assert!(same.contains("- 1 tool unchanged, not shown"));
    assert!(!same.contains("## manage\\_files"), "{same}");
}

#[test]
fn review_base_over_the_limit_keeps_what_changed() {
    let md = review(&[
        "--max-bytes",
        "3000",
        "--base",
        "examples/manage_files",
        "tests/review/manage_files-changed",
    ]);
    assert!(md.len() <= 3000, "{} bytes", md.len());
    assert!(md.contains("**Summary only**"));
    assert!(md.contains("### Less safe"));
    assert!(!md.contains("## manage\\_files\n"));
    assert!(md.contains("## Findings of regent check"));
}

#[test]
fn review_base_html_marks_changes_in_words() {
    let html = review(&[
        "--format",
        "html",
        "--base",
        "examples/manage_files",
        "tests/review/manage_files-changed",
    ]);
    for needle in [
        "<h1>regent review: what changed</h1>",
        "<section id=\"changes\"",
        "<caption>Less safe</caption>",
        "<strong class=\"less-safe\">openWorldHint false → true (less safe)</strong>",
        "<th scope=\"col\">change</th>",
        "<tr class=\"changed\"><td class=\"less-safe\"><strong>less safe</strong></td><th scope=\"row\"><code>action=&quot;delete&quot;",
        "<tr class=\"changed\"><td>safer</td><th scope=\"row\"><code>action=&quot;append&quot;",
        "<a href=\"#tool-search_files\"><code>search_files</code></a>",
        "<section id=\"before\"",
        "<section id=\"base-manage_files\"",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    // Every anchor linked to is on the page.
    for (i, _) in html.match_indices("href=\"#") {
        let target = &html[i + 7..];
        let target = &target[..target.find('"').unwrap()];
        assert!(
            html.contains(&format!("id=\"{target}\"")),
            "a link to #{target}, which is not on the page"
        );
    }
}

/// Copies the files of the repository's directory `from` into `to`.
fn copy_catalog(from: &str, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["manage_files.yaml", "manage_files.rego"] {
        std::fs::copy(common::repo_path(from).join(name), to.join(name)).unwrap();
    }
}

/// `regent review ARGS…` in `dir`, with temporary files under `tmp`.
fn review_in(dir: &std::path::Path, tmp: &std::path::Path, args: &[&str]) -> std::process::Output {
    regent()
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .args(["review", "--policy-timeout-ms", "60000"])
        .args(args)
        .output()
        .expect("the regent binary runs")
}

#[test]
fn review_base_reads_the_catalog_at_a_git_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "a catalog\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "no catalog yet"]);
    copy_catalog("examples/manage_files", &repo.join("catalog"));
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "the catalog"]);
    let first = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    copy_catalog("tests/review/manage_files-changed", &repo.join("catalog"));
    git(&repo, &["commit", "-q", "-a", "-m", "the change"]);

    // The previous commit, by name and by id, from the top and from below it.
    for (dir, path, base) in [
        (repo.clone(), "catalog", "HEAD~1"),
        (repo.join("catalog"), ".", first.as_str()),
    ] {
        let out = review_in(&dir, &scratch, &["--base", base, path]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let md = String::from_utf8(out.stdout).unwrap();
        let shown = markdown_text(base);
        assert!(
            md.contains(&format!("Base: {shown} (git revision {})", &first[..12])),
            "{md}"
        );
        // The base's files are named as git names them at the revision.
        assert!(
            md.contains(&format!("(`{shown}:catalog/manage\\_files.yaml:7:5`)")),
            "{md}"
        );
        assert!(md.contains(
            "| manage\\_files | action=\"delete\", path=\"x\" | **no longer asks to confirm"
        ));
        assert!(md.contains("- search\\_files (its table is below)"));
        // The revision's files were written to a temporary directory, removed.
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    }

    // Uncommitted changes are the head; the base is the commit.
    std::fs::write(
        repo.join("catalog/manage_files.rego"),
        std::fs::read_to_string(common::repo_path("examples/manage_files/manage_files.rego"))
            .unwrap(),
    )
    .unwrap();
    let out = review_in(&repo, &scratch, &["--base", "HEAD", "catalog"]);
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("now asks to confirm: “delete"), "{md}");
}

/// `s` as the Markdown renderer escapes it (enough for revisions).
fn markdown_text(s: &str) -> String {
    s.replace('~', "\\~").replace('_', "\\_")
}

#[test]
fn review_base_refuses_what_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "a catalog\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "no catalog yet"]);
    copy_catalog("examples/manage_files", &repo.join("catalog"));
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "the catalog"]);

    let refused = |dir: &std::path::Path, args: &[&str], needle: &str| {
        let out = review_in(dir, &scratch, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("help:"), "{args:?}: {err}");
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    };
    refused(
        &repo,
        &["--base", "no-such-branch", "catalog"],
        "error: --base `no-such-branch` is neither a path nor a revision of the git repository at",
    );
    refused(
        &repo,
        &["--base", "HEAD~1", "catalog"],
        "error: catalog did not exist at HEAD~1 (commit",
    );
    // A directory named like a branch: refused, as git refuses it.
    std::fs::create_dir_all(repo.join("main")).unwrap();
    refused(
        &repo,
        &["--base", "main", "catalog"],
        "error: --base `main` names both a path and a git revision",
    );
    // `./main` is the path (an empty directory: no catalog in it).
    refused(
        &repo,
        &["--base", "./main", "catalog"],
        "error: the base (./main) has no catalog to review",
    );
    // Outside any repository, a name that is no path cannot be a revision.
    let lone = tmp.path().join("lone");
    copy_catalog("examples/manage_files", &lone);
    // (git looks no higher than the temporary directory, wherever it is.)
    let out = regent()
        .current_dir(&lone)
        .env("TMPDIR", &scratch)
        .env("GIT_CEILING_DIRECTORIES", tmp.path())
        .args(["review", "--base", "HEAD~1", "."])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: --base `HEAD~1` is not a path, and it cannot be a git revision: . is not in a git repository"),
        "{err}"
    );
}

#[test]
fn review_base_reads_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("base.tar.gz");
    let out = regent()
        .args(["bundle", "build"])
        .arg(common::repo_path("examples/manage_files"))
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = review(&[
        "--base",
        bundle.to_str().unwrap(),
        "tests/review/manage_files-changed",
    ]);
    assert!(md.contains("base.tar.gz:manage\\_files.yaml:7:5"), "{md}");
    assert!(md.contains("**no longer asks to confirm"));
}

/// The `run:` block of the step named `name` in the workflow of
/// docs/review.md, dedented: the test runs what the docs say.
fn recipe_step(name: &str) -> String {
    let doc = std::fs::read_to_string(common::repo_path("docs/review.md")).unwrap();
    let start = doc
        .find(&format!("- name: {name}"))
        .unwrap_or_else(|| panic!("docs/review.md has no step {name:?}"));
    let block = &doc[start..];
    let run = block.find("run: |\n").expect("a run block") + "run: |\n".len();
    let mut lines = Vec::new();
    let mut indent = None;
    for line in block[run..].lines() {
        let n = line.len() - line.trim_start().len();
        let i = *indent.get_or_insert(n);
        if line.trim().is_empty() || n < i {
            break;
        }
        lines.push(&line[i..]);
    }
    lines.join("\n") + "\n"
}

#[test]
fn review_ci_recipe_commands_run_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin.git");
    let work = tmp.path().join("work");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::create_dir_all(&origin).unwrap();
    git(&origin, &["init", "-q", "--bare", "-b", "main"]);
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    git(&work, &["checkout", "-q", "-b", "main"]);
    copy_catalog("examples/manage_files", &work.join("catalog"));
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "the catalog"]);
    git(&work, &["push", "-q", "origin", "main"]);
    // The pull request's branch, as actions/checkout leaves it with
    // fetch-depth: 0 (the base branch's history under origin/).
    git(&work, &["checkout", "-q", "-b", "change"]);
    copy_catalog("tests/review/manage_files-changed", &work.join("catalog"));
    git(&work, &["commit", "-q", "-a", "-m", "the change"]);
    git(&work, &["fetch", "-q", "origin"]);

    let script = recipe_step("Review against the base branch");
    assert!(
        script.contains("regent review --base \"$BASE\" catalog/"),
        "{script}"
    );
    let summary = tmp.path().join("summary.md");
    let bin = common::binary().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .args(["-eu", "-c", &script])
        .current_dir(&work)
        .env("PATH", path)
        .env("TMPDIR", &scratch)
        .env("NO_COLOR", "1")
        .env("BASE", "origin/main")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(work.join("review.md")).unwrap();
    assert!(md.starts_with("# regent review: what changed"), "{md}");
    assert!(md.contains("Base: origin/main (git revision"));
    assert!(md.contains(
        "| manage\\_files | action=\"delete\", path=\"x\" | **no longer asks to confirm"
    ));
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), md);
    let html = std::fs::read_to_string(work.join("review.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<strong>less safe</strong>"));
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}
