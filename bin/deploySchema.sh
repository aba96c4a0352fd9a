#!/usr/bin/env bash
# deploySchema.sh [--home DIR] [--status]
#
# Brings the repository (HOME/repository.db) from any earlier schema version to the current
# one, in one transaction; running it again changes nothing; a repository newer than this
# weft is refused. HOME is --home DIR, else $WEFT_HOME, else ./weft-home.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_weft_bin"
bin=$(weft_find_bin) || exit 2
exec "$bin" schema "$@"
