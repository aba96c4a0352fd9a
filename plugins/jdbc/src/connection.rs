//! A JDBC connection as a weft [`DatabaseConnection`]: every call is one JNI call into the helper
//! class (`weft.jdbc.Bridge`), which holds the `java.sql.Connection`.

use crate::codec;
use crate::jvm::{self, Jvm};
use jni::objects::{JByteArray, JObject, JObjectArray, JString};
use jni::refs::Global;
use jni::{Env, JValue, jni_sig, jni_str};
use std::collections::HashMap;
use weft_sdk::{
    DatabaseConnection, Dialect, ErrorKind, PluginError, PluginResult, Row, RowSink, TableInfo,
    Value,
};
use weft_sql_support::{qualified, quote, statement_ranges};

/// What a connection is opened from.
pub struct Target<'a> {
    /// Key file entry name, for messages.
    pub key: &'a str,
    /// The JDBC URL.
    pub url: &'a str,
    /// User, may be empty.
    pub user: &'a str,
    /// Password, may be empty; never in a message.
    pub password: &'a str,
    /// The driver class, empty to find it in the jars' service files.
    pub driver: &'a str,
    /// The driver jars.
    pub jars: Vec<String>,
    /// Connection properties.
    pub properties: Vec<(String, String)>,
}

/// An open JDBC connection.
pub struct JdbcConnection {
    key: String,
    password: String,
    url: String,
    dialect: Dialect,
    jvm: &'static Jvm,
    bridge: Global<JObject<'static>>,
    /// The real schema and name of tables as the database spells them, by the name asked for.
    tables: HashMap<(Option<String>, String), TableInfo>,
}

impl std::fmt::Debug for JdbcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JdbcConnection")
            .field("key", &self.key)
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

/// A JNI call's outcome: a Java exception (described) or a JNI failure.
enum Failure {
    Java(String),
    Jni(jni::errors::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

/// Runs `f` on this thread attached to the JVM; a Java exception is described and cleared.
fn with_env<T>(
    jvm: &'static Jvm,
    f: impl FnOnce(&mut Env) -> jni::errors::Result<T>,
) -> Result<T, Failure> {
    jvm.vm
        .attach_current_thread(|env: &mut Env| -> Result<T, Failure> {
            match f(env) {
                Ok(v) => Ok(v),
                Err(jni::errors::Error::JavaException) => {
                    Err(Failure::Java(jvm::take_exception(env, &jvm.helper)))
                }
                Err(e) => Err(Failure::Jni(e)),
            }
        })
}

fn bytes_of(env: &mut Env, o: JObject) -> jni::errors::Result<Vec<u8>> {
    let a = env.cast_local::<JByteArray>(o)?;
    env.convert_byte_array(&a)
}

fn string_array<'l>(
    env: &mut Env<'l>,
    items: &[&str],
) -> jni::errors::Result<JObjectArray<'l, JString<'l>>> {
    let empty = env.new_string("")?;
    let a = JObjectArray::<JString>::new(env, items.len(), &empty)?;
    for (i, s) in items.iter().enumerate() {
        let js = env.new_string(s)?;
        a.set_element(env, i, &js)?;
        env.delete_local_ref(js);
    }
    Ok(a)
}

impl JdbcConnection {
    /// Opens a connection through the helper class.
    ///
    /// # Errors
    ///
    /// The driver's or weft's message, naming the connection, without the password.
    pub fn open(jvm: &'static Jvm, t: &Target<'_>) -> Result<Self, PluginError> {
        let opened = with_env(jvm, |env| {
            let jars: Vec<&str> = t.jars.iter().map(String::as_str).collect();
            let jars = string_array(env, &jars)?;
            let props: Vec<&str> = t
                .properties
                .iter()
                .flat_map(|(k, v)| [k.as_str(), v.as_str()])
                .collect();
            let props = string_array(env, &props)?;
            let driver = env.new_string(t.driver)?;
            let url = env.new_string(t.url)?;
            let user = env.new_string(t.user)?;
            let password = env.new_string(t.password)?;
            let b = env
                .call_static_method(
                    &jvm.helper,
                    jni_str!("open"),
                    jni_sig!(
                        "([Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;[Ljava/lang/String;)Lweft/jdbc/Bridge;"
                    ),
                    &[
                        JValue::Object(&jars),
                        JValue::Object(&driver),
                        JValue::Object(&url),
                        JValue::Object(&user),
                        JValue::Object(&password),
                        JValue::Object(&props),
                    ],
                )?
                .l()?;
            env.new_global_ref(&b)
        });
        let fail = |m: String| {
            PluginError::of(
                ErrorKind::Connection,
                scrub(
                    &format!("connection {}: cannot connect to {}: {m}", t.key, t.url),
                    t.password,
                    t.url,
                ),
            )
        };
        let bridge = match opened {
            Ok(b) => b,
            Err(Failure::Java(m)) => return Err(fail(m)),
            Err(Failure::Jni(e)) => return Err(fail(format!("JNI: {e}"))),
        };
        Ok(JdbcConnection {
            key: t.key.to_owned(),
            password: t.password.to_owned(),
            url: t.url.to_owned(),
            dialect: Dialect::of_jdbc_url(t.url),
            jvm,
            bridge,
            tables: HashMap::new(),
        })
    }

