#!/usr/bin/env bash
# Fetches the SQL corpus of the SQL-check benchmark (tests/benches/sql_corpus.rs): the
# statements of PostgreSQL's own regression tests (src/test/regress/sql) and of SQLite's
# test suite (test/*.test), from the Debian source packages of the databases this machine
# runs (postgresql-15, sqlite3), into target/sql-corpus. Adds a deb-src source for
# bookworm when none is there (as root, through sudo when not). Run by hand, not by CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/sql-corpus
if [ -d "$out/postgresql/sql" ] && [ -d "$out/sqlite/test" ]; then
  echo "fetch.sh: $out is there"
  exit 0
fi
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    | "${as_root[@]}" tee /etc/apt/sources.list.d/weft-sql-corpus.sources >/dev/null
  "${as_root[@]}" apt-get update -qq
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source --download-only -qq postgresql-15 sqlite3 2>/dev/null)
mkdir -p "$out/postgresql" "$out/sqlite"
tar -xjf "$work"/postgresql-15_*.orig.tar.bz2 -C "$work" --wildcards '*/src/test/regress/sql/*' '*/src/test/regress/parallel_schedule'
cp -r "$work"/postgresql-*/src/test/regress/sql "$out/postgresql/"
cp "$work"/postgresql-*/src/test/regress/parallel_schedule "$out/postgresql/"
tar -xJf "$work"/sqlite3_*.orig.tar.xz -C "$work" --wildcards '*/test/*.test'
cp -r "$work"/sqlite*/test "$out/sqlite/"
echo "fetch.sh: $(ls "$out/postgresql/sql" | wc -l) PostgreSQL files, $(ls "$out/sqlite/test" | wc -l) SQLite files in $out"
