#!/usr/bin/env bash
# Install bubblewrap 0.12.0 from its release tarball, verified against a pinned SHA-256 before
# anything reads its contents, built with meson (no setuid) into a prefix. On kernels where
# AppArmor restricts unprivileged user namespaces, also install a profile granting `userns` to
# that one executable. Run with --help for the details.
set -euo pipefail

readonly PROG=install_bwrap.sh
readonly BWRAP_VERSION=0.12.0
readonly TARBALL_NAME="bubblewrap-${BWRAP_VERSION}.tar.xz"
readonly TARBALL_SHA256=9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314
readonly DEFAULT_URL="https://github.com/containers/bubblewrap/releases/download/v${BWRAP_VERSION}/${TARBALL_NAME}"
readonly USERNS_SYSCTL=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
readonly PROFILE_NAME=bwrap-lean-eval
readonly PROFILE_DIR=/etc/apparmor.d
readonly AA_PROFILES=/sys/kernel/security/apparmor/profiles
SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly SCRIPT_DIR
readonly PROFILE_TEMPLATE="${SCRIPT_DIR}/apparmor/${PROFILE_NAME}"

usage() {
  cat <<EOF
usage: ${PROG} [--prefix DIR] [--dry-run] [--no-apparmor]
       ${PROG} --check
       ${PROG} [--prefix DIR] --apparmor-only
       ${PROG} [--prefix DIR] --print-apparmor-profile
       ${PROG} --help

Install bubblewrap ${BWRAP_VERSION} as DIR/bin/bwrap (DIR defaults to /usr/local).

  0. Check every tool the steps below need, before anything is downloaded or read; name
     every missing one at once (with the Debian/Ubuntu packages), exit 1.
  1. Take the tarball from BWRAP_TARBALL (a local file, for offline runners) or, only when
     BWRAP_TARBALL is unset or empty, download it from BWRAP_URL (default: ${DEFAULT_URL}).
  2. Copy it into a private temporary directory and check its SHA-256 against the pinned
     ${TARBALL_SHA256}.
     Any mismatch is refused before anything is unpacked (exit 1, one line on stderr).
  3. Unpack and build with meson and ninja (setuid support is never enabled; the installed
     binary is checked to carry no setuid or setgid bit), then 'ninja install'.
  4. If ${USERNS_SYSCTL} reads 1 (Ubuntu 23.10 and later), install the AppArmor profile
     ${PROFILE_DIR}/${PROFILE_NAME}, rendered from scripts/apparmor/${PROFILE_NAME}, which
     grants 'userns' to DIR/bin/bwrap and nothing else, and load it with apparmor_parser.
     The binary and each directory above it must then be owned by root and not writable by
     group or others, or the grant would extend to whoever can replace the file.
  5. Print one line on stdout: bwrap <version> <sha256 of the binary> <path>.
     Build output and progress notes go to stderr.

Options:
  --prefix DIR              install prefix (default /usr/local); canonicalized, and limited to
                            the characters A-Z a-z 0-9 . _ + - / so that the AppArmor profile
                            names exactly one file
  --dry-run                 verify the tarball and the build tools, print the plan, stop
                            before unpacking
  --check                   step 0 only: exit 0 when every tool is there (lean-eval prepare
                            asks this before it downloads anything)
  --no-apparmor             skip step 4 even where the restriction is on
  --apparmor-only           run only step 4 for an existing DIR/bin/bwrap; refused unless
                            the restriction is on
  --print-apparmor-profile  print the rendered profile for DIR/bin/bwrap and exit
  -h, --help                show this help and exit

Needs: sha256sum, tar, xz, meson, ninja, a C compiler, pkg-config and the libcap development
files; curl or wget only when downloading; root and apparmor_parser only for step 4. On
Debian/Ubuntu: apt-get install xz-utils meson ninja-build gcc pkg-config libcap-dev curl
Exit status: 0 success, 1 refusal or failure, 2 usage error.
EOF
}

die() {
  printf '%s: %s\n' "$PROG" "$*" >&2
  exit 1
}

