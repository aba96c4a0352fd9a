//! End to end: `bin/install.sh PREFIX` into a temporary prefix, then the installed tree used
//! as a user would, with only `PREFIX/bin` on PATH and from another directory: the default
//! HOME of the installation, the plugins in `PREFIX/plugins`, the scripts, jdbcManager
//! installing into `PREFIX/drivers`, a reinstall while the server runs, the systemd unit.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The installed tree and the directory commands run from.
struct Installed {
    prefix: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl Installed {
    fn prefix(&self) -> &Path {
        self.prefix.path()
    }

    fn home(&self) -> PathBuf {
        self.prefix().join("home")
    }

    /// `PROGRAM ARGS` found on PATH (only `PREFIX/bin` and the system's), in the other
    /// directory, with no WEFT_* variable set.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(self.cwd.path())
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.prefix().join("bin").display()),
            )
            .env_remove("WEFT_HOME")
            .env_remove("WEFT_INSTALL")
            .env_remove("WEFT_BIN")
            .env_remove("WEFT_TOKEN");
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program, args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
    }
}

/// Runs `bin/install.sh ARGS` of the checkout with the binaries under test.
fn install_sh(args: &[&str]) -> Output {
    let built = weft_bin();
    let from = built.parent().expect("the build folder");
    Command::new("bash")
        .arg(root().join("bin/install.sh"))
        .arg("--from")
        .arg(from)
        .args(args)
        .env_remove("WEFT_HOME")
        .env_remove("WEFT_INSTALL")
        .output()
        .expect("bin/install.sh")
}

