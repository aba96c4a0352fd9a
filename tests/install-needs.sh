#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust, only what is missing (idempotent); run by
# ./test.sh and so by .ci/run. On Debian and Ubuntu it uses apt-get (through sudo when not
# root); elsewhere it names what is missing and exits 1.
# - Node.js and npm, for the differential test of the HJSON reader against hjson-js;
# - a JDK (javac checks the JDBC bridge's committed helper class; the JVM runs the drivers);
# - tzdata (a test recognises a copied /etc/localtime by the bytes of its zone file);
# - PostgreSQL (the JDBC tests start their own server) and the JDBC driver jars of Debian;
# - util-linux (prlimit), mount (a tmpfs) and procps (kill): the fault tests lower a running
#   server's descriptor limit, fill a small disk and signal jdbcManager;
# - Chromium, for the web page's tests in a real browser;
# - promtool (Debian's prometheus package), for the metrics and the example alert rules;
# - libclang, which the build itself needs: PostgreSQL's own SQL parser (pg_query, C) is
#   bound with bindgen.
set -euo pipefail
packages=()
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1 || packages+=(libclang-dev)
command -v prlimit >/dev/null 2>&1 || packages+=(util-linux)
command -v mount >/dev/null 2>&1 || packages+=(mount)
command -v kill >/dev/null 2>&1 || packages+=(procps)
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
command -v javac >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
test -f /usr/share/zoneinfo/Europe/Berlin || packages+=(tzdata)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || packages+=(postgresql)
command -v psql >/dev/null 2>&1 || packages+=(postgresql-client)
# The TLS tests make their server's certificates with openssl and speak to it with curl.
command -v openssl >/dev/null 2>&1 || packages+=(openssl)
command -v curl >/dev/null 2>&1 || packages+=(curl)
# The reference process module (examples/modules/min_rows) is Python.
command -v python3 >/dev/null 2>&1 || packages+=(python3)
# docs/dsr.schema.json is checked with a real JSON Schema validator (Python's jsonschema).
python3 -c "import jsonschema" >/dev/null 2>&1 || packages+=(python3-jsonschema)
# The notification tests mail a real SMTP server (aiosmtpd, for Debian's Python).
if command -v dpkg >/dev/null 2>&1; then
  dpkg -s python3-aiosmtpd >/dev/null 2>&1 || packages+=(python3-aiosmtpd)
fi
# The History benchmark compares with the same SQL in the sqlite3 shell.
command -v sqlite3 >/dev/null 2>&1 || packages+=(sqlite3)
# promtool checks /metrics and the example alert rules (docs/alerts) and runs their tests.
command -v promtool >/dev/null 2>&1 || packages+=(prometheus)
# The web page's tests drive a real headless Chromium (tests/src/browser.rs).
test -x /usr/bin/chromium || packages+=(chromium)
for jar in postgresql:libpostgresql-jdbc-java h2:libh2-java hsqldb:libhsqldb-java \
  csvjdbc:libcsvjdbc-java sqlite-jdbc:libxerial-sqlite-jdbc-java \
  mariadb-java-client:libmariadb-java; do
  test -f "/usr/share/java/${jar%%:*}.jar" || packages+=("${jar#*:}")
done
# The native part of the SQLite JDBC driver, which the JDBC benchmark's Java program uses.
if command -v dpkg >/dev/null 2>&1; then
  dpkg -s libxerial-sqlite-jdbc-jni >/dev/null 2>&1 || packages+=(libxerial-sqlite-jdbc-jni)
fi
[ "${#packages[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-needs.sh: the tests need these (Debian package names): ${packages[*]}; install them with your system's package manager" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "install-needs.sh: the tests need: ${packages[*]}; as root run: apt-get update && apt-get install -y ${packages[*]}" >&2
    exit 1
  }
  as_root=(sudo)
fi
echo "install-needs.sh: installing what the tests need: ${packages[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
