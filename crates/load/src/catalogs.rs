//! The catalogs the benchmark serves, written into a temporary directory.
//! The SEP-1862 comparison uses its own copy of the SEP's table, so that
//! changes to `examples/` (a `run:` section, a policy) never change that
//! comparison; the cells for what users run copy the shipped examples.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The SEP-1862 `manage_files` tool with the SEP's table as YAML rules: the
/// same tool, listing and answers as the TypeScript reference server.
pub const MANAGE_FILES: &str = r#"tools:
  - name: manage_files
    description: Read, append, replace, or delete file contents
    inputSchema:
      type: object
      properties:
        path: {type: string, description: File path to operate on}
        action:
          type: string
          enum: [read, append, replace, delete]
          description: Operation to perform
        content: {type: string, description: Content for append/replace operations}
      required: [path, action]
    annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false}
    resolve:
      - when: {action: read}
        annotations: {readOnlyHint: true, destructiveHint: false, idempotentHint: true}
      - when: {action: append}
        annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: false}
      - when: {action: [replace, delete]}
        annotations: {readOnlyHint: false, destructiveHint: true, idempotentHint: true}
"#;

/// A tool that runs `echo ok` (execution, issue 3): the cheapest real
/// command, so the figure is regent's cost of a call plus one fork/exec.
pub const ECHO: &str = r#"tools:
  - name: echo
    description: Print ok
    inputSchema: {type: object}
    annotations: {readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false}
    run:
      cli:
        program: echo
        args: [ok]
"#;

pub fn one_tool(root: &Path) -> io::Result<PathBuf> {
    let dir = root.join("one-tool");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("manage_files.yaml"), MANAGE_FILES)?;
    Ok(dir)
}

pub fn call(root: &Path) -> io::Result<PathBuf> {
    let dir = root.join("call");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("echo.yaml"), ECHO)?;
    Ok(dir)
}

/// Tools per generated YAML file.
const PER_FILE: usize = 100;

/// `manage_files` plus `n - 1` generated tools, each with its own Rego
/// policy package in its own file (the shape of `benches/resolve.rs`, so the
/// in-process and end-to-end figures compare).
pub fn scale(root: &Path, n: usize) -> io::Result<PathBuf> {
    let dir = root.join(format!("scale-{n}"));
    fs::create_dir_all(dir.join("policies"))?;
    fs::write(dir.join("manage_files.yaml"), MANAGE_FILES)?;
    let mut file = String::new();
    for i in 1..n {
        if file.is_empty() {
            file.push_str("tools:\n");
        }
        file.push_str(&format!(
            "  - name: tool_{i}\n    description: Generated tool {i}\n    inputSchema:\n      type: object\n      properties:\n        mode: {{type: string, enum: [get, put]}}\n    policy: gen.tool_{i}\n"
        ));
        fs::write(
            dir.join("policies").join(format!("tool_{i}.rego")),
            policy(i, 0),
        )?;
        if i % PER_FILE == 0 || i == n - 1 {
            fs::write(
                dir.join(format!("tools_{:05}.yaml", (i - 1) / PER_FILE)),
                &file,
            )?;
            file.clear();
        }
    }
    Ok(dir)
}

/// The generated policy of tool `i`; `revision` changes a comment so that a
/// rewrite is a real change for reload.
pub fn policy(i: usize, revision: usize) -> String {
    format!(
        "package gen.tool_{i}\n\nimport rego.v1\n\n# revision {revision}\nannotations := {{\"readOnlyHint\": true, \"destructiveHint\": false}} if input.arguments.mode == \"get\"\n"
    )
}

/// A copy of the shipped `examples/<name>` as it is in this checkout: what
/// users run, policy and data included. Copied so that editing the examples
/// while a run is going changes nothing it measures.
pub fn shipped(root: &Path, name: &str) -> io::Result<PathBuf> {
    let from = regent_testkit::repo_path("examples").join(name);
    let dir = root.join(format!("shipped-{name}"));
    fs::create_dir_all(&dir)?;
    for entry in fs::read_dir(&from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), dir.join(entry.file_name()))?;
        }
    }
    Ok(dir)
}
