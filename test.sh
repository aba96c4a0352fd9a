#!/usr/bin/env bash
# Runs the whole test suite: builds the binaries the end-to-end tests start, then every
# test of the workspace (unit, end-to-end, doc tests).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --workspace --bins
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
