#!/usr/bin/env bash
# Runs the whole test suite on a machine with only Rust: installs what the tests need when it
# is missing (tests/install-needs.sh: Node.js, a JDK, PostgreSQL, the Debian JDBC jars...) and
# the reference HJSON reader (hjson-js, from npm) for the differential test and the LSP client
# (vscode-languageserver-protocol) for the language server's, builds the binary
# and the plugin libraries the tests load, then runs every test of the workspace (unit,
# end-to-end, doc tests). Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")"
tests/install-needs.sh
if [ ! -d target/hjson-js/node_modules/hjson ]; then
  npm install --prefix target/hjson-js --no-audit --no-fund --silent hjson@3.2.2
fi
# TypeScript, which checks the web page's JSDoc types (tests/tests/suite/page_code.rs); the
# page itself is served as written, without a build.
if [ ! -x target/typescript/node_modules/.bin/tsc ]; then
  npm install --prefix target/typescript --no-audit --no-fund --silent typescript@5.9.3
fi
# axe-core, which the browser tests run on every view of the page (WCAG 2.1 AA).
if [ ! -f target/axe-core/node_modules/axe-core/axe.min.js ]; then
  npm install --prefix target/axe-core --no-audit --no-fund --silent axe-core@4.10.3
fi
# The LSP client the `lsp` tests drive `weft lsp` with (Microsoft's, as VS Code uses).
if [ ! -d target/lsp-client/node_modules/vscode-languageserver-protocol ]; then
  npm install --prefix target/lsp-client --no-audit --no-fund --silent vscode-languageserver-protocol@3.17.5
fi
# --all-targets: the features of the test build (dev-dependencies unified), so that the
# binary and plugins the tests load are built once, not once per feature set.
cargo build --workspace --all-targets
cargo test --workspace --all-targets "$@"
# The end-to-end tests of deploys, runs, the scheduler and the lifecycle (delete, project
# deploys) once more with the repository on
# PostgreSQL (the test library starts a server and gives each home a database of its own).
WEFT_TEST_REPOSITORY=postgresql cargo test -p weft_tests --test suite "$@" -- deploy:: runs:: run_history:: scheduler:: lifecycle:: notifications:: retries:: names:: template_modules:: security::
# The sdk's fakes for plugin authors (feature `testing`, which no workspace member turns on:
# it links SQLite, which the plugin libraries the tests load must not).
cargo test -p weft_sdk --features testing --all-targets "$@"
cargo test -p weft_sdk --features testing --doc
cargo test --workspace --doc
