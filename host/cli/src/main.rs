//! The `weft` binary: the command line of [`weft_cli`], on mimalloc.

use clap::Parser as _;
use std::process::ExitCode;

// mimalloc: batches of rows are allocated on one thread and freed on another by the million,
// where it is markedly faster than the system allocator (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    weft_cli::Cli::parse().run()
}
