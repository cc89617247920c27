//! A differential test of the native evaluator against regorus, on every
//! catalog the repository ships.
//!
//! In a debug build, `policy::EnginePool::eval` recomputes each answer of
//! `native` with regorus and panics when the two differ
//! (`agrees_with_regorus`). So driving many arguments through the real
//! request path, [`Catalog::resolve_as`], compares the two evaluators on
//! each of them. A difference would be a policy bypass: a call one
//! evaluator denies and the other allows, or a different confirmation
//! question or hint. The arguments are generated from each tool's
//! inputSchema (so that most pass validation and reach the policy), with
//! strings drawn from a hostile alphabet (path separators, `..`, format
//! verbs, quotes, escapes, control and non-ASCII characters), the constants
//! the rules compare arguments with, and now and then a value of the wrong
//! type, an invalid enum value, a missing key or an extra one. A small
//! fixed-seed PRNG keeps every run the same; errors (invalid arguments, a
//! failing policy) are expected answers, and only a panic fails the test.
//!
//! This file runs the shipped catalogs; `generate` makes the arguments and
//! callers (also for `opa_catalogs` and the builtins' tests), `untyped`
//! runs policies written for it on untyped arguments.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::analysis::exercise;
use crate::catalog::{BuildOptions, Catalog, ResolveError, build};
use crate::policy::engine::compared;
use crate::source::Source;

mod generate;
mod untyped;

pub(crate) use generate::Rng;
pub(super) use generate::{Seeds, arguments, caller};

/// Generated arguments per native tool.
const PER_TOOL: usize = 2_000;

/// Generated callers per tool with a `visible` rule.
const VISIBLE_CALLERS: usize = 500;

/// Every directory under `examples/` and `tests/cases/`.
pub(super) fn shipped_catalogs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = Vec::new();
    for parent in ["examples", "tests/cases"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

/// The catalog in `dir`, with its upstreams' pinned tool lists imported as
/// `check` and `test` do; `None` when it does not load or build.
pub(super) fn load(dir: &Path) -> Option<Catalog> {
    let mut source = Source::load(&[dir.to_path_buf()]).ok()?;
    if source.import_pinned().has_errors() {
        return None;
    }
    build(&source, &BuildOptions::default()).ok()
}

#[test]
fn native_answers_equal_regorus_on_hostile_arguments() {
    let started = Instant::now();
    let mut rng = Rng(0x5eed_0f7e_57ab_u64);
    let (mut catalogs, mut skipped, mut tools) = (0, 0, 0);
    let (mut inputs, mut reached, mut answered, mut visible) = (0, 0, 0, 0);
    let mut native_tools = Vec::new();
    for dir in shipped_catalogs() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let Some(catalog) = load(&dir) else {
            skipped += 1;
            eprintln!("skipped {name}: does not load or build");
            continue;
        };
        catalogs += 1;
        for t in catalog.tools() {
            if t.is_resolvable() && !t.is_native() {
                eprintln!("{name}/{}: not native, not compared", t.name);
            }
        }
        // A `visible` rule is evaluated per caller, for listing, through the
        // same pool: compare it on hostile callers too.
        for tool in catalog.tools().iter().filter(|t| t.has_visible_rule()) {
            let before = compared();
            let seeds = Seeds::empty();
            for _ in 0..VISIBLE_CALLERS {
                let who = caller(&mut rng, &seeds);
                let _ = tool.visibility(who.as_ref());
            }
            let native = compared() - before;
            eprintln!(
                "{name}/{} visible: {native} of {VISIBLE_CALLERS} callers answered natively",
                tool.name
            );
            visible += native;
        }
        for tool in catalog.tools().iter().filter(|t| t.is_native()) {
            tools += 1;
            native_tools.push(format!("{name}/{}", tool.name));
            let seeds = Seeds::of(tool);
            let samples = exercise::samples(tool);
            let mut valid = 0;
            let compared_before = compared();
            for i in 0..PER_TOOL {
                let args = arguments(&mut rng, &seeds, tool, &samples, i);
                let who = caller(&mut rng, &seeds);
                inputs += 1;
                // Any answer will do, errors included: the comparison with
                // regorus happens inside, and panics on a difference.
                match catalog.resolve_as(&tool.name, &args, who.as_ref()) {
                    Err(ResolveError::InvalidArguments { .. }) => {}
                    _ => valid += 1,
                }
            }
            reached += valid;
            let native = compared() - compared_before;
            eprintln!(
                "{name}/{}: {valid} of {PER_TOOL} arguments passed validation, \
                 {native} answered natively and compared",
                tool.name
            );
            assert!(native > 0, "{name}/{}: nothing was compared", tool.name);
            answered += native;
        }
    }
    eprintln!(
        "{catalogs} catalogs ({skipped} skipped), {tools} native tools, {inputs} arguments, \
         {reached} passed validation, {answered} answered natively and compared, \
         {visible} visible verdicts compared, in {:?}",
        started.elapsed()
    );
    // The last three import a library package and call its functions
    // (`import data.root`, `root.inside(p)`) or read its rules.
    for t in [
        "manage_files/manage_files",
        "github_api/github_api",
        "filesystem/read_text_file",
        "filesystem/read_media_file",
        "filesystem/read_multiple_files",
        "filesystem/list_directory",
        "filesystem/directory_tree",
        "filesystem/search_files",
        "filesystem/get_file_info",
        "filesystem/write_file",
        "filesystem/create_directory",
        "filesystem/edit_file",
        "filesystem/move_file",
        "git_server/git_status",
        "git_server/git_diff_unstaged",
        "git_server/git_diff_staged",
        "git_server/git_diff",
        "git_server/git_log",
        "git_server/git_show",
        "git_server/git_branch",
        "git_server/git_add",
        "git_server/git_commit",
        "git_server/git_reset",
        "git_server/git_create_branch",
        "git_server/git_checkout",
        "team_ops/deploy",
        "team_ops/rollback",
    ] {
        assert!(
            native_tools.iter().any(|n| n == t),
            "{t} was not exercised natively: {native_tools:?}"
        );
    }
    assert!(
        answered * 2 > inputs,
        "most arguments should be answered natively: {answered} of {inputs}"
    );
}
