# DirectML on Linux, set up from Debian 12's packages: source it as root (`source .ci/dml-chain.sh`); CI does.
#   - Wine 8.0, Xvfb, mingw-w64 (builds the harness's DirectML runner), the Vulkan loader and vulkaninfo
#   - Mesa 25's lavapipe (software Vulkan) from bookworm-backports: Debian 12's Mesa 22 lavapipe lacks
#     VK_EXT_mutable_descriptor_type, which vkd3d-proton needs (the backports suite is added on the mirror that apt's
#     own sources already use)
#   - an X display for Wine's Vulkan (Xvfb on :$DMLWINE_DISPLAY, default 93; one already running there is reused)
#   - DMLCONF_VKD3D_PROTON: kept where set; else the lab's prebuilt vkd3d-proton beside this checkout (CI's cache:
#     ../shared/dml-wine/vkd3d-proton/x64, or DMLCHAIN_PREBUILT); else the one .ci/vkd3d-proton/build.sh built into
#     the cache; else it says how to build it (patched for Wine 8.0: docs/directml-on-linux.md#vkd3d-proton)
# The onnxruntime-directml wheel is downloaded by the harness on first use. Then: python3 -m conformance doctor.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then echo "source this file: source ${BASH_SOURCE[0]}" >&2; exit 2; fi
_dml_chain() {
  local root display=${DMLWINE_DISPLAY:-93} mirror sources=/etc/apt/sources.list.d/dmlconf-backports.list built folder
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v wine >/dev/null || ! command -v Xvfb >/dev/null || ! command -v x86_64-w64-mingw32-gcc >/dev/null \
     || ! command -v vulkaninfo >/dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends wine wine64 xvfb x11-xkb-utils \
      gcc-mingw-w64-x86-64 libvulkan1 vulkan-tools mesa-vulkan-drivers >/dev/null || { echo "dml-chain: apt-get install failed" >&2; return 1; }
  fi
  case $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null) in
    2[5-9].*|[3-9][0-9].*) ;;
    *)
      mirror=$(awk 'tolower($1)=="uris:" && $2 !~ /security/ {print $2; exit} $1=="deb" {for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) {print $i; exit}}' \
        $(ls -d /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null) </dev/null 2>/dev/null)
      [ -n "$mirror" ] || { echo "dml-chain: no Debian mirror in apt's sources to take bookworm-backports from" >&2; return 1; }
      echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" > "$sources"
      apt-get update -qq && apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null ||
        { echo "dml-chain: Mesa from bookworm-backports could not be installed" >&2; return 1; }
      ;;
  esac
  if ! { [ -S /tmp/.X11-unix/X$display ] && kill -0 "$(tr -d ' ' < /tmp/.X$display-lock 2>/dev/null)" 2>/dev/null; }; then
    rm -f /tmp/.X$display-lock /tmp/.X11-unix/X$display
    setsid -f Xvfb :$display -screen 0 640x480x24 -nolisten tcp </dev/null >/tmp/dmlconf-xvfb.log 2>&1
    for _ in $(seq 50); do [ -S /tmp/.X11-unix/X$display ] && break; sleep 0.1; done
    [ -S /tmp/.X11-unix/X$display ] || { echo "dml-chain: Xvfb :$display did not start" >&2; return 1; }
  fi
  export DISPLAY=:$display
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
_dml_chain; _dml_chain_rc=$?; unset -f _dml_chain
eval "unset _dml_chain_rc; return $_dml_chain_rc"
