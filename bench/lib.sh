# shellcheck shell=bash disable=SC2034,SC2154  # variables shared with the sourcing script
# bench/lib.sh: what bench/check.sh and bench/convert.sh share, sourced by them, never run. Both time
# one halfguard subcommand on generated 1 GiB models against `cp` of the same file, in the same run,
# alternating, and keep medians; see bench/RESULTS.md. bench/run.sh, which measures its own way,
# takes its options, tools and helpers from here too (bench_options, bench_counts, bench_tools and the
# helpers below).
#
# A script that sources it: sets `sub` (the subcommand; also the prefix of its scratch folders) and
# `scratch` (names, in a model's scratch folder, deleted before every timed command and at the end),
# calls bench_parse "$@" and bench_setup, bench_header, then for each arch in "${archs[@]}":
# bench_model, its own untimed run, bench_rounds, bench_figures; and bench_finish at the end.
# The usage text is the calling script's header comment from line 5 to the first line that is not one.

me=$(basename "$0")

usage() { awk 'NR >= 5 && !/^#/ { exit } NR >= 5 { sub(/^# ?/, ""); print }' "$0"; exit 2; }

# bench_options SPEC... -- ARG...: each SPEC is OPTION=VAR (--OPTION takes a value, stored in VAR) or
# OPTION=!VAR (--OPTION alone sets VAR to 1); -h or --help, an unknown ARG or a missing value shows the
# usage and exits 2.
bench_options() {
  local -A takes=() flags=()
  local s
  while [ "$1" != -- ]; do
    s=$1; shift
    if [[ ${s#*=} == !* ]]; then flags[--${s%%=*}]=${s#*=!}; else takes[--${s%%=*}]=${s#*=}; fi
  done
  shift
  while [ $# -gt 0 ]; do
    if [ -n "${takes[$1]:-}" ] && [ $# -ge 2 ]; then
      printf -v "${takes[$1]}" '%s' "$2"; shift 2
    elif [ -n "${flags[$1]:-}" ]; then
      printf -v "${flags[$1]}" 1; shift
    elif [ "$1" = -h ] || [ "$1" = --help ] || [ -n "${takes[$1]:-}" ]; then
      usage
    else
      echo "$me: unknown argument '$1'" >&2; usage
    fi
  done
}

# bench_counts WARMUP N...: exits 2 unless WARMUP is a number and every N a positive one.
bench_counts() {
  [[ $1 =~ ^[0-9]+$ ]] || { echo "$me: --warmup wants a number" >&2; exit 2; }
  shift
  local n
  for n; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$me: '$n' is not a positive number" >&2; exit 2; }
  done
}

# bench_parse BUILD_DIR [OPTION...]: sets build size_mib archs runs warmup keep.
bench_parse() {
  [ $# -ge 1 ] || usage
  build=$1; shift
  size_mib=1024 arch=both runs=5 warmup=1 keep=0
  bench_options size-mib=size_mib arch=arch runs=runs warmup=warmup keep=!keep -- "$@"
  bench_counts "$warmup" "$size_mib" "$runs"
  case $arch in
    mlp|cnn|transformer) archs=("$arch") ;;
    both) archs=(mlp cnn) ;;
    all) archs=(mlp cnn transformer) ;;
    *) echo "$me: --arch wants mlp, cnn, transformer, both (mlp and cnn) or all" >&2; exit 2 ;;
  esac
}

# bench_tools: sets here hg gen tmp (the scratch folder) after checking that the two programs are there.
bench_tools() {
  here=$(cd "$(dirname "$0")" && pwd)
  hg=${HALFGUARD:-$build/halfguard}
  gen=${GEN_MODEL:-$build/bench/gen_model}
  tmp=${BENCH_TMP:-$here/out}
  local x
  for x in "$hg" "$gen"; do
    [ -x "$x" ] || { echo "$me: $x is missing; build first (meson setup BUILD_DIR && ninja -C BUILD_DIR)" >&2; exit 2; }
  done
}

# bench_scratch: makes the scratch folder tmp if need be (created_tmp=1 when it was made here) and
# makes tmp absolute.
bench_scratch() {
  created_tmp=0
  [ -d "$tmp" ] || created_tmp=1
  mkdir -p "$tmp"
  tmp=$(cd "$tmp" && pwd)
}

# bench_setup: bench_tools, then checks the subcommand and GNU time, makes the scratch folder, sets
# fstype and arranges for the generated models to go however the script ends (unless --keep).
bench_setup() {
  bench_tools
  "$hg" help "$sub" >/dev/null 2>&1 || { echo "$me: $hg has no '$sub' subcommand" >&2; exit 2; }
  /usr/bin/time --version 2>&1 | grep -q GNU || { echo "$me: needs GNU time (apt-get install time)" >&2; exit 2; }
  bench_scratch
  fstype=$(df -PT "$tmp" | awk 'NR == 2 { print $2 }')
  [ "$fstype" != tmpfs ] || echo "$me: warning: $tmp is on tmpfs; cp then copies memory, not a disk file" >&2
  trap bench_cleanup EXIT
}

bench_cleanup() {
  local f
  for f in "${scratch[@]}"; do rm -f "$tmp/$sub"-*/"$f"; done
  if [ "$keep" = 0 ]; then
    rm -rf "$tmp/$sub"-mlp "$tmp/$sub"-cnn "$tmp/$sub"-transformer
    [ "$created_tmp" = 0 ] || rmdir "$tmp" 2>/dev/null || true
  fi
}

# ---------------------------------------------------------------- measuring one command
# measure OUTVAR OKCODES STDOUT CMD...: runs CMD with stdout to STDOUT and sets OUTVAR to
# "SECONDS MAXRSS_KIB USER_S SYS_S EXIT". The wall time is bash's clock around GNU time (finer than
# its %e, and the same fork overhead for every command); RSS and CPU times are GNU time's. An exit
# status outside OKCODES (a space-separated list) stops the script and shows CMD's stderr.
measure() {
  local var=$1 ok=$2 out=$3; shift 3
  local f e rc=0 t0 t1
  f=$(mktemp) e=$(mktemp)
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$f" -f '%M %U %S' "$@" >"$out" 2>"$e" || rc=$?
  t1=$EPOCHREALTIME
  if [[ " $ok " != *" $rc "* ]]; then
    echo "$me: exit status $rc: $*" >&2; head -n 20 "$e" >&2; rm -f "$f" "$e"; exit 1
  fi
  printf -v "$var" '%s %s %s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$(tail -n 1 "$f")" "$rc"
  rm -f "$f" "$e"
}

# ---------------------------------------------------------------- helpers
fsize() { stat -c %s "$1"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
kib2mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }'; }
# median, min, max of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -n 1; }
warm() { cat "$@" >/dev/null; }

# bench_header DIR...: the lines that say what was measured where; DIR... are the source folders
# whose uncommitted changes the commit line flags.
bench_header() {
  local dirty="" i
  for ((i = 1; i <= $#; i++)); do
    dirty+="${!i}/"
    if ((i < $# - 1)); then dirty+=", "; elif ((i == $# - 1)); then dirty+=" or "; fi
  done
  echo "halfguard $sub benchmark"
  echo "  date      $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "  commit    $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here/.." diff --quiet HEAD -- "$@" 2>/dev/null || echo " ($dirty modified)")"
  echo "  halfguard $hg"
  echo "  machine   $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $tmp on $fstype"
  echo "  meter     bash clock + GNU time; $warmup untimed + median of $runs alternating runs; sync before each run"
  status=0
}

# bench_model ARCH: sets d (the model's scratch folder), in (the model, generated unless there) and
# size (its bytes).
bench_model() {
  d=$tmp/$sub-$1
  mkdir -p "$d"
  in=$d/model-$1-${size_mib}m.onnx
  if [ ! -f "$in" ]; then
    echo; echo "generating $in ($size_mib MiB, $1, embedded)"
    "$gen" "$in" "$size_mib" --arch "$1"
  fi
  size=$(fsize "$in")
}

# bench_rounds OKCODES: $warmup untimed and $runs timed rounds of cp_cmd then cmd (arrays the caller
# sets; cmd may exit with any of OKCODES), each after deleting the scratch files of $d and a sync.
# Prints a line per command and sets t_cp, t_cmd, u_cmd (user + sys) and rss_cmd.
bench_rounds() {
  local ok=$1 label round r f t rss ut stt rc w=6
  ((${#sub} <= w)) || w=${#sub}
  t_cp=() t_cmd=() u_cmd=() rss_cmd=()
  for ((r = 1 - warmup; r <= runs; r++)); do
    for label in cp "$sub"; do
      for f in "${scratch[@]}"; do rm -f "${d:?}/$f"; done
      sync
      if [ "$label" = cp ]; then
        measure res "0" /dev/null "${cp_cmd[@]}"
      else
        measure res "$ok" /dev/null "${cmd[@]}"
      fi
      read -r t rss ut stt rc <<<"$res"
      round=$r
      if [ "$r" -le 0 ]; then
        round=warm-up
      elif [ "$label" = cp ]; then
        t_cp+=("$t")
      else
        t_cmd+=("$t") rss_cmd+=("$rss")
        u_cmd+=("$(awk -v a="$ut" -v b="$stt" 'BEGIN { printf "%.2f", a + b }')")
      fi
      printf "  %-7s %-${w}s %7.3f s %8.1f MiB  user %5.2f s  sys %5.2f s  exit %s\n" "$round" "$label" "$t" "$(kib2mib "$rss")" "$ut" "$stt" "$rc"
    done
  done
  for f in "${scratch[@]}"; do rm -f "$d/$f"; done
}

# bench_figures TARGET: medians, the time ratio against TARGET (cmd / cp) and peak RSS of the last
# bench_rounds; a missed target makes bench_finish exit 1.
bench_figures() {
  local m_cp m_cmd t_ratio rss_kib m_ratio v
  m_cp=$(median "${t_cp[@]}") m_cmd=$(median "${t_cmd[@]}")
  t_ratio=$(ratio "$m_cmd" "$m_cp")
  rss_kib=$(maxof "${rss_cmd[@]}")
  m_ratio=$(ratio "$((rss_kib * 1024))" "$size")
  v=$(verdict "$t_ratio" "$1")
  echo
  printf '  %-30s %s MiB (%s bytes)\n' "file size" "$(mib "$size")" "$size"
  printf '  %-30s %s s (%s)\n' "cp time, median (range)" "$m_cp" "$(minmax "${t_cp[@]}")"
  printf '  %-30s %s s (%s)\n' "$sub time, median (range)" "$m_cmd" "$(minmax "${t_cmd[@]}")"
  printf '  %-30s %s s\n' "$sub user + sys, median" "$(median "${u_cmd[@]}")"
  printf '  %-30s %s   target <= %s  %s\n' "time ratio $sub / cp" "$t_ratio" "$1" "$v"
  printf '  %-30s %s MiB\n' "$sub peak RSS (largest)" "$(kib2mib "$rss_kib")"
  printf '  %-30s %s   (no target)\n' "peak RSS / file size" "$m_ratio"
  [ "$v" = PASS ] || status=1
}

bench_finish() {
  echo
  [ "$status" = 0 ] && echo "all targets met" || echo "some targets missed (see FAIL above)"
  exit "$status"
}
