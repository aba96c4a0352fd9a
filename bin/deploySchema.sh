#!/usr/bin/env bash
# deploySchema.sh [--home DIR] [--status] [--init]
#
# Brings the repository (HOME/repository.db) from any earlier schema version to the current
# one, in one transaction; running it again changes nothing; a repository newer than this
# weft is refused. HOME is --home DIR, else $WEFT_HOME, else the installation's default,
# else ./weft-home (docs/install.md). When HOME is a default and holds no repository, nothing
# is created (exit 2, naming the path) unless --init asks for a new one.
set -euo pipefail
# Symlinks are followed to the installation; a copy elsewhere uses $WEFT_BIN or weft on PATH.
self=$(readlink -f "${BASH_SOURCE[0]}")
if [ -f "${self%/*}/_weft_bin" ]; then . "${self%/*}/_weft_bin"; else weft_find_bin() { if [ -n "${WEFT_BIN:-}" ]; then echo "$WEFT_BIN"; else command -v weft || { echo "${0##*/}: cannot find the weft binary: set WEFT_BIN or put weft on PATH" >&2; return 1; }; fi; }; fi
bin=$(weft_find_bin "$self") || exit 2
exec "$bin" schema "$@"
