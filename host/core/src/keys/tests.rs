//! Tests of the key file: format, escapes, permissions, first-start entries.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn reads_entries_with_escapes_comments_and_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(
        &path,
        "# comment\n\n0|sqlite|/data/a\\|b.db|||\n7|jdbc|jdbc:postgresql://h/db|etl|pa\\\\ss\\|word|driver=org.postgresql.Driver;fetch=500\n",
        0o600,
    );
    let kf = KeyFile::load(&path).expect("loads");
    assert_eq!(kf.require("0").expect("entry 0").url, "/data/a|b.db");
    let e = kf.require("7").expect("entry 7");
    assert_eq!(e.password, "pa\\ss|word");
    assert_eq!(e.option("driver"), Some("org.postgresql.Driver"));
    assert_eq!(e.option("fetch"), Some("500"));
    assert_eq!(kf.secrets(), vec!["pa\\ss|word".to_owned()]);
    // Writing gives back the same entries.
    let line = e.to_line();
    assert_eq!(
        line,
        "7|jdbc|jdbc:postgresql://h/db|etl|pa\\\\ss\\|word|driver=org.postgresql.Driver;fetch=500"
    );
    let missing = kf.require("nope").expect_err("missing");
    assert!(missing.to_string().contains("no entry `nope`"));
}

#[test]
fn refuses_a_file_others_can_read_and_says_how_to_fix_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(&path, "0|sqlite|/x|||\n", 0o644);
    let e = KeyFile::load(&path).expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("0644") && msg.contains(&format!("chmod 600 {}", path.display())),
        "{msg}"
    );
}

#[test]
fn bad_lines_name_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(&path, "# c\n0|sqlite|/x||\n", 0o600);
    let msg = KeyFile::load(&path).expect_err("bad").to_string();
    assert!(msg.contains("line 2") && msg.contains("6 fields"), "{msg}");
    write(&path, "0|sqlite|/x|||driver=x;s3cret\n", 0o600);
    let msg = KeyFile::load(&path).expect_err("bad option").to_string();
    assert!(msg.contains("line 1") && msg.contains("option 2"), "{msg}");
    assert!(!msg.contains("s3cret"), "a secret in an error: {msg}");
}

#[test]
fn first_start_writes_the_repository_and_server_entries_with_mode_0600() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repository.db");
    let kf = KeyFile::init(dir.path(), &repo, "http://127.0.0.1:17491/weft/service").expect("init");
    let path = KeyFile::path_in(dir.path());
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let e0 = kf.require("0").expect("entry 0");
    assert_eq!(
        (e0.kind.as_str(), e0.url.as_str()),
        ("sqlite", repo.to_str().expect("utf8"))
    );
    assert_eq!(
        kf.require(SERVER_KEY).expect("server").url,
        "http://127.0.0.1:17491/weft/service"
    );
    // A later start on another port updates the URL and keeps options and other lines.
    let mut kf = KeyFile::load(&path).expect("load");
    let mut e = kf.require(SERVER_KEY).expect("server").clone();
    e.options.push(("token".into(), "abc".into()));
    kf.set(e);
    kf.save().expect("save");
    let kf =
        KeyFile::init(dir.path(), &repo, "http://127.0.0.1:9999/weft/service").expect("init again");
    let e = kf.require(SERVER_KEY).expect("server");
    assert_eq!(e.url, "http://127.0.0.1:9999/weft/service");
    assert_eq!(e.option("token"), Some("abc"));
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .starts_with("# weft key file")
    );
}

#[test]
fn saving_makes_the_file_private_even_over_a_loose_leftover() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(&path.with_extension("tmp"), "junk", 0o644);
    write(&path, "0|sqlite|/x|||\n", 0o600);
    KeyFile::load(&path).expect("load").save().expect("save");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_store_rereads_a_changed_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(&path, "weft_server|http|u|||token=one\n", 0o600);
    let store = KeyStore::new(path.clone(), KeyFile::load(&path).expect("load"));
    assert_eq!(
        store
            .current()
            .expect("current")
            .require(SERVER_KEY)
            .expect("e")
            .option("token"),
        Some("one")
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&path, "weft_server|http|u|||token=two\n", 0o600);
    // Make sure the modification time moves even on coarse clocks.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open")
        .set_modified(later)
        .expect("touch");
    assert_eq!(
        store
            .current()
            .expect("current")
            .require(SERVER_KEY)
            .expect("e")
            .option("token"),
        Some("two")
    );
}

#[test]
fn tokens_are_random_hex() {
    let a = new_token().expect("token");
    let b = new_token().expect("token");
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

#[test]
fn an_entry_given_twice_is_refused_with_both_lines_and_the_server_keeps_the_last_good_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("keyfile");
    write(&path, "0|sqlite|/a.db|||\n1|sqlite|/one.db|||\n", 0o600);
    let store = KeyStore::new(path.clone(), KeyFile::load(&path).expect("good"));
    write(
        &path,
        "0|sqlite|/a.db|||\n1|sqlite|/one.db|||\n# later\n1|sqlite|/other.db|||\n",
        0o600,
    );
    let e = KeyFile::load(&path).expect_err("twice");
    let msg = e.to_string();
    assert!(
        msg.contains("line 4") && msg.contains("lines 2 and 4") && msg.contains("`1`"),
        "{msg}"
    );
    // The changed file is wrong: the last good one stays in force.
    let now = store.current().expect("the last good key file");
    assert_eq!(now.require("1").expect("entry 1").url, "/one.db");
    // Once fixed, the new one is read.
    write(&path, "0|sqlite|/a.db|||\n1|sqlite|/other.db|||\n", 0o600);
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(later))
        .expect("touch");
    assert_eq!(
        store
            .current()
            .expect("fixed")
            .require("1")
            .expect("entry 1")
            .url,
        "/other.db"
    );
}
