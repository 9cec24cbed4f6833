#!/usr/bin/env bash
# Builds vkd3d-proton's x64 d3d12.dll and d3d12core.dll for Wine 8.0: the tag and submodule commits that SOURCE.md
# (beside this script) pins, its one patch, Debian 12's mingw-w64 (SOURCE.md says why and how; every pin is read
# from its tables). About 4 minutes on 2 cores; needs network to clone unless --source is given.
#
#   bash .ci/vkd3d-proton/build.sh [--source DIR] [--out DIR]
#       --source DIR  a recursive clone of the tag (git clone --recursive --branch TAG URL): its commits and its
#                     submodules' are checked against the pins. Default: cloned from GitHub into a scratch folder.
#       --out DIR     the DLLs go to DIR/x64. Default: the harness's cache (--where), where .ci/dml-chain.sh looks.
#   bash .ci/vkd3d-proton/build.sh --pins     print the pins, one "path repository commit" a line
#   bash .ci/vkd3d-proton/build.sh --where    print the default output folder
#
# Nothing is installed. The source is copied and patched in a scratch folder, removed at the end (KEEP=1 keeps it);
# JOBS=N limits ninja to N jobs. Exit 0 when built (it says whether the bytes are SOURCE.md's), 1 when something is
# missing or wrong (one line says what), 2 on a usage error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
recipe=$here/SOURCE.md

die() { echo "build.sh: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

fact() {  # fact NAME: the value of NAME's row in SOURCE.md's "Build" table (| NAME | `VALUE` |)
  awk -F'|' -v name="$1" '
    { key = $2; gsub(/^[ \t]+|[ \t]+$/, "", key) }
    key == name { value = $3; gsub(/[ \t`]/, "", value); print value; found = 1; exit }
    END { exit !found }' "$recipe" || die "SOURCE.md has no '$1' row in its Build table"
}

pins() {  # "path repository commit" for each row of SOURCE.md's "Sources" table
  awk -F'|' 'NF >= 5 {
      for (i = 2; i <= 4; i++) { cell[i] = $i; gsub(/[ \t`]/, "", cell[i]) }
      if (length(cell[4]) == 40 && cell[4] !~ /[^0-9a-f]/) print cell[2], cell[3], cell[4]
    }' "$recipe"
}

default_out() {  # the harness's cache folder (conformance/ep/wine/chain.py: DMLCONF_CACHE, else XDG's) and the tag
  local cache=${DMLCONF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dml-conformance}
  echo "$cache/vkd3d-proton-$(fact tag)-wine8"
}

mode=build source_dir='' out=''
while [ $# -gt 0 ]; do
  case $1 in
    --source) [ $# -ge 2 ] || { usage >&2; exit 2; }; source_dir=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift 2 ;;
    --pins) mode=pins; shift ;;
    --where) mode=where; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

tag=$(fact tag); epoch=$(fact SOURCE_DATE_EPOCH); patch_file=$here/$(fact patch)
top=$(pins | awk '$1 == "." { print $2; exit }')
[ -n "$top" ] || die "SOURCE.md's Sources table has no row for '.' (the vkd3d-proton tree itself)"
[ -f "$patch_file" ] || die "$patch_file: no such patch (SOURCE.md names it)"
case $mode in
  pins) pins; exit 0 ;;
  where) default_out; exit 0 ;;
esac
out=${out:-$(default_out)}

command -v git >/dev/null || die "git is not installed (apt-get install git)"
if [ -n "$source_dir" ]; then
  [ -d "$source_dir" ] || die "--source $source_dir: no such folder"
  source_dir=$(cd "$source_dir" && pwd)
fi

checked() {  # checked DIR: each pinned path of DIR at its pinned commit, else one line saying which is not
  local dir=$1 path repo commit head where
  while read -r path repo commit; do
    where=$dir; [ "$path" = . ] || where=$dir/$path
    head=$(git -C "$where" rev-parse HEAD 2>/dev/null) || die "$where: not a git checkout (--source takes a recursive clone: git clone --recursive --branch $tag https://github.com/$top)"
    [ "$head" = "$commit" ] || die "$where is at $head; SOURCE.md pins $repo $commit (git -C $dir checkout $tag && git -C $dir submodule update --init --recursive)"
  done < <(pins)
}
[ -z "$source_dir" ] || checked "$source_dir"

