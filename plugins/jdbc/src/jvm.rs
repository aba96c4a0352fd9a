//! The one JVM of the process: where its library is, starting it on first use, and the
//! helper class that does the per-row work on the Java side.
//!
//! The JVM is created once (a `OnceLock`) when the first JDBC connection opens; a process
//! that never opens one never loads libjvm. Its library is found from `JAVA_HOME`, else from
//! the `java` on `PATH`, else from the setting `java_home` (passed by the host as the option
//! `weft.java_home`). Not finding Java is asked again at the next connection; a JVM that
//! failed to start is remembered, since a process cannot create one twice.

use jni::objects::{JClass, JClassLoader, JString};
use jni::refs::Global;
use jni::{Env, InitArgsBuilder, JNIVersion, JavaVM, jni_sig, jni_str};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The compiled helper class (`javac --release 11` of `java/weft/jdbc/Bridge.java`).
pub const HELPER_CLASS: &[u8] = include_bytes!("../java/weft/jdbc/Bridge.class");

/// The started JVM and the helper class defined in it.
pub struct Jvm {
    /// The JVM.
    pub vm: JavaVM,
    /// `weft.jdbc.Bridge`, defined in the system class loader.
    pub helper: Global<JClass<'static>>,
    /// The libjvm that was loaded, for messages.
    pub libjvm: PathBuf,
}

static JVM: OnceLock<Jvm> = OnceLock::new();

/// Why the JVM could not be created, once it was tried: a process cannot try twice.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// The JVM, started on the first call.
///
/// # Errors
///
/// Why no JVM could be started. Not finding Java is not remembered (Java installed later, or
/// a corrected `java_home`, is found by the next connection); a JVM that failed to load or
/// start is, since a process cannot create one twice.
pub fn get(java_home_setting: Option<&str>) -> Result<&'static Jvm, String> {
    if let Some(j) = JVM.get() {
        return Ok(j);
    }
    let mut failed = FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(j) = JVM.get() {
        return Ok(j);
    }
    if let Some(e) = failed.as_ref() {
        return Err(e.clone());
    }
    let env = JavaEnv {
        java_home: std::env::var_os("JAVA_HOME").map(PathBuf::from),
        path: std::env::var_os("PATH"),
        setting: java_home_setting.map(PathBuf::from),
    };
    let libjvm = find_libjvm(&env)?;
    match start(libjvm) {
        Ok(j) => Ok(JVM.get_or_init(|| j)),
        Err(e) => {
            *failed = Some(e.clone());
            Err(e)
        }
    }
}

fn start(libjvm: PathBuf) -> Result<Jvm, String> {
    let args = InitArgsBuilder::new()
        .version(JNIVersion::V1_8)
        // The host handles SIGINT and SIGTERM itself; the JVM must not take them over.
        .option("-Xrs")
        .option("-Djava.awt.headless=true")
        .build()
        .map_err(|e| format!("the JVM's start options were refused: {e}"))?;
    let path = libjvm.clone();
    let vm = JavaVM::with_libjvm(args, move || Ok(path))
        .map_err(|e| format!("the JVM in {} could not be started: {e}", libjvm.display()))?;
    let helper = vm
        .attach_current_thread(
            |env: &mut Env| -> jni::errors::Result<Global<JClass<'static>>> {
                let loader = JClassLoader::get_system_class_loader(env)?;
                let class =
                    env.define_class(Some(jni_str!("weft/jdbc/Bridge")), &loader, HELPER_CLASS)?;
                env.new_global_ref(&class)
            },
        )
        .map_err(|e| {
            format!(
                "the JVM in {} started, but weft's helper class could not be defined in it: {e}",
                libjvm.display()
            )
        })?;
    Ok(Jvm { vm, helper, libjvm })
}

/// Where Java may be: the inputs of [`find_libjvm`], so that tests can give their own.
#[derive(Debug, Default, Clone)]
pub struct JavaEnv {
    /// `JAVA_HOME`.
    pub java_home: Option<PathBuf>,
    /// `PATH`.
    pub path: Option<std::ffi::OsString>,
    /// The setting `java_home`.
    pub setting: Option<PathBuf>,
}

