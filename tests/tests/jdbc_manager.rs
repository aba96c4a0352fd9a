//! End to end: `bin/jdbcManager list | add | delete` for scripts, on a temporary INSTALL
//! with its own jdbcList, from a `file:` URL, with the checksum checked.

mod common;

use common::*;
use std::process::Command;

fn jdbc_manager(install: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(root().join("bin/jdbcManager"))
        .args(args)
        .env("WEFT_BIN", weft_bin())
        .env("WEFT_INSTALL", install)
        .output()
        .expect("jdbcManager")
}

#[test]
fn list_add_delete_for_scripts() {
    let install = tempfile::tempdir().expect("install");
    let jar = install.path().join("vendor.jar");
    std::fs::write(&jar, b"PK\x03\x04 a driver").expect("jar");
    let sum: String = {
        use sha2::Digest as _;
        sha2::Sha256::digest(std::fs::read(&jar).expect("read"))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    std::fs::write(
        install.path().join("jdbcList"),
        format!(
            "# test list\nvendor:Vendor driver:file:{}#sha256={sum}\nwrong:Wrong checksum:file:{}#sha256={}\nbroken line\n",
            jar.display(),
            jar.display(),
            "0".repeat(64)
        ),
    )
    .expect("list");
    let o = jdbc_manager(install.path(), &["list"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("(none)") && out.contains("vendor") && out.contains("wrong"),
        "{out}"
    );
    assert!(
        err.contains("jdbcList:4:"),
        "a bad line is reported with its number: {err}"
    );
    let o = jdbc_manager(install.path(), &["add", "vendor"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("100%"), "progress is shown: {err}");
    assert!(install.path().join("drivers/vendor.jar").is_file());
    let o = jdbc_manager(install.path(), &["add", "wrong"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("checksum"), "{:?}", text(&o));
    assert!(!install.path().join("drivers/wrong.jar").exists());
    let o = jdbc_manager(install.path(), &["list"]);
    assert!(
        text(&o).0.contains("vendor.jar") || text(&o).0.contains(" vendor "),
        "{:?}",
        text(&o)
    );
    let o = jdbc_manager(install.path(), &["delete", "vendor"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(!install.path().join("drivers/vendor.jar").exists());
    let o = jdbc_manager(install.path(), &["add", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("not in"), "{:?}", text(&o));
}
