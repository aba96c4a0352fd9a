#!/usr/bin/env bash
# install.sh [--profile release|debug] [--no-build] [--from DIR] [--home DIR] [--user USER] PREFIX
#
# Installs weft from this checkout into PREFIX (docs/install.md):
#   PREFIX/bin/          weft, deploySheet.sh, deploySchema.sh, getkey, jdbcManager, and
#                        jdbcList beside jdbcManager (SPEC 4.6)
#   PREFIX/plugins/      the plugin libraries, which the installed weft loads
#   PREFIX/drivers/      the JDBC driver jars jdbcManager installs (kept on a reinstall)
#   PREFIX/sdk/          the plugin sdk's sources, for `weft plugins new`
#   PREFIX/default-home  the installation's default HOME: --home DIR, else PREFIX/home
#   PREFIX/lib/systemd/system/weft.service   a systemd unit: `weft serve` as USER
#
#   --profile P   the cargo profile to build and install (default release)
#   --no-build    install what is already built (target/P), without running cargo
#   --from DIR    install the weft binary and plugin libraries of DIR (a cargo output
#                 folder or an unpacked build), without running cargo
#   --home DIR    the default HOME of the installed weft (default PREFIX/home, or what an
#                 earlier install wrote to PREFIX/default-home)
#   --user USER   the service user of the systemd unit (default weft); when given, HOME is
#                 made theirs (needs root)
#
# Installing again updates the code in place. Every file is replaced by a rename, so a
# running server keeps the files it opened; restart it to use the new ones. An edited
# jdbcList and default-home are kept (the delivered list is written beside as
# jdbcList.dist). Exit codes: 0 installed, 1 failed, 2 usage.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
bad() { echo "install.sh: $*; see install.sh --help" >&2; exit 2; }
die() { echo "install.sh: $*" >&2; exit 1; }

profile=release build=1 from="" home="" user="" user_given=0 prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) [ $# -ge 2 ] || bad "--profile needs a value"; profile=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --from) [ $# -ge 2 ] || bad "--from needs a folder"; from=$2; build=0; shift 2 ;;
    --home) [ $# -ge 2 ] || bad "--home needs a folder"; home=$2; shift 2 ;;
    --user) [ $# -ge 2 ] || bad "--user needs a name"; user=$2; user_given=1; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) bad "unknown option $1" ;;
    *) [ -z "$prefix" ] || bad "one PREFIX only (got $prefix and $1)"
       prefix=$1; shift ;;
  esac
done
[ -n "$prefix" ] || bad "PREFIX is missing"
case "$profile" in release|debug) ;; *) bad "--profile is release or debug, not $profile" ;; esac
user=${user:-weft}

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
[ -f "$root/Cargo.toml" ] && [ -d "$root/plugins" ] || die "run me from a weft checkout ($root is not one)"
mkdir -p "$prefix" || die "cannot create $prefix"
prefix=$(cd "$prefix" && pwd)
[ "$prefix" != "$root" ] || die "PREFIX is the checkout itself; choose another folder"

# The plugin libraries are the crates in plugins/ named weft_plugin_* (not the support crates).
plugin_libs=()
for manifest in "$root"/plugins/*/Cargo.toml; do
  name=$(sed -n 's/^name *= *"\(weft_plugin_[a-z0-9_]*\)".*/\1/p' "$manifest" | head -n 1)
  [ -n "$name" ] && plugin_libs+=("lib$name.so")
done
[ "${#plugin_libs[@]}" -gt 0 ] || die "no plugin crates found in $root/plugins"

if [ "$build" = 1 ]; then
  echo "== building weft and its plugins ($profile)"
  # The workspace but its end-to-end tests, whose crate turns on the fault points
  # (WEFT_FAULT): an installed binary has none. (After a build with the tests, the host is
  # compiled again for this one.)
  (cd "$root" && cargo build --profile "$([ "$profile" = debug ] && echo dev || echo release)" --workspace --exclude weft_tests) \
    || die "the build failed"
fi
target=${from:-"${CARGO_TARGET_DIR:-$root/target}/$profile"}
[ -x "$target/weft" ] || die "$target/weft is missing: build it (cargo build --$profile) or drop --no-build"
for lib in "${plugin_libs[@]}"; do
  [ -f "$target/$lib" ] || die "$target/$lib is missing: build the plugins (cargo build --workspace --$profile) or drop --no-build"
done

# Copies $1 to $2 by way of a temporary file in the same folder and a rename: a running
# process that has the old file open or mapped keeps it intact.
put() {
  local tmp
  tmp=$(mktemp "$(dirname "$2")/.install.XXXXXX")
  cp "$1" "$tmp" && chmod "$3" "$tmp" && mv -f "$tmp" "$2" || { rm -f "$tmp"; die "cannot install $2"; }
}

echo "== installing into $prefix"
mkdir -p "$prefix/bin" "$prefix/plugins" "$prefix/drivers" "$prefix/lib/systemd/system"
put "$target/weft" "$prefix/bin/weft" 755
for script in deploySheet.sh deploySchema.sh getkey jdbcManager; do
  put "$root/bin/$script" "$prefix/bin/$script" 755
done
put "$root/bin/_weft_bin" "$prefix/bin/_weft_bin" 644
for lib in "${plugin_libs[@]}"; do
  put "$target/$lib" "$prefix/plugins/$lib" 755
