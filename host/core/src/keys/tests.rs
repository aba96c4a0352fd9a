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

/// A program standing in for a vault client: `script` as an executable shell script in `dir`.
fn program(dir: &Path, name: &str, script: &str) -> String {
    let path = dir.join(name);
    write(&path, &format!("#!/bin/sh\n{script}\n"), 0o700);
    path.display().to_string()
}

fn entry(line: &str) -> Entry {
    let kf = KeyFile::parse(Path::new("keyfile"), line).expect("parses");
    kf.entries().next().expect("an entry").clone()
}

#[test]
fn a_password_comes_from_a_secret_stores_program_and_is_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vault = program(dir.path(), "vault", "echo \"pw-for-$1-$WEFT_KEY\"");
    let e = entry(&format!(
        "dwh|postgresql|postgresql://h/db|etl||sslmode=require;passwordCommand={vault} {{key}}"
    ));
    let resolved = e.resolved().expect("resolves");
    assert_eq!(resolved.password, "pw-for-dwh-dwh");
    assert_eq!(resolved.user, "etl");
    assert!(printed_secrets().contains(&"pw-for-dwh-dwh".to_owned()));
    assert_eq!(
        resolved.options,
        vec![("sslmode".to_owned(), "require".to_owned())],
        "the program's options are used up"
    );
    // An entry without a program is itself.
    let plain = entry("7|sqlite|/a.db|||");
    assert!(matches!(
        plain.resolved().expect("plain"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn a_whole_entry_comes_from_its_program_its_empty_fields_kept_from_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vault = program(
        dir.path(),
        "entry",
        "echo 'ignored|postgresql||app|s\\|ecret|sslmode=verify-full;passwordCommand=/bin/false'",
    );
    let e = entry(&format!(
        "dwh|postgresql|postgresql://file/db|fileuser||fetch=10;entryCommand={vault}"
    ));
    let r = e.resolved().expect("resolves");
    assert_eq!(
        (
            r.key.as_str(),
            r.kind.as_str(),
            r.url.as_str(),
            r.user.as_str(),
            r.password.as_str()
        ),
        (
            "dwh",
            "postgresql",
            "postgresql://file/db",
            "app",
            "s|ecret"
        )
    );
    assert_eq!(r.option("sslmode"), Some("verify-full"));
    assert_eq!(r.option("fetch"), Some("10"));
    assert_eq!(
        r.option(PASSWORD_COMMAND),
        None,
        "a program cannot name another"
    );
    // Another URL than the file's is refused: it was read before the connection opened.
    let moved = program(
        dir.path(),
        "moved",
        "echo 'dwh|postgresql|postgresql://elsewhere/db|app|pw|'",
    );
    let e = entry(&format!(
        "dwh|postgresql|postgresql://file/db|u||entryCommand={moved}"
    ));
    let err = e.resolved().expect_err("moved").to_string();
    assert!(err.contains("another URL than the file's"), "{err}");
    // The service's own entry takes no program.
    let server = KeyFile::parse(
        Path::new("keyfile"),
        "weft_server|http|http://127.0.0.1:1/weft/service|||passwordCommand=x\n",
    )
    .expect_err("server");
    assert!(
        server
            .to_string()
            .contains("cannot take its secret from a program"),
        "{server}"
    );
    // A program that leaves a child holding its output still answers.
    let forks = program(dir.path(), "forks", "sleep 30 &\necho from-the-parent");
    let e = entry(&format!("9|postgresql|u|x||passwordCommand={forks}"));
    assert_eq!(e.resolved().expect("answers").password, "from-the-parent");
}

#[test]
fn a_failing_slow_or_loud_program_is_an_error_that_never_shows_its_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let failing = program(
        dir.path(),
        "failing",
        "echo leaked-secret; echo oops >&2; exit 3",
    );
    let e = entry(&format!("9|postgresql|u|x||passwordCommand={failing}"));
    let err = e.resolved().expect_err("fails").to_string();
    assert!(
        err.starts_with("key file entry `9`: its passwordCommand failed: `")
            && err.contains("exit status: 3"),
        "{err}"
    );
    assert!(
        !err.contains("leaked-secret") && !err.contains("oops"),
        "{err}"
    );
    let slow = program(dir.path(), "slow", "exec sleep 30");
    let e = entry(&format!(
        "9|postgresql|u|x||passwordCommand={slow};commandTimeoutSeconds=1"
    ));
    let err = e.resolved().expect_err("too slow").to_string();
    assert!(
        err.contains("did not finish within 1 s; it was killed"),
        "{err}"
    );
    let loud = program(dir.path(), "loud", "head -c 70000 /dev/zero | tr '\\0' x");
    let e = entry(&format!("9|postgresql|u|x||passwordCommand={loud}"));
    assert!(
        e.resolved()
            .expect_err("loud")
            .to_string()
            .contains("more than 65536 bytes")
    );
    let e = entry("9|postgresql|u|x||passwordCommand=/nonexistent/vault");
    assert!(
        e.resolved()
            .expect_err("missing")
            .to_string()
            .contains("could not start")
    );
    let e = entry(&format!(
        "9|postgresql|u|x||passwordCommand={failing};commandTimeoutSeconds=0"
    ));
    assert!(
        e.resolved()
            .expect_err("zero")
            .to_string()
            .contains("is not 1 to 3600 seconds")
    );
    let both = KeyFile::parse(
        Path::new("keyfile"),
        "9|postgresql|u|x||passwordCommand=a;entryCommand=b\n",
    )
    .expect_err("both");
    assert!(
        both.to_string()
            .contains("both `passwordCommand` and `entryCommand`"),
        "{both}"
    );
}
