#!/usr/bin/env bash
# deploySheet.sh --url URL --test --verbose --option OPTIONS --file FILE | --dir DIR [--prune FOLDER]...
#
# Deploys a repository file (.dsr: worksheets, connections, folders) to the weft service.
#   --url URL        service endpoint; default: the URL of key file entry weft_server (getkey)
#   --test           only test the deployment (dryRun=true)
#   --verbose        print the effective URL, options and file
#   --option JSON    deploy options, e.g. '{"validate": "true", "dryRun": "false", "intoFolder": 12}'
#   --file FILE      the .dsr file; default: standard input
#   --dir DIR        every .dsr file below DIR, deployed as one project in one transaction
#   --prune FOLDER   with --dir: delete what the project no longer holds below FOLDER (repeatable)
# Prints "Deployment without errors" and exits 0 on success. Otherwise prints each problem
# as FILE:LINE:COLUMN: message and exits 1 (invalid content), 2 (usage), 3 (service not
# reachable), 4 (request refused) or 5 (service failure).
set -euo pipefail
# Symlinks are followed to the installation; a copy elsewhere uses $WEFT_BIN or weft on PATH.
self=$(readlink -f "${BASH_SOURCE[0]}")
if [ -f "${self%/*}/_weft_bin" ]; then . "${self%/*}/_weft_bin"; else weft_find_bin() { if [ -n "${WEFT_BIN:-}" ]; then echo "$WEFT_BIN"; else command -v weft || { echo "${0##*/}: cannot find the weft binary: set WEFT_BIN or put weft on PATH" >&2; return 1; }; fi; }; fi
bin=$(weft_find_bin "$self") || exit 2
exec "$bin" deploy "$@"