fn install() -> Installed {
    let prefix = tempfile::tempdir().expect("prefix");
    let o = install_sh(&[prefix.path().to_str().expect("utf-8 path")]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    Installed {
        prefix,
        cwd: tempfile::tempdir().expect("another directory"),
    }
}

/// The server of an installed tree, killed when dropped.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_installed_tree_works_from_any_directory_with_its_own_home_plugins_and_drivers() {
    let t = install();
    let prefix = t.prefix();
    for file in [
        "bin/weft",
        "bin/deploySheet.sh",
        "bin/deploySchema.sh",
        "bin/getkey",
        "bin/jdbcManager",
        "bin/jdbcList",
        "plugins/libweft_plugin_sql.so",
        "plugins/libweft_plugin_upsert.so",
        "plugins/libweft_plugin_history.so",
        "plugins/libweft_plugin_shell.so",
        "default-home",
        "lib/systemd/system/weft.service",
        "sdk/Cargo.toml",
        "sdk/src/lib.rs",
        "sql_support/Cargo.toml",
        "sql_support/src/lib.rs",
    ] {
        assert!(prefix.join(file).is_file(), "{file} is installed");
    }
    // The service user reads the installation's default HOME (root installs it).
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(prefix.join("default-home"))
            .expect("default-home")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "default-home is {mode:o}");
    }
    // The sdk's companion finds the installed sdk beside it.
    let companion =
        std::fs::read_to_string(prefix.join("sql_support/Cargo.toml")).expect("companion");
    assert!(companion.contains("path = \"../sdk\""), "{companion}");
    // A new plugin crate depends on the installed sdk.
    let o = t.run("weft", &["plugins", "new", "demo"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let manifest = std::fs::read_to_string(t.cwd.path().join("demo/Cargo.toml")).expect("crate");
    let sdk = std::fs::canonicalize(prefix.join("sdk")).expect("sdk");
    assert!(
        manifest.contains(&format!("path = \"{}\"", sdk.display())),
        "{manifest}"
    );
    assert!(prefix.join("drivers").is_dir());
    let unit =
        std::fs::read_to_string(prefix.join("lib/systemd/system/weft.service")).expect("the unit");
    for line in [
        format!("ExecStart={}/bin/weft serve", prefix.display()),
        format!("Environment=WEFT_HOME={}", t.home().display()),
        "User=weft".to_owned(),
        "WantedBy=multi-user.target".to_owned(),
    ] {
        assert!(unit.lines().any(|l| l == line), "`{line}` in\n{unit}");
    }
    // systemd waits longer than the server's own stop: 30 s for running actions to end and
    // be recorded, then 5 s for open requests.
    let stop: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no TimeoutStopSec in\n{unit}"));
    assert!(stop > 35, "TimeoutStopSec={stop} in\n{unit}");

    // Before the first start: nothing is created by accident, and the messages name the
    // installation's HOME and where it came from.
    let repository = t.home().join("repository.db");
    let o = t.run("deploySchema.sh", &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains(&repository.display().to_string())
            && err.contains(&prefix.join("default-home").display().to_string()),
        "{err}"
    );
    assert!(!repository.exists(), "deploySchema.sh created nothing");
    let o = t.run("getkey", &["weft_server"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains(&t.home().join("keyfile").display().to_string())
            && err.contains("default-home"),
        "{err}"
    );
    let o = t.run("weft", &["plugins"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    for module in ["Sql", "Insert", "Upsert", "Transfer"] {
        assert!(out.contains(module), "{module} is provided: {out}");
    }
    assert!(
        out.contains(&prefix.join("plugins").display().to_string()),
        "loaded from PREFIX/plugins: {out}"
    );

    // The first start creates the repository in the installation's HOME.
    let (child, url) = serve({
        let mut c = t.command("weft", &["serve", "--listen", "127.0.0.1:0"]);
        c.env_remove("RUST_LOG");
        c
    });
    let pid = child.id();
    let _served = Served(child);
    assert!(repository.is_file());
    // The plugins are loaded from the copies install.sh made beside them, one per library,
    // shared by every HOME: this HOME holds none.
    let store = prefix.join("plugins/.loaded");
    let stored: Vec<String> = std::fs::read_dir(&store)
        .expect("PREFIX/plugins/.loaded")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for lib in [
        "libweft_plugin_sql",
        "libweft_plugin_upsert",
        "libweft_plugin_table",
    ] {
        assert_eq!(
            stored
                .iter()
                .filter(|n| n.starts_with(&format!("{lib}-")))
                .count(),
            1,
            "{stored:?}"
        );
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    assert!(
        maps.contains(&format!("{}/libweft_plugin_upsert-", store.display())),
        "the server maps the stored copies: {maps}"
    );
    let own: Vec<_> = std::fs::read_dir(t.home().join("plugins/.loaded"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(own.is_empty(), "the HOME holds no copies: {own:?}");
    let o = t.run("getkey", &["weft_server"]);
    assert_eq!(text(&o).0.trim(), url, "the server wrote its address");
    for file in ["1-folder.dsr", "2-connection.dsr", "3-sheet.dsr"] {
        let path = example(file);
        let o = t.run("deploySheet.sh", &["--file", path.to_str().expect("utf-8")]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{file}: {out}{err}");
        assert!(out.contains("Deployment without errors"), "{out}");
    }

    // A run of the quickstart sheet through the installed plugins (Upsert).
    let sales = t.home().join("sales.db");
    let db = rusqlite::Connection::open(&sales).expect("sales.db");
    db.execute_batch(
        "CREATE TABLE stg_customers (id INTEGER, name TEXT, email TEXT, loaded_at TEXT);
         INSERT INTO stg_customers VALUES (1, 'Ann', 'ann@example.org', '2026-11-20');
         CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT);",
    )
    .expect("tables");
    {
        use std::io::Write as _;
        let mut keyfile = std::fs::OpenOptions::new()
            .append(true)
            .open(t.home().join("keyfile"))
            .expect("key file");
        writeln!(keyfile, "1|sqlite|{}|||", sales.display()).expect("entry");
    }
    let o = t.run(
        "weft",
        &[
            "run",
            "--sheet",
            "100",
            "--var",
            "since=2026-11-01",
            "--wait",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let names: i64 = db
        .query_row(
            "SELECT count(*) FROM customers WHERE name = 'Ann'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(names, 1, "the Upsert loaded the row");

    // The repository exists now: deploySchema.sh finds it up to date.
    let o = t.run("deploySchema.sh", &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");

    // jdbcManager reads PREFIX/bin/jdbcList and installs into PREFIX/drivers.
    let jar = t.cwd.path().join("local.jar");
    std::fs::write(&jar, jar_bytes()).expect("jar");
    {
        use std::io::Write as _;
        let mut list = std::fs::OpenOptions::new()
            .append(true)
            .open(prefix.join("bin/jdbcList"))
            .expect("jdbcList");
        writeln!(list, "local:A local driver:file:{}", jar.display()).expect("line");
    }
    let o = t.run("jdbcManager", &["add", "local"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(prefix.join("drivers/local.jar").is_file(), "{out}{err}");

    // A reinstall while the server runs: the code is replaced by renames, the edited
    // jdbcList, the drivers and HOME are kept, and the running server goes on answering.
    // The same build's stored copies stay as they were.
    let inode = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(p).expect("stored copy").ino()
    };
    let sql_copy = store.join(
        stored
            .iter()
            .find(|n| n.starts_with("libweft_plugin_sql-"))
            .expect("the Sql copy"),
    );
    let before = inode(&sql_copy);
    let o = install_sh(&[prefix.to_str().expect("utf-8")]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("kept the edited"), "{out}");
    let list = std::fs::read_to_string(prefix.join("bin/jdbcList")).expect("jdbcList");
    assert!(list.contains("local:A local driver"), "the edit is kept");
    let dist = std::fs::read_to_string(prefix.join("bin/jdbcList.dist")).expect("dist");
    assert_eq!(
        dist,
        std::fs::read_to_string(root().join("jdbcList")).expect("the delivered list")
    );
    assert!(prefix.join("drivers/local.jar").is_file());
    assert!(repository.is_file());
    assert_eq!(
        inode(&sql_copy),
        before,
        "the stored copy was not rewritten"
    );
    let path = example("3-sheet.dsr");
    let o = t.run("deploySheet.sh", &["--file", path.to_str().expect("utf-8")]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "after the reinstall: {out}{err}");
}

#[test]
fn a_chosen_home_is_the_installations_default_and_flags_still_win() {
    let prefix = tempfile::tempdir().expect("prefix");
    let data = tempfile::tempdir().expect("data");
    let o = install_sh(&[
        "--home",
        data.path().to_str().expect("utf-8"),
        prefix.path().to_str().expect("utf-8"),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let t = Installed {
        prefix,
        cwd: tempfile::tempdir().expect("cwd"),
    };
    let o = t.run("deploySchema.sh", &["--init"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(data.path().join("repository.db").is_file(), "{out}{err}");
    // A later install without --home keeps the chosen one.
    let o = install_sh(&[t.prefix().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = t.run("deploySchema.sh", &["--status"]);
    let (out, err) = text(&o);
    assert!(
        out.contains(&data.path().join("repository.db").display().to_string()),
        "{out}{err}"
    );
    // --home on the command line wins over the installation's default.
    let other = tempfile::tempdir().expect("other");
    let o = t.run(
        "deploySchema.sh",
        &["--home", other.path().to_str().expect("utf-8"), "--status"],
    );
    let (out, err) = text(&o);
    assert!(
        out.contains(&other.path().join("repository.db").display().to_string()),
        "{out}{err}"
    );
}

#[test]
fn install_sh_refuses_bad_usage_with_exit_2_and_missing_builds_with_exit_1() {
    for (args, says) in [
        (vec![], "PREFIX is missing"),
        (vec!["--bogus", "/tmp/x"], "unknown option --bogus"),
        (vec!["--profile", "fast", "/tmp/x"], "release or debug"),
        (vec!["/tmp/a", "/tmp/b"], "one PREFIX only"),
    ] {
        let o = Command::new("bash")
            .arg(root().join("bin/install.sh"))
            .args(&args)
            .output()
            .expect("install.sh");
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let o = Command::new("bash")
        .arg(root().join("bin/install.sh"))
        .arg("--help")
        .output()
        .expect("install.sh");
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.contains("PREFIX/plugins/"));
    let empty = tempfile::tempdir().expect("empty build folder");
    let prefix = tempfile::tempdir().expect("prefix");
    let o = Command::new("bash")
        .arg(root().join("bin/install.sh"))
        .arg("--from")
        .arg(empty.path())
        .arg(prefix.path())
        .output()
        .expect("install.sh");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("weft is missing"), "{err}");
    assert!(!prefix.path().join("bin/weft").exists());
}

/// A small jar: a class file in a zip.
fn jar_bytes() -> Vec<u8> {
    use std::io::Write as _;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file(
        "org/example/Driver.class",
        zip::write::SimpleFileOptions::default(),
    )
    .expect("entry");
    w.write_all(b"\xca\xfe\xba\xbe").expect("class");
    w.finish().expect("zip").into_inner()
}
