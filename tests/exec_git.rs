//! The git example, run for real on a fresh repository through rmcp's client
//! in both protocol eras: read-only commands read, commit adds, reset --hard
//! and clean destroy, and a repository "path" that is really an option never
//! reaches git.

mod exec_support;

use std::path::Path;
use std::process::Command;

use exec_support::{Era, Start, is_error, repo_path, text};
use serde_json::json;

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("HOME", repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git is installed");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_git_example_reads_adds_and_destroys_as_its_annotations_say() {
    for era in Era::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        git(&repo, &["add", "a.txt"]);
        let r = Start::new(&repo_path("examples/git"))
            .env("HOME", home.to_str().unwrap())
            .without("GIT_AUTHOR_NAME")
            .without("GIT_AUTHOR_EMAIL")
            .without("GIT_COMMITTER_NAME")
            .without("GIT_COMMITTER_EMAIL")
            .connect(era)
            .await;
        let repo_s = repo.to_str().unwrap();
        let call = |args: serde_json::Value| {
            let mut a = args;
            a["repo"] = json!(repo_s);
            r.call("git", a)
        };

        let res = call(json!({"command": "status"})).await;
        assert!(!is_error(&res), "{era:?}: {res}");
        assert!(text(&res).contains("A  a.txt"), "{}", text(&res));

        let res = call(json!({"command": "commit"})).await;
        assert!(is_error(&res));
        assert_eq!(
            res["_meta"]["regent/decision"]["reasons"],
            json!(["commit needs a `message`"])
        );

        let res = call(json!({"command": "commit", "message": "-first $(id)"})).await;
        assert!(!is_error(&res), "{era:?}: {}", text(&res));
        let res = call(json!({"command": "log", "limit": 5})).await;
        let log = text(&res);
        assert!(log.contains("\tregent\t-first $(id)"), "{log}");
        assert_eq!(log.lines().count(), 1, "{log}");

        std::fs::write(repo.join("a.txt"), "two\n").unwrap();
        let res = call(json!({"command": "diff", "paths": ["a.txt"]})).await;
        assert!(text(&res).contains("-one\n+two"), "{}", text(&res));
        let res = call(json!({"command": "diff", "staged": true})).await;
        assert!(text(&res).contains("printed nothing"), "{}", text(&res));

        let res = call(json!({"command": "reset_hard"})).await;
        assert!(!is_error(&res), "{}", text(&res));
        assert_eq!(
            std::fs::read_to_string(repo.join("a.txt")).unwrap(),
            "one\n"
        );

        std::fs::write(repo.join("junk.txt"), "x").unwrap();
        let res = call(json!({"command": "clean"})).await;
        assert!(!is_error(&res), "{}", text(&res));
        assert!(!repo.join("junk.txt").exists());

        // An option disguised as a repository never reaches git.
        let marker = tmp.path().join("pwned");
        let evil = format!("--upload-pack=touch {}", marker.display());
        let res = r
            .call("git", json!({"repo": evil, "command": "status"}))
            .await;
        assert!(is_error(&res));
        assert!(text(&res).contains("starts with `-`"), "{}", text(&res));
        let res = call(json!({"command": "reset_hard", "ref": "--hard"})).await;
        assert!(is_error(&res));
        assert!(text(&res).contains("argument `ref`"), "{}", text(&res));
        assert!(!marker.exists());

        // What the annotations promised, per command.
        for (command, read_only, destructive) in [
            ("status", true, false),
            ("commit", false, false),
            ("reset_hard", false, true),
            ("clean", false, true),
        ] {
            let resolved = r
                .resolve(
                    "git",
                    json!({"repo": repo_s, "command": command, "message": "m"}),
                )
                .await;
            assert_eq!(
                resolved["annotations"]["readOnlyHint"],
                json!(read_only),
                "{command}"
            );
            assert_eq!(
                resolved["annotations"]["destructiveHint"],
                json!(destructive),
                "{command}"
            );
        }
        r.close().await;
    }
}
