//! The `jdbc` connection bridge: weft reaches any database that has a JDBC driver.
//!
//! A key file entry `N|jdbc|URL|USER|PASSWORD|driver=CLASS;k=v...` opens a connection through
//! a driver jar that jdbcManager installed in `INSTALL/drivers` (the host passes that folder
//! as the option `weft.drivers`, and the setting `java_home` as `weft.java_home`). `driver=`
//! may be left out when a jar declares its driver in `META-INF/services/java.sql.Driver`;
//! the other options become connection properties.
//!
//! - [`jvm`]: the one JVM of the process, started on the first JDBC connection only.
//! - [`connection`]: the [`weft_sdk::DatabaseConnection`] over a `java.sql.Connection`.
//! - [`codec`]: the byte format in which rows and parameters cross JNI, a batch per call.
//!
//! This is the only crate that uses jni. JNI calls block; the host calls connections on its
//! executor threads, never on the async runtime.

pub mod codec;
pub mod connection;
pub mod jvm;
mod place;

use std::path::{Path, PathBuf};
use weft_sdk::{Connection, ConnectionBridge, ErrorKind, KeyEntry, PluginError, PluginResult};

/// The bridge for the connection type `jdbc`.
#[derive(Debug, Default, Clone, Copy)]
pub struct JdbcBridge;

/// The option naming the driver class.
pub const DRIVER_OPTION: &str = "driver";
/// The option the host sets to `INSTALL/drivers`.
pub const DRIVERS_OPTION: &str = "weft.drivers";
/// The option the host sets to the setting `java_home`.
pub const JAVA_HOME_OPTION: &str = "weft.java_home";

/// The driver jars in `dir`, by name; none when it does not exist.
pub fn jars_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut jars: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("jar")))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    jars.sort();
    jars
}

impl ConnectionBridge for JdbcBridge {
    fn connection_type(&self) -> String {
        "jdbc".to_owned()
    }

    fn open(&self, entry: &KeyEntry) -> PluginResult<Connection> {
        let key = entry.key();
        let url = entry.url().trim();
        let refuse = |m: String| Err(PluginError::of(ErrorKind::Connection, m));
        if !url.to_ascii_lowercase().starts_with("jdbc:") {
            return refuse(format!(
                "connection {key}: `{url}` is not a JDBC URL (it starts with `jdbc:`, as in \
                 jdbc:postgresql://host:5432/db)"
            ));
        }
        if weft_sdk::Dialect::of_jdbc_url(url) == weft_sdk::Dialect::Sqlite {
            return refuse(format!(
                "connection {key}: SQLite is reached natively (type `sqlite`, URL = the file's \
                 path), not through JDBC: a second SQLite library in the process would break \
                 SQLite's file locking"
            ));
        }
        let mut driver = String::new();
        let mut drivers_dir = None;
        let mut java_home = None;
        let mut properties = Vec::new();
        for (k, v) in entry.options() {
            match k {
                DRIVER_OPTION => driver = v.trim().to_owned(),
                DRIVERS_OPTION => drivers_dir = Some(PathBuf::from(v)),
                JAVA_HOME_OPTION => java_home = Some(v.to_owned()).filter(|v| !v.is_empty()),
                k if k.starts_with("weft.") => {}
                k => properties.push((k.to_owned(), v.to_owned())),
            }
        }
        // The host passes INSTALL/drivers when it knows INSTALL (DESIGN.md section 1).
        let Some(dir) = drivers_dir else {
            return refuse(format!(
                "connection {key}: no drivers folder: INSTALL is unknown; set WEFT_INSTALL to \
                 the folder that holds jdbcList and drivers/"
            ));
        };
        let jars = jars_in(&dir);
        if jars.is_empty() {
            return refuse(format!(
                "connection {key}: no JDBC driver is installed in {}; install one with \
                 bin/jdbcManager (for {url})",
                dir.display()
            ));
        }
        let jvm = jvm::get(java_home.as_deref()).map_err(|m| {
            PluginError::of(ErrorKind::Connection, format!("connection {key}: {m}"))
        })?;
        let target = connection::Target {
            key,
            url,
            user: entry.user(),
            password: entry.password(),
            driver: &driver,
            jars,
            properties,
        };
        let c = connection::JdbcConnection::open(jvm, &target)?;
        Ok(Connection::new(c))
    }
}

weft_sdk::export_plugin! {
    modules: [],
    object_types: [],
    bridges: [JdbcBridge],
}
