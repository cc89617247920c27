//! The git example, run for real on a fresh repository through rmcp's client
//! in both protocol eras: read-only commands read, commit adds, reset --hard
//! and clean destroy. The repository comes from the client's roots: a model
//! cannot name it, and an option disguised as an argument never reaches git.

use crate::common;
use crate::exec_support;

use common::{Era, git, is_error, repo_path, text};
use exec_support::Start;
use serde_json::json;

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
            .roots(&[&format!("file://{}", repo.display())])
            .connect(era)
            .await;
        let call = |args: serde_json::Value| r.call("git", args);

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

        // The model cannot choose the repository: `repo` is not listed,
        // and a call that sends it is refused before anything runs.
        let listed = r.client.list_all_tools().await.unwrap();
        let schema = serde_json::to_value(&listed[0].input_schema).unwrap();
        assert!(schema["properties"].get("repo").is_none(), "{schema}");
        assert_eq!(schema["required"], json!(["command"]), "{schema}");
        let marker = tmp.path().join("pwned");
        let evil = format!("--upload-pack=touch {}", marker.display());
        let err = r
            .try_call("git", json!({"repo": evil, "command": "status"}))
            .await
            .expect_err("repo is filled by the server");
        assert!(err.to_string().contains("filled by the server"), "{err}");
        // An option disguised as another argument never reaches git either.
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
                .resolve("git", json!({"command": command, "message": "m"}))
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
        // Each of the nine calls that got past argument checks asked for
        // the roots once (2025-11-25: one roots/list during the call;
        // 2026-07-28: one input round); the refused one and the preflights
        // asked nothing.
        assert_eq!(r.roots_listed(), 9, "{era:?}");
        r.close().await;
    }
}
