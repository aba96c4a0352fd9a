//! `weft fmt` with the real binary: a project's files rewritten in the canonical form with
//! their comments, a file that does not read left byte for byte and named at its line,
//! `--check` for CI, standard input for editors, and examples/jaffle_shop already canonical.

use crate::common;

use common::*;

/// `weft fmt ARGS` (with `stdin` on standard input): exit code, stdout, stderr.
fn fmt(args: &[&str], stdin: Option<&str>) -> (Option<i32>, String, String) {
    use std::io::Write as _;
    let mut child = std::process::Command::new(weft_bin())
        .arg("fmt")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weft fmt");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("write stdin");
    drop(input);
    let o = child.wait_with_output().expect("weft fmt");
    let (out, err) = text(&o);
    (o.status.code(), out, err)
}

const MESSY: &str = "# loads\n{version: 1, transformationData: {\n  folders: [\n    {path: \"/f\"}   # the folder\n\n\n  ]\n  sheets: [{id: 5, attributes: {name: \"load\", folder: \"/f\", connection: \"c\"}, nodes: []}]\n}}\n";

const CANONICAL: &str = "# loads\n{\n  version: 1\n  transformationData: {\n    folders: [\n      { path: \"/f\" } # the folder\n    ]\n    sheets: [{ id: 5, attributes: { name: \"load\", folder: \"/f\", connection: \"c\" }, nodes: [] }]\n  }\n}\n";

#[test]
fn a_project_is_rewritten_in_the_canonical_form_and_a_broken_file_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join(".hidden")).expect("mkdir");
    let messy = dir.path().join("sub/load.dsr");
    let broken = dir.path().join("broken.dsr");
    let hidden = dir.path().join(".hidden/x.dsr");
    let broken_text =
        "{\n  version: 1\n  transformationData: {\n    folders: [{ path: /f }]\n  }\n}\n";
    std::fs::write(&messy, MESSY).expect("write");
    std::fs::write(&broken, broken_text).expect("write");
    std::fs::write(&hidden, MESSY).expect("write");
    let d = dir.path().to_str().expect("path");

    // --check writes nothing and fails.
    let (code, out, err) = fmt(&["--check", d], None);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("sub/load.dsr: not in the canonical form"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&messy).expect("read"), MESSY);

    let (code, out, err) = fmt(&[d], None);
    assert_eq!(
        code,
        Some(1),
        "a file that does not read fails the run: {out}{err}"
    );
    assert_eq!(std::fs::read_to_string(&messy).expect("read"), CANONICAL);
    assert_eq!(
        std::fs::read_to_string(&broken).expect("read"),
        broken_text,
        "left byte for byte"
    );
    assert_eq!(
        std::fs::read_to_string(&hidden).expect("read"),
        MESSY,
        "hidden skipped"
    );
    assert!(
        err.contains("broken.dsr:4:23: the value of `path`, `/f }]`, has no quotes"),
        "{err}"
    );
    assert!(
        out.contains("1 file(s) formatted, 0 unchanged, 1 unreadable"),
        "{out}"
    );
    // No temporary file stays behind.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");

    // A file reached through a symbolic link: the link stays, its target is formatted.
    let target = dir.path().join("sub/shared.txt");
    std::fs::write(&target, MESSY).expect("write");
    let link = dir.path().join("sub/linked.dsr");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let (code, out, err) = fmt(&[link.to_str().expect("path")], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).expect("read"), CANONICAL);
    std::fs::remove_file(&link).expect("rm");
    std::fs::remove_file(&target).expect("rm");

    // Once fixed, a second run changes nothing, and --check passes.
    std::fs::remove_file(&broken).expect("rm");
    let (code, out, err) = fmt(&[d], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("0 file(s) formatted, 1 unchanged"), "{out}");
    assert_eq!(fmt(&["--check", d], None).0, Some(0));
}

#[test]
fn standard_input_is_formatted_to_standard_output() {
    let (code, out, err) = fmt(&["-"], Some(MESSY));
    assert_eq!((code, out.as_str()), (Some(0), CANONICAL), "{err}");
    assert_eq!(fmt(&["--check", "-"], Some(MESSY)).0, Some(1));
    assert_eq!(fmt(&["--check", "-"], Some(CANONICAL)).0, Some(0));
    let (code, _, err) = fmt(&["-"], Some("{ a: [1, 2 }"));
    assert_eq!(code, Some(1));
    assert!(err.starts_with("<stdin>:1:"), "{err}");
    let (code, _, err) = fmt(&["-", "x.dsr"], None);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = fmt(&["/nonexistent/weft/x.dsr"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot read /nonexistent/weft/x.dsr"), "{err}");
}

/// The project kept as a team keeps one in git is in the form; the quickstart and the other
/// examples keep HJSON as people write it by hand (quoteless strings), which they show.
#[test]
fn the_jaffle_shop_project_is_in_the_canonical_form() {
    let project = root().join("examples/jaffle_shop");
    let (code, out, err) = fmt(&["--check", project.to_str().expect("path")], None);
    assert_eq!(
        code,
        Some(0),
        "run `weft fmt examples/jaffle_shop`: {out}{err}"
    );
}
