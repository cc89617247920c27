//! The conformance suite's upstream MCP server over stdio
//! ([`regent_testkit::suite`]), which `.ci/conformance` builds and the
//! conformance fixture (tests/conformance/tools/suite_upstream.yaml) runs
//! behind regent.

fn main() {
    regent_testkit::suite::serve(std::io::stdin().lock(), std::io::stdout());
}
