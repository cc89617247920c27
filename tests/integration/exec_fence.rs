//! Path arguments fenced under a root (`paths:`, `src/fence.rs`), end to
//! end: a command-line tool that prints the file it is given, called
//! through rmcp's client against the real binary on real files. The policy
//! sees, and the program receives, the path the file system resolves: a
//! symbolic link out of the root is denied (and nothing runs), `..` and a
//! link inside are resolved, a decomposed name opens the composed file.

use crate::common;
use crate::exec_support;

use common::{Era, is_error, text};
use exec_support::Start;
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

/// A catalog whose `show` prints the file named by `path`, fenced under
/// `<tmp>/root`, and whose policy refuses names ending in `.secret`; the
/// tree: `root/sub/a.txt`, `root/café.txt` (composed), `outside/s.txt`,
/// `root/link_out -> outside`, `root/link_in -> sub`.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(root.join("sub/a.txt"), "inside a\n").unwrap();
    std::fs::write(root.join("caf\u{e9}.txt"), "composed\n").unwrap();
    std::fs::write(base.join("outside/s.txt"), "outside s\n").unwrap();
    std::fs::write(root.join("sub/x.secret"), "secret\n").unwrap();
    symlink(base.join("outside"), root.join("link_out")).unwrap();
    symlink("sub", root.join("link_in")).unwrap();
    let catalog = base.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(
        catalog.join("show.yaml"),
        format!(
            r#"tools:
  - name: show
    inputSchema:
      type: object
      properties: {{path: {{type: string}}}}
      required: [path]
    annotations: {{readOnlyHint: true, openWorldHint: false}}
    policy: tools.show
    paths: {{path: {{root: {}}}}}
    run: {{cli: {{program: cat, args: ["{{path}}"]}}}}
"#,
            root.display()
        ),
    )
    .unwrap();
    std::fs::write(
        catalog.join("show.rego"),
        "package tools.show\n\nimport rego.v1\n\ndeny contains \"secrets are not shown\" if endswith(input.arguments.path, \".secret\")\n",
    )
    .unwrap();
    (tmp, root)
}

#[tokio::test]
async fn the_policy_and_the_program_see_the_file_the_path_resolves_to() {
    for era in Era::ALL {
        let (tmp, root) = setup();
        let catalog = std::fs::canonicalize(tmp.path()).unwrap().join("catalog");
        let r = Start::new(&catalog).connect(era).await;
        let r_ = &r;
        let call = |p: String| async move { r_.call("show", json!({"path": p})).await };

        // A link out of the root: denied by regent, nothing runs.
        let res = call(format!("{}/link_out/s.txt", root.display())).await;
        assert!(is_error(&res), "{era:?}: {res}");
        let reasons = res["_meta"]["regent/decision"]["reasons"].to_string();
        assert!(
            reasons.contains("outside/s.txt, which is outside"),
            "{reasons}"
        );
        assert!(!text(&res).contains("outside s"), "{res}");

        // `..` and a link inside the root: the file itself.
        let res = call(format!("{}/sub/../link_in/a.txt", root.display())).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        assert_eq!(text(&res).trim(), "inside a");

        // The policy decides on the resolved name: a link named innocently
        // that leads to a `.secret` file is refused by the policy.
        symlink(root.join("sub/x.secret"), root.join("notes.txt")).unwrap();
        let res = call(format!("{}/notes.txt", root.display())).await;
        assert!(is_error(&res), "{era:?}: {res}");
        assert_eq!(
            res["_meta"]["regent/decision"]["reasons"],
            json!(["secrets are not shown"])
        );
        std::fs::remove_file(root.join("notes.txt")).unwrap();

        // A decomposed name opens the composed file on disk.
        let res = call(format!("{}/cafe\u{301}.txt", root.display())).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        assert_eq!(text(&res).trim(), "composed");

        // tools/resolve says the same beforehand.
        let resolved = r
            .resolve(
                "show",
                json!({"path": format!("{}/link_out/s.txt", root.display())}),
            )
            .await;
        assert_eq!(
            resolved["_meta"]["regent/decision"]["allowed"],
            json!(false)
        );
        r.close().await;
    }
}