    /// Runs `f`, naming `what` and the connection in an error.
    fn call<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Env, &JObject<'static>) -> jni::errors::Result<T>,
    ) -> Result<T, PluginError> {
        let bridge = &self.bridge;
        with_env(self.jvm, |env| f(env, bridge)).map_err(|e| {
            let (kind, m) = match e {
                Failure::Java(m) => (ErrorKind::Failed, m),
                Failure::Jni(e) => (ErrorKind::Connection, format!("JNI: {e}")),
            };
            PluginError::of(
                kind,
                scrub(
                    &format!("connection {}: {what}: {m}", self.key),
                    &self.password,
                    &self.url,
                ),
            )
        })
    }

    fn format_error(&self, what: &str, m: &str) -> PluginError {
        PluginError::new(scrub(
            &format!("connection {}: {what}: {m}", self.key),
            &self.password,
            &self.url,
        ))
    }

    fn void(&self, what: &str, method: &'static jni::strings::JNIStr) -> Result<(), PluginError> {
        self.call(what, |env, b| {
            env.call_method(b, method, jni_sig!("()V"), &[])?.v()
        })
    }

    /// Runs `f` for statement `index` of `count`, at `range` in the text `sql`: a driver's
    /// error is placed in the whole text ([`crate::place`]).
    fn call_placed<T>(
        &self,
        what: &str,
        sql: &str,
        range: std::ops::Range<usize>,
        (index, count): (usize, usize),
        f: impl FnOnce(&mut Env, &JObject<'static>) -> jni::errors::Result<T>,
    ) -> Result<T, PluginError> {
        let bridge = &self.bridge;
        with_env(self.jvm, |env| f(env, bridge)).map_err(|e| match e {
            Failure::Java(m) => PluginError::new(scrub(
                &format!(
                    "connection {}: {what}: {}",
                    self.key,
                    crate::place::describe(&m, sql, range, index, count)
                ),
                &self.password,
                &self.url,
            )),
            Failure::Jni(e) => PluginError::of(
                ErrorKind::Connection,
                format!("connection {}: {what}: JNI: {e}", self.key),
            ),
        })
    }

    /// Runs a script one statement at a time (one call each), so that an error names its
    /// statement and its place in the script.
    fn script(&mut self, sql: &str) -> Result<u64, PluginError> {
        let ranges = statement_ranges(sql, self.dialect);
        let mut changed = 0u64;
        for (i, range) in ranges.iter().enumerate() {
            let statement = &sql[range.clone()];
            let n = self.call_placed(
                "statement failed",
                sql,
                range.clone(),
                (i, ranges.len()),
                |env, b| {
                    let a = string_array(env, &[statement])?;
                    env.call_method(
                        b,
                        jni_str!("script"),
                        jni_sig!("([Ljava/lang/String;)J"),
                        &[JValue::Object(&a)],
                    )?
                    .j()
                },
            )?;
            changed += n.max(0) as u64;
        }
        Ok(changed)
    }

    fn run_query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> Result<u64, PluginError> {
        let batch_rows = batch_rows.clamp(1, i32::MAX as u32) as i32;
        let encoded = codec::params(params).map_err(|m| self.format_error("query", &m))?;
        let header = self.call_placed("query failed", sql, 0..sql.len(), (0, 1), |env, b| {
            let s = env.new_string(sql)?;
            let p = env.byte_array_from_slice(&encoded)?;
            let h = env
                .call_method(
                    b,
                    jni_str!("query"),
                    jni_sig!("(Ljava/lang/String;[BI)[B"),
                    &[
                        JValue::Object(&s),
                        JValue::Object(&p),
                        JValue::Int(batch_rows),
                    ],
                )?
                .l()?;
            bytes_of(env, h)
        })?;
        let names = match codec::header(&header) {
            Ok(n) => n,
            Err(m) => {
                let _ = self.void("closing the query", jni_str!("closeQuery"));
                return Err(self.format_error("query", &m));
            }
        };
        let columns = names.len();
        if let Err(e) = sink.columns(&names) {
            let _ = self.void("closing the query", jni_str!("closeQuery"));
            return Err(e);
        }
        let mut total = 0u64;
        loop {
            let buf = self.call("reading rows failed", |env, b| {
                let a = env
                    .call_method(
                        b,
                        jni_str!("fetch"),
                        jni_sig!("(I)[B"),
                        &[JValue::Int(batch_rows)],
                    )?
                    .l()?;
                bytes_of(env, a)
            })?;
            let rows = match codec::batch(&buf, columns) {
                Ok(r) => r,
                Err(m) => {
                    let _ = self.void("closing the query", jni_str!("closeQuery"));
                    return Err(self.format_error("query", &m));
                }
            };
            let n = rows.len();
            total += n as u64;
            if n > 0
                && let Err(e) = sink.rows(rows)
            {
                let _ = self.void("closing the query", jni_str!("closeQuery"));
                return Err(e);
            }
            if n < batch_rows as usize {
                // The Java side closed the result set when it ran out of rows.
                return Ok(total);
            }
        }
    }

    /// The table as the database spells it, asked once per name.
    fn table(&mut self, schema: Option<&str>, table: &str) -> Result<TableInfo, PluginError> {
        let k = (schema.map(str::to_owned), table.to_owned());
        if let Some(t) = self.tables.get(&k) {
            return Ok(t.clone());
        }
        let what = format!("describing {}", qualified(self.dialect, schema, table));
        let buf = self.call(&what, |env, b| {
            let s = env.new_string(schema.unwrap_or(""))?;
            let t = env.new_string(table)?;
            let a = env
                .call_method(
                    b,
                    jni_str!("describe"),
                    jni_sig!("(Ljava/lang/String;Ljava/lang/String;)[B"),
                    &[JValue::Object(&s), JValue::Object(&t)],
                )?
                .l()?;
            bytes_of(env, a)
        })?;
        let info = codec::table(&buf).map_err(|m| self.format_error(&what, &m))?;
        self.tables.insert(k, info.clone());
        Ok(info)
    }

    fn insert(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[&str],
        rows: &[Row],
    ) -> Result<u64, PluginError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let info = self.table(schema, table)?;
        let d = self.dialect;
        // Columns as the table spells them (unquoted names fold to upper or lower case).
        let cols: Vec<String> = columns
            .iter()
            .map(|c| {
                let real = info
                    .columns()
                    .iter()
                    .find(|i| i.name() == *c)
                    .or_else(|| {
                        info.columns()
                            .iter()
                            .find(|i| i.name().eq_ignore_ascii_case(c))
                    })
                    .map_or(*c, |i| i.name());
                quote(d, real)
            })
            .collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            qualified(d, info.schema(), info.name()),
            cols.join(", "),
            vec!["?"; cols.len()].join(", ")
        );
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != cols.len()) {
            return Err(self.format_error(
                "insert",
                &format!(
                    "row {} of the batch has {} values for {} columns",
                    i + 1,
                    r.len(),
                    cols.len()
                ),
            ));
        }
        let data = codec::rows(rows).map_err(|m| self.format_error("insert", &m))?;
        let count = i32::try_from(rows.len())
            .map_err(|_| self.format_error("insert", "more than 2^31 rows in one batch"))?;
        let width = cols.len() as i32;
        let n = self.call(&format!("inserting into {}", info.name()), |env, b| {
            let s = env.new_string(&sql)?;
            let a = env.byte_array_from_slice(&data)?;
            env.call_method(
                b,
                jni_str!("insert"),
                jni_sig!("(Ljava/lang/String;[BII)J"),
                &[
                    JValue::Object(&s),
                    JValue::Object(&a),
                    JValue::Int(count),
                    JValue::Int(width),
                ],
            )?
            .j()
        })?;
        Ok(n.max(0) as u64)
    }
}

