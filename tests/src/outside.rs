//! Building a crate outside the workspace, as a plugin author builds against the sdk: the
//! compatibility and `panic = "abort"` fixtures. The callers keep their builds under the
//! target directory (`CARGO_TARGET_TMPDIR`), so only the first run pays for them.

use std::path::Path;
use std::process::{Command, Output};

/// Writes `manifest` as `dir/Cargo.toml` (it must hold an empty `[workspace]` table) with
/// the workspace's lock file beside it, so that every crate has the version the workspace
/// uses and nothing is fetched, and runs `cargo build` there with `args`.
pub fn build(dir: &Path, manifest: &str, args: &[&str]) -> Output {
    cargo(dir, manifest, "build", args)
}

/// As [`build`], with another cargo command (`test`).
pub fn cargo(dir: &Path, manifest: &str, command: &str, args: &[&str]) -> Output {
    std::fs::create_dir_all(dir).expect("crate folder");
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("manifest");
    std::fs::copy(
        crate::server::root().join("Cargo.lock"),
        dir.join("Cargo.lock"),
    )
    .expect("lock file");
    Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args([command, "--offline", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.join("target"))
        .args(args)
        .env_remove("CARGO_TARGET_DIR")
        // Line tables only, as the workspace's own debug builds: each of these crates builds
        // the sdk and abi_stable in a target directory of its own, and full debug info
        // multiplied the suite's disk use.
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .output()
        .expect("cargo")
}
