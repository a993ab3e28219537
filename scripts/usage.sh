# Sourced first by every script of scripts/ (before it changes folder):
#   tb_help "$0" "$@"   answers -h/--help as the first argument with the script's header comment
#                       (its usage, variables and an example) and exits 0 before anything runs;
#   tb_out_dir ARG      prints the OUT_DIR argument as an absolute path against the caller's folder
#                       (the scripts cd to the repository), refusing one that starts with '-'.
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