/// `text` without `secret`.
fn redact(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        text.to_owned()
    } else {
        text.replace(secret, "********")
    }
}

/// The secrets a JDBC URL itself may carry: `password=`/`pwd=` properties (after `?`, `&` or
/// `;`) and the password of `user:password@` or `user/password@`.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in url.split(['?', '&', ';']) {
        if let Some((k, v)) = part.split_once('=')
            && matches!(k.trim().to_ascii_lowercase().as_str(), "password" | "pwd")
            && !v.is_empty()
        {
            out.push(v.to_owned());
        }
    }
    if let Some(at) = url.find('@') {
        let before = &url[..at];
        let start = before.rfind(['/', ':']).map_or(0, |i| i + 1);
        let user_part = before.rfind("//").map_or(before, |i| &before[i + 2..]);
        if user_part.contains([':', '/']) && start < before.len() {
            out.push(before[start..].to_owned());
        }
    }
    out.retain(|s| s.len() >= 3);
    out
}

/// `text` without the entry's password and the secrets of its URL.
fn scrub(text: &str, password: &str, url: &str) -> String {
    let mut t = redact(text, password);
    for s in url_secrets(url) {
        t = redact(&t, &s);
    }
    t
}

impl Drop for JdbcConnection {
    fn drop(&mut self) {
        let _ = self.void("closing", jni_str!("close"));
    }
}

