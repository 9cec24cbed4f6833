# DirectML on Linux for the harness: source it as root (`source .ci/dml-chain.sh`); CI does. Each piece only where
# it is missing (docs/directml-on-linux.md#setting-it-up):
#   - Wine, Xvfb, mingw-w64 (builds the harness's DirectML runner), the Vulkan loader and vulkaninfo
#   - a Vulkan driver: where vulkaninfo lists a real GPU, its driver, and nothing is installed; else lavapipe
#     (software Vulkan) of Mesa 23 or newer. Debian 12's own Mesa 22 lacks VK_EXT_mutable_descriptor_type, which
#     vkd3d-proton needs: then Mesa 25 comes from bookworm-backports (the suite is added, on the Debian mirror that
#     apt's sources already use, where they do not name it yet)
#   - an X display for Wine's Vulkan (Xvfb on :$DMLWINE_DISPLAY, default 93; one already running there is reused)
#   - DMLCONF_VKD3D_PROTON: kept where set; else the lab's prebuilt vkd3d-proton beside this checkout (CI's cache:
#     ../shared/dml-wine/vkd3d-proton/x64, or DMLCHAIN_PREBUILT); else the one .ci/vkd3d-proton/build.sh built into
#     the cache; else it says how to build it (patched for Wine 8.0: docs/directml-on-linux.md#vkd3d-proton)
# Packages come from Debian 12 (bookworm) only: on another system it installs nothing, and where a piece is missing
# it says which in one line. A failed apt step leaves no apt source behind. The onnxruntime-directml wheel is
# downloaded by the harness on first use. Then: python3 -m conformance doctor.
# Tests (tests/test_dml_chain_script.py) run it on a pretend system: DMLCHAIN_SYSROOT is put before every system
# file it reads or writes (os-release, apt's sources, the X socket and lock); apt-get, dpkg-query, vulkaninfo and
# Xvfb are whatever PATH finds.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then echo "source this file: source ${BASH_SOURCE[0]}" >&2; exit 2; fi

_dml_chain_debian12() {  # _dml_chain_debian12 WHAT: 0 on Debian 12; else one line: WHAT is for the user to install
  local release=${DMLCHAIN_SYSROOT:-}/etc/os-release id version name
  id=$(sed -n 's/^ID=//p' "$release" 2>/dev/null | tr -d "\"'")
  version=$(sed -n 's/^VERSION_ID=//p' "$release" 2>/dev/null | tr -d "\"'")
  name=$(sed -n 's/^PRETTY_NAME=//p' "$release" 2>/dev/null | tr -d "\"'")
  [ "$id:$version" = debian:12 ] && return 0
  echo "dml-chain: $1 from Debian 12's packages, but this is ${name:-a system that $release does not name}: install that with this system's own packages (docs/directml-on-linux.md#setting-it-up)" >&2
  return 1
}