usage_error() {
  printf '%s: %s (see --help)\n' "$PROG" "$*" >&2
  exit 2
}

note() {
  printf '%s: %s\n' "$PROG" "$*" >&2
}

# --- arguments -------------------------------------------------------------------------------
prefix=/usr/local
mode=install          # install | apparmor-only | print-profile
dry_run=0
apparmor=auto         # auto | no
while (($# > 0)); do
  case "$1" in
    --prefix)
      (($# >= 2)) || usage_error "--prefix needs a directory"
      prefix="$2"
      shift 2
      ;;
    --prefix=*)
      prefix="${1#--prefix=}"
      shift
      ;;
    --dry-run) dry_run=1; shift ;;
    --check) mode="check"; shift ;;
    --no-apparmor) apparmor=no; shift ;;
    --apparmor-only) mode="apparmor-only"; shift ;;
    --print-apparmor-profile) mode="print-profile"; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; (($# == 0)) || usage_error "unexpected argument '$1'" ;;
    -*) usage_error "unknown option '$1'" ;;
    *) usage_error "unexpected argument '$1'" ;;
  esac
done

[[ -n "$prefix" ]] || usage_error "--prefix must not be empty"
if [[ "$mode" != install ]]; then
  ((dry_run == 0)) || usage_error "--dry-run applies to the install only"
  [[ "$apparmor" == auto ]] || usage_error "--no-apparmor contradicts --apparmor-only"
fi
command -v realpath >/dev/null 2>&1 || die "missing required tool: realpath"
prefix="$(realpath -m -- "$prefix")"
# The profile attaches to a path; AppArmor treats * ? [ ] { } ^ and others as patterns and a
# quote or space would need escaping. Allow only characters that mean themselves.
[[ "$prefix" =~ ^/[A-Za-z0-9._+/-]*$ ]] \
  || usage_error "--prefix '${prefix}' may contain only A-Z a-z 0-9 . _ + - /"
readonly prefix
readonly bwrap_path="${prefix%/}/bin/bwrap"

# --- AppArmor --------------------------------------------------------------------------------
render_profile() {
  [[ -f "$PROFILE_TEMPLATE" && -r "$PROFILE_TEMPLATE" ]] \
    || die "AppArmor profile template ${PROFILE_TEMPLATE} is missing"
  local template rendered
  template="$(<"$PROFILE_TEMPLATE")"
  [[ "$template" == *@BWRAP_PATH@* ]] || die "${PROFILE_TEMPLATE} has no @BWRAP_PATH@ placeholder"
  rendered="${template//@BWRAP_PATH@/"$bwrap_path"}"
  [[ "$rendered" != *@*@* ]] || die "${PROFILE_TEMPLATE} has an unknown @placeholder@"
  printf '%s\n' "$rendered"
}

restriction_on() {
  local value=""
  [[ -r "$USERNS_SYSCTL" ]] && value="$(<"$USERNS_SYSCTL")"
  [[ "$value" == 1 ]]
}

restriction_state() {
  if [[ -r "$USERNS_SYSCTL" ]]; then
    printf 'kernel.apparmor_restrict_unprivileged_userns = %s' "$(<"$USERNS_SYSCTL")"
  else
    printf 'kernel.apparmor_restrict_unprivileged_userns is absent'
  fi
}