tools=(x86_64-w64-mingw32-gcc-posix x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-ar x86_64-w64-mingw32-strip
       x86_64-w64-mingw32-widl meson ninja glslangValidator patch sha256sum)
missing=()
for tool in "${tools[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: apt-get install gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix mingw-w64-tools meson ninja-build glslang-tools patch (SOURCE.md)"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/vkd3d-proton-build.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "build.sh: keeping $scratch"; else trap 'rm -rf "$scratch"' EXIT; fi
if [ -z "$source_dir" ]; then
  echo "build.sh: cloning $top $tag with its submodules"
  git clone --quiet --recursive --branch "$tag" "https://github.com/$top" "$scratch/clone" 2>&1 || die "cannot clone https://github.com/$top (no network? clone it elsewhere and give --source)"
  source_dir=$scratch/clone
  checked "$source_dir"
fi

# The source at src/vkd3d-proton beside build.vkd3d: the DLLs keep __FILE__ paths relative to the build folder, so
# this layout is part of what makes the bytes the same.
tree=$scratch/src/vkd3d-proton
mkdir -p "$tree"
tar -C "$source_dir" --exclude=.git -cf - . | tar -C "$tree" -xf -
patch -p1 --quiet --forward -d "$tree" < "$patch_file" || die "$patch_file does not apply to $source_dir"

cat > "$scratch/cross-win64-posix.txt" <<'CROSS'
[binaries]
c = 'x86_64-w64-mingw32-gcc-posix'
cpp = 'x86_64-w64-mingw32-g++-posix'
ar = 'x86_64-w64-mingw32-ar'
strip = 'x86_64-w64-mingw32-strip'
widl-mingw-tools-fallback = 'x86_64-w64-mingw32-widl'

[properties]
needs_exe_wrapper = true

[host_machine]
system = 'windows'
cpu_family = 'x86_64'
cpu = 'x86_64'
endian = 'little'

[built-in options]
c_link_args = ['-Wl,--no-insert-timestamp']
cpp_link_args = ['-Wl,--no-insert-timestamp']
CROSS

started=$SECONDS
export SOURCE_DATE_EPOCH=$epoch  # the PE time stamps that ld and strip write
(cd "$tree" && meson setup --cross-file "$scratch/cross-win64-posix.txt" --buildtype release --strip \
   -Denable_tests=false -Denable_extras=false --prefix "$scratch/inst" --bindir x64 --libdir x64 ../../build.vkd3d) \
   > "$scratch/meson.log" 2>&1 || { tail -n 20 "$scratch/meson.log" >&2; die "meson setup failed (above)"; }
ninja -C "$scratch/build.vkd3d" ${JOBS:+-j "$JOBS"} install > "$scratch/ninja.log" 2>&1 ||
  { tail -n 30 "$scratch/ninja.log" >&2; die "the build failed (above)"; }

mkdir -p "$out/x64"
same=0
for dll in d3d12.dll d3d12core.dll; do
  cp "$scratch/inst/x64/$dll" "$out/x64/$dll"
  got=$(sha256sum "$out/x64/$dll" | cut -d' ' -f1); want=$(fact "$dll sha256")
  if [ "$got" = "$want" ]; then
    same=$((same + 1)); echo "$out/x64/$dll: sha256 $got, SOURCE.md's"
  else
    echo "$out/x64/$dll: sha256 $got, not SOURCE.md's $want (another toolchain than Debian 12's?)"
  fi
done
echo "built vkd3d-proton $tag for Wine 8.0 in $((SECONDS - started)) s ($same of 2 DLLs byte for byte SOURCE.md's)"
echo "use it: export DMLCONF_VKD3D_PROTON=$out/x64 (.ci/dml-chain.sh finds it there by itself when --out is the default)"
