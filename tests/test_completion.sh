#!/bin/bash
# The bash completion script (src/halfguard.bash), sourced in a bash without startup files the way
# bash-completion loads it, asked what a user's TAB would get: subcommands, each subcommand's options
# (every option its --help lists, and no other subcommand's), option values (--format, --fail-on,
# --accumulate, "--opt=VALUE" split at "=" as bash splits it), files; and meson installs it as
# share/bash-completion/completions/halfguard.
#
# Usage: test_completion.sh HALFGUARD SCRIPT BUILDDIR
set -uo pipefail
hg=$1
script=$2
build=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-completion-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/models"
touch "$tmp/models/a.onnx" "$tmp/models/b.onnx" "$tmp/models/notes.txt"

# complete WORD... : what TAB gives for the last word, sorted, one line.
cat > "$tmp/run.sh" <<'B'
source "$1"
shift
complete -p halfguard >/dev/null || { echo "not registered"; exit 1; }
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMPREPLY=()
_halfguard
[ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
B
complete() { (cd "$tmp/models" && bash --norc --noprofile "$tmp/run.sh" "$script" "$@"); }

fail=0
expect() { # NAME WANT GOT
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: want '$2', got '$3'"; fail=1; fi
}
has() { # NAME WORD GOT
  case " $3 " in *" $2 "*) echo "ok   $1";; *) echo "FAIL $1: no '$2' in '$3'"; fail=1;; esac
}

expect subcommands "calibrate check convert dump help inspect run verify " "$(complete "$hg" "")"
expect subcommand-prefix "calibrate check convert " "$(complete "$hg" c)"
expect top-options "--help --version " "$(complete "$hg" --)"
expect help-subcommand "verify " "$(complete "$hg" help ve)"
expect convert-keep "--keep-io-types " "$(complete "$hg" convert --ke)"
expect verify-tolerances "--atol " "$(complete "$hg" verify models/a.onnx --at)"
has check-dot --dot "$(complete "$hg" check --d)"
has convert-threads --threads "$(complete "$hg" convert --thr)"
# Each subcommand offers exactly the long options its --help lists.
for sub in check convert dump inspect run calibrate verify; do
  want=$("$hg" "$sub" --help | sed -n 's/^  \(-[A-Za-z0-9], \)\{0,1\}\(--[A-Za-z0-9-]*\).*/\2/p' | sort | tr '\n' ' ')
  expect "options:$sub" "$want" "$(complete "$hg" "$sub" --)"
done
expect no-other-commands-options "" "$(complete "$hg" dump --calib)"
expect format-check "json sarif text " "$(complete "$hg" check m.onnx --format "")"
expect format-verify "json text " "$(complete "$hg" verify -f "")"
expect format-split-at-equals "json " "$(complete "$hg" check --format = j)"
expect format-joined "--format=sarif " "$(complete "$hg" check --format=s)"
expect fail-on "error " "$(complete "$hg" check --fail-on er)"
expect accumulate "fp16 targets " "$(complete "$hg" convert --accumulate "")"
expect output-file "a.onnx " "$(complete "$hg" convert m.onnx -o a)"
expect models "a.onnx b.onnx notes.txt " "$(complete "$hg" check "")"
expect range-value "" "$(complete "$hg" check -r "")"

# Installed where bash-completion looks.
dest=$(meson introspect "$build" --installed | /usr/bin/python3 -c \
  'import json, sys; print(next((d for s, d in json.load(sys.stdin).items() if s.endswith("src/halfguard.bash")), ""))')
case $dest in
  */share/bash-completion/completions/halfguard) echo "ok   installed as $dest";;
  *) echo "FAIL install: '$dest'"; fail=1;;
esac
exit $fail
