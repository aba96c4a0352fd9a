//! jdbcManager: the engine ([`drivers`]: the driver list, the installed drivers, installing
//! and deleting one) and the menu over it ([`menu`]); the command line (`weft jdbc list|add|
//! delete`, behind `bin/jdbcManager`) sits on top.
//!
//! # JDBC drivers
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `weft_cli::jdbc_manager` is jdbcManager's engine: `jdbcList` parsing (bad lines reported by number),
//! the installed drivers in `INSTALL/drivers`, and atomic installs from `http:`, `https:`
//! (reqwest with rustls and ring) and `file:` URLs with an optional SHA-256 check, each failure
//! with its own message. `weft jdbc list|add|delete` (behind `bin/jdbcManager`) is its command
//! line, and `jdbc_manager::menu` the interactive menu (ratatui; a test drives it in a
//! pseudo-terminal read through a vt100 emulator).
//!
//! The bridge (`plugins/jdbc`) serves the connection type `jdbc`. The host hands it two options
//! beside the key entry's own: `weft.drivers` (INSTALL/drivers) and `weft.java_home` (the
//! setting); an entry cannot set `weft.*` itself. `jvm` finds libjvm (`JAVA_HOME`, the `java` on
//! `PATH` with symlinks followed, the setting), starts the JVM once in a `OnceLock` with `-Xrs`
//! (the host keeps its signals), and defines the helper class in the system class loader.
//! `connection` is the `Connection`: each call is one JNI call into the helper on the calling
//! thread (attached on first use; the executor's threads, never the async runtime). The helper
//! loads the jars through a `URLClassLoader` whose parent is the platform loader (one per set of
//! jars, so a driver installed while the server runs is seen), finds the driver by `driver=` or
//! by `META-INF/services`, and connects with `Driver.connect`. Rows cross in the byte format of
//! `codec` (a batch per call both ways); a Java exception is described (class, SQLState,
//! message, chained causes) and cleared before the call returns. `jdbc:sqlite:` is refused: a
//! second SQLite library in the process would break file locking.

pub mod drivers;
pub mod menu;

pub use drivers::*;
