#!/usr/bin/env bash
# Runs the whole test suite: builds the binary and the plugin libraries the tests load, installs the
# reference HJSON reader (hjson-js, from npm) for the differential test if it is missing,
# then runs every test of the workspace (unit, end-to-end, doc tests).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d target/hjson-js/node_modules/hjson ]; then
  npm install --prefix target/hjson-js --no-audit --no-fund --silent hjson@3.2.2
fi
cargo build --workspace
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