impl DatabaseConnection for JdbcConnection {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
        self.script(sql)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> PluginResult<u64> {
        let encoded = codec::params(params).map_err(|m| self.format_error("statement", &m))?;
        self.call_placed("statement failed", sql, 0..sql.len(), (0, 1), |env, b| {
            let s = env.new_string(sql)?;
            let p = env.byte_array_from_slice(&encoded)?;
            env.call_method(
                b,
                jni_str!("execute"),
                jni_sig!("(Ljava/lang/String;[B)J"),
                &[JValue::Object(&s), JValue::Object(&p)],
            )?
            .j()
        })
        .map(|n| n.max(0) as u64)
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        self.run_query(sql, params, batch_rows, sink)
    }

    fn insert_batch(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[&str],
        rows: &[Row],
    ) -> PluginResult<u64> {
        self.insert(schema, table, columns, rows)
    }

    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        // Asked fresh: the table may have changed since an insert looked it up.
        self.tables
            .remove(&(schema.map(str::to_owned), table.to_owned()));
        self.table(schema, table)
    }

    fn begin(&mut self) -> PluginResult<()> {
        self.void("begin", jni_str!("begin"))
    }

    fn commit(&mut self) -> PluginResult<()> {
        self.void("commit", jni_str!("commit"))
    }

    fn rollback(&mut self) -> PluginResult<()> {
        self.void("rollback", jni_str!("rollback"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_urls_are_found_and_scrubbed() {
        assert_eq!(
            url_secrets("jdbc:postgresql://h/db?user=a&password=s3cret&ssl=true"),
            vec!["s3cret".to_owned()]
        );
        assert_eq!(
            url_secrets("jdbc:oracle:thin:scott/tiger@host:1521/x"),
            vec!["tiger".to_owned()]
        );
        assert_eq!(
            url_secrets("jdbc:mysql://root:hunter2@db/x"),
            vec!["hunter2".to_owned()]
        );
        assert!(url_secrets("jdbc:h2:/srv/data/h2db").is_empty());
        let m = scrub(
            "cannot connect to jdbc:mysql://root:hunter2@db/x: bad p4ss",
            "p4ss",
            "jdbc:mysql://root:hunter2@db/x",
        );
        assert!(!m.contains("hunter2") && !m.contains("p4ss"), "{m}");
    }
}
