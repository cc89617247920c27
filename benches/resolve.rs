//! In-process resolution cost: `Catalog::resolve` for `manage_files` with the
//! catalog holding 1 tool and 1,000 tools (each extra tool with its own Rego
//! policy). Criterion reports means; a second pass records every call and
//! prints p50/p99, the numbers the README quotes.
//!
//!     cargo bench --bench resolve

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use serde_json::json;

use regent::catalog::{self, BuildOptions, Catalog};
use regent::source::Source;

/// A catalog of `n` tools: manage_files plus `n - 1` generated tools, each
/// with its own policy package.
fn catalog(n: usize) -> (tempfile::TempDir, Catalog) {
    // The tool and its policy (whose `deny` rule guards the root directory).
    let example = regent_testkit::repo_path("examples/manage_files");
    let mut files: Vec<(String, String)> = ["manage_files.yaml", "manage_files.rego"]
        .into_iter()
        .map(|f| {
            let content = std::fs::read_to_string(example.join(f)).expect("read example");
            (f.to_string(), content)
        })
        .collect();
    for i in 1..n {
        files.push((
            format!("t{i}.yaml"),
            format!(
                "tools:\n  - name: tool_{i}\n    inputSchema:\n      type: object\n      properties:\n        mode: {{type: string, enum: [get, put]}}\n    policy: gen.tool_{i}\n"
            ),
        ));
        files.push((
            format!("t{i}.rego"),
            format!(
                "package gen.tool_{i}\n\nimport rego.v1\n\nannotations := {{\"readOnlyHint\": true, \"destructiveHint\": false}} if input.arguments.mode == \"get\"\n"
            ),
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (&**n, &**c)).collect();
    let dir = regent_testkit::catalog(&files);
    let source = Source::load(&[dir.path().to_path_buf()]).expect("load");
    let catalog = catalog::build(&source, &BuildOptions::default()).expect("build");
    (dir, catalog)
}

fn bench(c: &mut Criterion) {
    let args = json!({"path": "notes.txt", "action": "read"});
    for n in [1usize, 1000] {
        let (_dir, cat) = catalog(n);
        c.bench_function(&format!("resolve manage_files read, {n} tools"), |b| {
            b.iter(|| {
                black_box(
                    cat.resolve("manage_files", black_box(&args))
                        .expect("resolve")
                        .hints,
                )
            })
        });
    }
}

/// p50/p99 over 100,000 calls after 10,000 warm-up calls. The arguments
/// differ from call to call as a client's do (a path per call, the four
/// actions in turn, so half of them build the policy's `confirm` message),
/// made before the clock starts.
fn percentiles() {
    let actions = ["read", "append", "replace", "delete"];
    let args: Vec<_> = (0..1000)
        .map(|i| {
            let action = actions[i % 4];
            let mut a = json!({"path": format!("notes/{i}/file{i}.txt"), "action": action});
            if matches!(action, "append" | "replace") {
                a["content"] = json!("x\n");
            }
            a
        })
        .collect();
    println!("\n| catalog | p50 | p90 | p99 | p99.9 |\n| --- | --- | --- | --- | --- |");
    for n in [1usize, 1000] {
        let (_dir, cat) = catalog(n);
        for i in 0..10_000 {
            black_box(
                cat.resolve("manage_files", &args[i % args.len()])
                    .expect("resolve"),
            );
        }
        let mut times = Vec::with_capacity(100_000);
        for i in 0..100_000 {
            let a = &args[i % args.len()];
            let t = Instant::now();
            black_box(cat.resolve("manage_files", black_box(a)).expect("resolve"));
            times.push(t.elapsed().as_nanos() as f64 / 1000.0);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let p = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
        println!(
            "| {n} tool{} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
            if n == 1 { "" } else { "s" },
            p(0.50),
            p(0.90),
            p(0.99),
            p(0.999)
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    percentiles();
}