done
# The copies servers load (never the installed files, which a later install may rewrite):
# one per library and build, named by the first 16 hex digits of its SHA-256, shared by
# every HOME (the service user cannot write here); older builds' copies go.
mkdir -p "$prefix/plugins/.loaded" && chmod 755 "$prefix/plugins/.loaded"
for lib in "${plugin_libs[@]}"; do
  hash=$(sha256sum "$prefix/plugins/$lib" | cut -c1-16)
  stem=${lib%.so}
  copy="$prefix/plugins/.loaded/$stem-$hash.so"
  [ -f "$copy" ] || put "$prefix/plugins/$lib" "$copy" 444
  for old in "$prefix/plugins/.loaded/$stem"-????????????????.so; do
    if [ -e "$old" ] && [ "$old" != "$copy" ]; then rm -f "$old"; fi
  done
done
if [ -f "$prefix/bin/jdbcList" ] && ! cmp -s "$root/jdbcList" "$prefix/bin/jdbcList"; then
  put "$root/jdbcList" "$prefix/bin/jdbcList.dist" 644
  echo "kept the edited $prefix/bin/jdbcList; the delivered list is $prefix/bin/jdbcList.dist"
else
  put "$root/jdbcList" "$prefix/bin/jdbcList" 644
fi

if [ -n "$home" ]; then
  mkdir -p "$home" || die "cannot create HOME $home"
  home=$(cd "$home" && pwd)
elif [ -f "$prefix/default-home" ]; then
  home=$(grep -v '^[[:space:]]*\(#\|$\)' "$prefix/default-home" | head -n 1 || true)
  case "$home" in /*) ;; "") home="$prefix/home" ;; *) home="$prefix/$home" ;; esac
else
  home="$prefix/home"
fi
mkdir -p "$home" || die "cannot create HOME $home"
tmp=$(mktemp "$prefix/.install.XXXXXX")
printf '# The default HOME of this installation (docs/install.md); --home and WEFT_HOME win.\n%s\n' "$home" >"$tmp"
# Readable by every user: the service user's scripts and server read it (mktemp makes 0600).
chmod 644 "$tmp"
mv -f "$tmp" "$prefix/default-home"
if [ "$user_given" = 1 ]; then
  chown -R "$user:" "$home" || die "cannot give $home to $user (run as root, or create the user first: useradd --system --home-dir $home --shell /usr/sbin/nologin $user)"
fi

unit="$prefix/lib/systemd/system/weft.service"
tmp=$(mktemp "$prefix/lib/systemd/system/.install.XXXXXX")
cat >"$tmp" <<UNIT
# weft as a systemd service, written by bin/install.sh (docs/install.md).
# Enable it with: systemctl link $unit && systemctl enable --now weft
[Unit]
Description=weft, a server for data transformations
Documentation=file://$prefix/README.md
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=$user
Environment=WEFT_HOME=$home
ExecStart=$prefix/bin/weft serve
# SIGTERM stops the server cleanly: running actions get up to 30 s to end and be recorded,
# then a few seconds for open requests, so systemd waits longer than that before it kills;
# a run it interrupts is settled by its commit markers at the next start.
KillSignal=SIGTERM
TimeoutStopSec=45
Restart=on-failure
RestartSec=5
LimitNOFILE=65536
NoNewPrivileges=true
ProtectSystem=full
ReadWritePaths=$home

[Install]
WantedBy=multi-user.target
UNIT
chmod 644 "$tmp" && mv -f "$tmp" "$unit"
put "$root/README.md" "$prefix/README.md" 644
mkdir -p "$prefix/docs" && for doc in "$root"/docs/*; do [ -f "$doc" ] || continue; put "$doc" "$prefix/docs/${doc##*/}" 644; done
# The sdk's sources: `weft plugins new` writes plugin crates that build against PREFIX/sdk.
mkdir -p "$prefix/sdk/src" && put "$root/sdk/Cargo.toml" "$prefix/sdk/Cargo.toml" 644
for f in "$root"/sdk/src/*.rs; do put "$f" "$prefix/sdk/src/${f##*/}" 644; done
# Its companion for SQL modules (docs/plugin-guide.md), beside it: the path to the sdk in its
# manifest is made the installed one.
mkdir -p "$prefix/sql_support/src"
manifest=$(mktemp "$prefix/sql_support/.install.XXXXXX")
sed 's|path = "../../sdk"|path = "../sdk"|' "$root/host/sql_support/Cargo.toml" >"$manifest" \
  && grep -q 'path = "../sdk"' "$manifest" && chmod 644 "$manifest" \
  && mv -f "$manifest" "$prefix/sql_support/Cargo.toml" \
  || { rm -f "$manifest"; die "cannot install $prefix/sql_support/Cargo.toml"; }
for f in "$root"/host/sql_support/src/*.rs; do put "$f" "$prefix/sql_support/src/${f##*/}" 644; done

version=$("$prefix/bin/weft" --version) || die "the installed $prefix/bin/weft does not start"
echo "installed $version into $prefix"
echo "  HOME (data):  $home  (from $prefix/default-home)"
echo "  service unit: $unit  (User=$user)"
echo "  add $prefix/bin to PATH; start with: weft serve   (or systemctl link $unit)"
