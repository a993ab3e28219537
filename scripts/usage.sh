# Sourced first by every script of scripts/ (before it changes folder):
#   tb_help "$0" "$@"   answers -h/--help as the first argument with the script's header comment
#                       (its usage, variables and an example) and exits 0 before anything runs;
#   tb_out_dir ARG      prints the OUT_DIR argument as an absolute path against the caller's folder
#                       (the scripts cd to the repository), refusing one that starts with '-';
#   tb_start "$0" "REST OF USAGE" "$@"
#                       the start of a script whose first argument is OUT_DIR: tb_help, strict
#                       mode, a usage line without OUT_DIR, $out (tb_out_dir), then the
#                       repository as the working folder; the caller shifts OUT_DIR away;
#   tb_command_line "VAR..." ARG...
#                       the script's command line as run, for OUT_DIR/command.txt (which
#                       record_results.sh keeps with COMMAND -): the variables that steer it
#                       where set, then scripts/NAME and its arguments, each quoted where the
#                       shell needs it;
#   tb_runs_out "$command_line" FLAG...
#                       $out made, its command.txt written, and args=(FLAG...) for every run:
#                       without --data among them, bench's embedded corpus exported ($BENCH
#                       --export_corpus) to $out/corpus.bin and --data added, so that bench and
#                       the peers train on the same bytes.
TB_CALLER_PWD=$PWD
tb_help() {
  local script=$1
  case "${2:-}" in
    -h|--help)
      # The comment block under the shebang, without its '# '.
      sed -n '2,/^[^#]/p' "$script" | sed '$d' | sed -e 's/^# \{0,1\}//'
      exit 0 ;;
  esac
}
tb_out_dir() {
  case "$1" in
    -*) echo "$(basename "$0"): '$1' is not an output folder (it starts with '-'); the folder" \
             "comes first, see $(basename "$0") --help" >&2
        exit 2 ;;
    /*) echo "$1" ;;
    *) echo "$TB_CALLER_PWD/$1" ;;
  esac
}
tb_start() {
  local script=$1 rest=$2
  shift 2
  tb_help "$script" "$@"
  set -euo pipefail
  [ $# -ge 1 ] || { echo "usage: $script OUT_DIR${rest:+ $rest}" >&2; exit 2; }
  out=$(tb_out_dir "$1")
  cd "$(dirname "$script")/.."
}
tb_quoted() {  # one word, as the shell reads it back
  if [[ "$1" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
tb_command_line() {
  local v w line=""
  for v in $1; do [ -z "${!v+x}" ] || line+="$v=$(tb_quoted "${!v}") "; done
  shift
  for w in "scripts/$(basename "$0")" "$@"; do line+="$(tb_quoted "$w") "; done
  printf '%s\n' "${line% }"
}
tb_runs_out() {
  mkdir -p "$out"
  printf '%s\n' "$1" >"$out/command.txt"
  shift
  args=("$@")
  case " $* " in
    *" --data "*) ;;
    *) "$BENCH" --export_corpus "$out/corpus.bin" >/dev/null; args+=(--data "$out/corpus.bin") ;;
  esac
}
# Run rather than sourced (bash scripts/usage.sh [--help]): it says what it is.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  sed -n '1,/^[^#]/p' "$0" | sed '$d' | sed -e 's/^# \{0,1\}//'
  echo "Usage: source \"\$(dirname \"\$0\")/usage.sh\" first in a script of scripts/ (it runs nothing itself)"
fi