/// The places of libjvm inside a Java home (JDK 9 and later, then the JDK 8 layouts).
fn libjvm_in(home: &Path) -> Option<PathBuf> {
    let name = if cfg!(target_os = "macos") {
        "libjvm.dylib"
    } else if cfg!(windows) {
        "jvm.dll"
    } else {
        "libjvm.so"
    };
    [
        home.join("lib/server").join(name),
        home.join("jre/lib/server").join(name),
        home.join("jre/lib/amd64/server").join(name),
        home.join("bin/server").join(name),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// libjvm: from `JAVA_HOME`, else the `java` on `PATH` (symlinks followed), else the setting.
///
/// # Errors
///
/// A message that says where it looked and how to fix it.
pub fn find_libjvm(env: &JavaEnv) -> Result<PathBuf, String> {
    if let Some(home) = env.java_home.as_ref().filter(|h| !h.as_os_str().is_empty()) {
        return libjvm_in(home).ok_or_else(|| {
            format!(
                "JAVA_HOME is {} but holds no Java runtime (no lib/server/libjvm.so); \
                 point JAVA_HOME at a Java 11 or later installation, or unset it",
                home.display()
            )
        });
    }
    if let Some(path) = &env.path {
        for dir in std::env::split_paths(path) {
            let java = dir.join("java");
            if !java.is_file() {
                continue;
            }
            let Ok(real) = java.canonicalize() else {
                continue;
            };
            if let Some(found) = real.parent().and_then(Path::parent).and_then(libjvm_in) {
                return Ok(found);
            }
        }
    }
    if let Some(home) = &env.setting {
        return libjvm_in(home).ok_or_else(|| {
            format!(
                "the setting java_home is {} but holds no Java runtime (no lib/server/libjvm.so)",
                home.display()
            )
        });
    }
    Err(
        "no Java runtime found for the JDBC connection: JAVA_HOME is not set, there is no \
         `java` on PATH, and the setting java_home is not set; install Java 11 or later \
         (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
            .to_owned(),
    )
}

/// The message of the pending Java exception, which is cleared: class, SQLState and message,
/// as the helper's `describe` writes them.
pub fn take_exception(env: &mut Env, helper: &Global<JClass<'static>>) -> String {
    let Some(t) = env.exception_occurred() else {
        return "a Java call failed without an exception".to_owned();
    };
    env.exception_clear();
    let described = (|| -> jni::errors::Result<String> {
        let s = env
            .call_static_method(
                helper,
                jni_str!("describe"),
                jni_sig!("(Ljava/lang/Throwable;)Ljava/lang/String;"),
                &[jni::JValue::Object(&t)],
            )?
            .l()?;
        let s = env.cast_local::<JString>(s)?;
        s.try_to_string(env)
    })();
    match described {
        Ok(m) => m,
        Err(e) => {
            env.exception_clear();
            format!("a Java exception that could not be described ({e})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed class is what the committed source compiles to.
    #[test]
    fn the_helper_class_is_compiled_from_the_current_source() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
        let out = tempfile::tempdir().expect("test setup");
        let javac = std::env::var_os("JAVA_HOME")
            .map(|h| PathBuf::from(h).join("bin/javac"))
            .filter(|j| j.is_file())
            .unwrap_or_else(|| PathBuf::from("javac"));
        let status = std::process::Command::new(&javac)
            .args(["--release", "11", "-d"])
            .arg(out.path())
            .arg(src.join("weft/jdbc/Bridge.java"))
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (install a JDK: openjdk-17-jdk-headless)",
                    javac.display()
                )
            });
        assert!(status.success());
        let fresh = std::fs::read(out.path().join("weft/jdbc/Bridge.class")).expect("test setup");
        assert!(
            fresh == HELPER_CLASS,
            "java/weft/jdbc/Bridge.class is stale: run \
             (cd plugins/jdbc/java && javac --release 11 -d . weft/jdbc/Bridge.java)"
        );
    }

    fn fake_home(dir: &Path) -> PathBuf {
        let home = dir.join("jdk");
        std::fs::create_dir_all(home.join("lib/server")).expect("test setup");
        std::fs::create_dir_all(home.join("bin")).expect("test setup");
        std::fs::write(home.join("lib/server/libjvm.so"), b"").expect("test setup");
        std::fs::write(home.join("bin/java"), b"").expect("test setup");
        home
    }

    #[test]
    fn java_home_wins_and_a_wrong_one_is_named() {
        let tmp = tempfile::tempdir().expect("test setup");
        let home = fake_home(tmp.path());
        let env = JavaEnv {
            java_home: Some(home.clone()),
            ..JavaEnv::default()
        };
        assert_eq!(
            find_libjvm(&env).expect("test setup"),
            home.join("lib/server/libjvm.so")
        );
        let env = JavaEnv {
            java_home: Some(tmp.path().join("nothing")),
            path: Some(home.join("bin").into_os_string()),
            ..JavaEnv::default()
        };
        let e = find_libjvm(&env).expect_err("an error");
        assert!(e.contains("JAVA_HOME is") && e.contains("nothing"), "{e}");
    }

    #[test]
    fn java_on_path_is_followed_through_symlinks() {
        let tmp = tempfile::tempdir().expect("test setup");
        let home = fake_home(tmp.path());
        let bin = tmp.path().join("usr-bin");
        std::fs::create_dir_all(&bin).expect("test setup");
        std::os::unix::fs::symlink(home.join("bin/java"), bin.join("java")).expect("test setup");
        let path = std::env::join_paths([tmp.path().join("empty"), bin]).expect("test setup");
        let env = JavaEnv {
            path: Some(path),
            ..JavaEnv::default()
        };
        assert_eq!(
            find_libjvm(&env).expect("test setup"),
            home.canonicalize()
                .expect("test setup")
                .join("lib/server/libjvm.so")
        );
    }

    #[test]
    fn the_setting_comes_last_and_nothing_found_says_how_to_fix_it() {
        let tmp = tempfile::tempdir().expect("test setup");
        let home = fake_home(tmp.path());
        let env = JavaEnv {
            path: Some(tmp.path().join("empty").into_os_string()),
            setting: Some(home.clone()),
            ..JavaEnv::default()
        };
        assert_eq!(
            find_libjvm(&env).expect("test setup"),
            home.join("lib/server/libjvm.so")
        );
        let e = find_libjvm(&JavaEnv::default()).expect_err("an error");
        assert!(
            e.contains("no Java runtime found") && e.contains("JAVA_HOME"),
            "{e}"
        );
    }
}