# Refuse unless only root can replace the file the profile names: the binary itself and every
# directory above it owned by uid 0 and not writable by group or others.
check_root_controlled() {
  local path="$1" owner mode
  [[ ! -L "$path" ]] || die "${path} is a symlink; refusing to grant it userns"
  [[ -f "$path" ]] || die "${path} is not a regular file; install bubblewrap first"
  while :; do
    read -r owner mode < <(stat -c '%u %a' -- "$path") || die "cannot stat ${path}"
    [[ "$owner" == 0 ]] || die "${path} is owned by uid ${owner}, not root; refusing to grant userns"
    ((((8#$mode) & 8#022) == 0)) \
      || die "${path} is writable by group or others (mode ${mode}); refusing to grant userns"
    [[ "$path" != / ]] || break
    path="$(dirname -- "$path")"
  done
}

install_profile() {
  restriction_on || die "refusing the AppArmor step: $(restriction_state), not 1"
  ((EUID == 0)) || die "the AppArmor step needs root (writes ${PROFILE_DIR}/${PROFILE_NAME})"
  command -v apparmor_parser >/dev/null 2>&1 || die "missing required tool: apparmor_parser"
  [[ -d "$PROFILE_DIR" ]] || die "${PROFILE_DIR} does not exist; is AppArmor installed?"
  check_root_controlled "$bwrap_path"
  local profile staged target="${PROFILE_DIR}/${PROFILE_NAME}"
  profile="$(render_profile)"
  staged="$(mktemp "${PROFILE_DIR}/.${PROFILE_NAME}.XXXXXX")"
  if ! { printf '%s\n' "$profile" >"$staged" && chmod 0644 -- "$staged" \
    && mv -f -- "$staged" "$target"; }; then
    rm -f -- "$staged"
    die "cannot write ${target}"
  fi
  apparmor_parser -r -- "$target" >&2 || die "apparmor_parser could not load ${target}"
  if [[ -r "$AA_PROFILES" ]] && ! grep -q "^${PROFILE_NAME} " "$AA_PROFILES"; then
    die "profile ${PROFILE_NAME} is not loaded after apparmor_parser -r ${target}"
  fi
  note "AppArmor profile ${target} loaded: userns granted to ${bwrap_path} only"
}

if [[ "$mode" == print-profile ]]; then
  render_profile
  exit 0
fi
if [[ "$mode" == apparmor-only ]]; then
  install_profile
  exit 0
fi

# --- every tool, checked before anything is downloaded or read --------------------------------
# Each missing one is named at once with its Debian/Ubuntu package, so one try shows them all.
missing=()
packages=()
need() {
  missing+=("$1")
  [[ " ${packages[*]} " == *" $2 "* ]] || packages+=("$2")
}
for tool in sha256sum:coreutils mktemp:coreutils tar:tar xz:xz-utils meson:meson \
  ninja:ninja-build pkg-config:pkg-config; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need "${tool%%:*}" "${tool#*:}"
done
if [[ -n "${CC:-}" ]]; then
  command -v "${CC%% *}" >/dev/null 2>&1 || need "a C compiler (CC=${CC})" gcc
elif ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1 \
  && ! command -v clang >/dev/null 2>&1; then
  need "a C compiler (cc, gcc or clang)" gcc
fi
if command -v pkg-config >/dev/null 2>&1 && ! pkg-config --exists libcap 2>/dev/null; then
  need "the libcap development files (pkg-config libcap)" libcap-dev
elif ! command -v pkg-config >/dev/null 2>&1; then
  need "the libcap development files" libcap-dev
fi
if [[ -z "${BWRAP_TARBALL:-}" ]] && ! command -v curl >/dev/null 2>&1 \
  && ! command -v wget >/dev/null 2>&1; then
  need "curl or wget (or set BWRAP_TARBALL to a downloaded ${TARBALL_NAME})" curl
fi
if ((${#missing[@]} > 0)); then
  list="$(printf '%s, ' "${missing[@]}")"
  die "missing required tools: ${list%, }; on Debian/Ubuntu: apt-get install ${packages[*]}"
fi
if [[ "$mode" == check ]]; then
  exit 0
fi

# --- obtain and verify the tarball (nothing is unpacked before this passes) -------------------

work=""
cleanup() {
  if [[ -n "$work" ]]; then
    rm -rf -- "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
umask 022
work="$(mktemp -d "${TMPDIR:-/tmp}/install_bwrap.XXXXXXXX")" || die "cannot create a temporary directory"
chmod 0700 -- "$work"
tarball="${work}/${TARBALL_NAME}"

if [[ -n "${BWRAP_TARBALL:-}" ]]; then
  source_desc="BWRAP_TARBALL=${BWRAP_TARBALL}"
  [[ -e "$BWRAP_TARBALL" ]] || die "${source_desc}: no such file"
  [[ -f "$BWRAP_TARBALL" ]] || die "${source_desc}: not a regular file"
  [[ -r "$BWRAP_TARBALL" ]] || die "${source_desc}: not readable"
  # Hash and unpack the same private copy, so the file cannot change between the two.
  cp -- "$BWRAP_TARBALL" "$tarball" || die "${source_desc}: cannot copy it"
else
  url="${BWRAP_URL:-$DEFAULT_URL}"
  source_desc="${url}"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$tarball" -- "$url" || die "download of ${url} failed"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$tarball" -- "$url" || die "download of ${url} failed"
  fi
fi

read -r actual _ < <(sha256sum <"$tarball") || die "cannot hash ${source_desc}"
if [[ "$actual" != "$TARBALL_SHA256" ]]; then
  die "refusing ${source_desc}: sha256 ${actual} does not match the pinned ${TARBALL_SHA256} of ${TARBALL_NAME}; nothing unpacked"
fi
note "verified ${TARBALL_NAME} sha256 ${actual}"

if ((dry_run)); then
  if [[ "$apparmor" == no ]]; then
    aa_plan="skipped (--no-apparmor)"
  elif restriction_on; then
    aa_plan="install ${PROFILE_DIR}/${PROFILE_NAME} granting userns to ${bwrap_path}"
  else
    aa_plan="not needed ($(restriction_state))"
  fi
  printf 'dry run: would build bubblewrap %s and install %s\n' "$BWRAP_VERSION" "$bwrap_path"
  printf 'dry run: AppArmor: %s\n' "$aa_plan"
  exit 0
fi

# --- unpack, build, install ------------------------------------------------------------------
mkdir -- "${work}/src"
tar -xJf "$tarball" -C "${work}/src" --no-same-owner --no-same-permissions
srcdir="${work}/src/bubblewrap-${BWRAP_VERSION}"
[[ -f "${srcdir}/meson.build" ]] || die "${TARBALL_NAME} has no bubblewrap-${BWRAP_VERSION}/meson.build"

options_file=""
for f in "${srcdir}/meson.options" "${srcdir}/meson_options.txt"; do
  if [[ -f "$f" ]]; then
    options_file="$f"
    break
  fi
done
has_option() {
  [[ -n "$options_file" ]] && grep -q "'$1'" -- "$options_file"
}
meson_args=(--prefix "$prefix" --bindir bin --buildtype release --wrap-mode nodownload)
# Pass only options this release declares: meson rejects unknown ones.
for opt in tests=false man=disabled bash_completion=disabled zsh_completion=disabled \
  support_setuid=false; do
  if has_option "${opt%%=*}"; then
    meson_args+=("-D${opt}")
  fi
done

note "building in ${work}/build"
meson setup "${meson_args[@]}" "${work}/build" "$srcdir" >&2
ninja -C "${work}/build" >&2
ninja -C "${work}/build" install >&2

[[ -f "$bwrap_path" && ! -L "$bwrap_path" ]] || die "${bwrap_path} was not installed"
[[ ! -u "$bwrap_path" ]] || die "${bwrap_path} has the setuid bit; refusing (chmod u-s it)"
[[ ! -g "$bwrap_path" ]] || die "${bwrap_path} has the setgid bit; refusing (chmod g-s it)"
version_line="$("$bwrap_path" --version)" || die "${bwrap_path} --version failed"
read -r _ installed_version _ <<<"$version_line"
[[ "$installed_version" == "$BWRAP_VERSION" ]] \
  || die "${bwrap_path} reports '${version_line}', expected bubblewrap ${BWRAP_VERSION}"
read -r binary_sha _ < <(sha256sum <"$bwrap_path")

# --- AppArmor --------------------------------------------------------------------------------
if [[ "$apparmor" == no ]]; then
  note "AppArmor step skipped (--no-apparmor; $(restriction_state))"
elif restriction_on; then
  install_profile
else
  note "no AppArmor profile needed: $(restriction_state)"
fi

printf 'bwrap %s %s %s\n' "$installed_version" "$binary_sha" "$bwrap_path"