_dml_chain_mirror() {  # _dml_chain_mirror BUT: the URI of Debian 12's main suite in apt's sources (one-line or
  local apt=${DMLCHAIN_SYSROOT:-}/etc/apt file uri  # deb822 format), in any file but BUT
  for file in "$apt"/sources.list "$apt"/sources.list.d/*.list "$apt"/sources.list.d/*.sources; do
    [ -f "$file" ] && [ "$file" != "$1" ] || continue
    uri=$(awk '
      function stanza() { if (suites ~ /(^| )bookworm( |$)/ && uri != "") { print uri; done = 1; exit } uri = ""; suites = "" }
      $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { if ($(i + 1) == "bookworm") { print $i; done = 1; exit } break } next }
      tolower($1) == "uris:" { uri = $2; next }
      tolower($1) == "suites:" { $1 = ""; suites = substr($0, 2); next }
      /^[ \t]*$/ { stanza() }
      END { if (!done) stanza() }' "$file" </dev/null)
    [ -z "$uri" ] || { echo "$uri"; return 0; }
  done
  return 1
}

_dml_chain_backports() {  # Mesa from bookworm-backports; an apt source it adds is removed again if anything fails
  local apt=${DMLCHAIN_SYSROOT:-}/etc/apt sources mirror added='' named='' file
  sources=$apt/sources.list.d/dmlconf-backports.list
  for file in "$apt"/sources.list "$apt"/sources.list.d/*.list "$apt"/sources.list.d/*.sources; do
    if [ -f "$file" ] && [ "$file" != "$sources" ] && grep -qs '^[^#]*bookworm-backports' "$file"; then named=$file; fi
  done
  if [ -z "$named" ]; then  # not in apt's sources yet: added, on the mirror they use for bookworm
    mirror=$(_dml_chain_mirror "$sources") ||
      { echo "dml-chain: no Debian 12 (bookworm) mirror in apt's sources ($apt) to take bookworm-backports from" >&2; return 1; }
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" 2>/dev/null > "$sources" ||
      { echo "dml-chain: cannot write $sources (not root?)" >&2; return 1; }
    added=1
  fi
  if DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
       --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null; then
    return 0
  fi
  [ -z "$added" ] || rm -f "$sources"  # left there, every later apt call on the machine would fail on it
  echo "dml-chain: Mesa from bookworm-backports could not be installed (apt-get's words above)${added:+; $sources removed again}" >&2
  return 1
}

_dml_chain() {
  local root display=${DMLWINE_DISPLAY:-93} tool missing=() vulkan mesa socket lock built folder
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  socket=${DMLCHAIN_SYSROOT:-}/tmp/.X11-unix/X$display lock=${DMLCHAIN_SYSROOT:-}/tmp/.X$display-lock

  for tool in wine Xvfb x86_64-w64-mingw32-gcc vulkaninfo; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    _dml_chain_debian12 "${missing[*]} would be installed" || return 1
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends wine wine64 xvfb x11-xkb-utils gcc-mingw-w64-x86-64 libvulkan1 vulkan-tools >/dev/null ||
      { echo "dml-chain: apt-get could not install ${missing[*]} (apt-get's words above)" >&2; return 1; }
  fi

  # A real GPU's Vulkan driver serves as it is; else lavapipe of Mesa 23 or newer (vulkaninfo's, else dpkg's word).
  vulkan=$(vulkaninfo --summary 2>/dev/null) || true
  if ! grep -Eq 'deviceType *= *PHYSICAL_DEVICE_TYPE_(DISCRETE|INTEGRATED|VIRTUAL)_GPU' <<<"$vulkan"; then
    mesa=$(sed -n 's/.*driverInfo *= *Mesa \([0-9][0-9.]*\).*/\1/p' <<<"$vulkan" | sed -n 1p)
    if [ -z "$mesa" ]; then
      mesa=$(dpkg-query -W -f='${db:Status-Status} ${Version}' mesa-vulkan-drivers 2>/dev/null) || mesa=
      case $mesa in installed\ *) mesa=${mesa#installed }; mesa=${mesa#*:} ;; *) mesa= ;; esac
    fi
    if [ -z "$mesa" ] || [ "${mesa%%[!0-9]*}" -lt 23 ] 2>/dev/null; then
      _dml_chain_debian12 "no Vulkan GPU and $([ -n "$mesa" ] && echo "only Mesa $mesa" || echo "no Mesa"): Mesa 23 or newer's lavapipe would be installed" || return 1
      _dml_chain_backports || return 1
    fi
  fi

  if ! { [ -S "$socket" ] && kill -0 "$(tr -d ' ' < "$lock" 2>/dev/null)" 2>/dev/null; }; then
    rm -f "$lock" "$socket"
    setsid -f Xvfb ":$display" -screen 0 640x480x24 -nolisten tcp </dev/null >/tmp/dmlconf-xvfb.log 2>&1
    for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
    [ -S "$socket" ] || { echo "dml-chain: Xvfb :$display did not start (/tmp/dmlconf-xvfb.log)" >&2; return 1; }
  fi
  export DISPLAY=":$display"

  if [ -z "${DMLCONF_VKD3D_PROTON:-}" ]; then
    built=$(bash "$root/.ci/vkd3d-proton/build.sh" --where)/x64
    for folder in "${DMLCHAIN_PREBUILT:-$root/../shared/dml-wine/vkd3d-proton/x64}" "$built"; do
      if [ -f "$folder/d3d12.dll" ] && [ -f "$folder/d3d12core.dll" ]; then
        DMLCONF_VKD3D_PROTON=$(cd "$folder" && pwd); export DMLCONF_VKD3D_PROTON; break
      fi
    done
    [ -n "${DMLCONF_VKD3D_PROTON:-}" ] || { echo "dml-chain: no vkd3d-proton for Wine 8.0 here: build it from the pinned sources (bash $root/.ci/vkd3d-proton/build.sh: about 4 minutes, into $built, found there next time) or set DMLCONF_VKD3D_PROTON to an x64 folder (docs/directml-on-linux.md#vkd3d-proton)" >&2; return 1; }
  fi
}
_dml_chain; _dml_chain_rc=$?; unset -f _dml_chain _dml_chain_debian12 _dml_chain_mirror _dml_chain_backports
eval "unset _dml_chain_rc; return $_dml_chain_rc"
