#!/usr/bin/env bash
# The seeds' ncu_profile.sh --out <perf/.../ncu_<tag>[_round<R>]> --cmd <binary> [args]: profiles
# exactly the candidate's launch and writes <out>.ncu-rep and <out>.csv. Calls `croq profile`
# (the candidate of bin/.../<kernel>, or a legacy binary with --binary). Exit 7 without a GPU or ncu.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
out="" cmd=() 
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --cmd) shift; cmd=("$@"); break ;;
    *) echo "ncu_profile: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] && [ ${#cmd[@]} -gt 0 ] || { echo "ncu_profile: needs --out and --cmd" >&2; exit 2; }
if ! task_from_path "$out"; then
  echo "ncu_profile: --out $out is not under tuning/<gpu>/<dsl>/perf/<key>/<model>/" >&2
  exit 2
fi
round=""
case "$out" in *_round[0-9]*) round="${out##*_round}" ;; esac
args=(profile --gpu "$TASK_GPU" --dsl "$TASK_DSL" --shape-key "$TASK_KEY" --model "$TASK_MODEL")
[ -n "$round" ] && args+=(--round "$round")
bin="${cmd[0]}"
if task_from_path "$bin" && [ "${bin#*/bin/}" != "$bin" ]; then
  args+=(--iter "${TASK_NAME%.so}")
else
  args+=(--binary "$bin")
  for a in "${cmd[@]:1}"; do args+=(--binary-arg "$a"); done
fi
res="$(croq "${args[@]}")"
rc=$?
printf '%s\n' "$res"
[ $rc -eq 0 ] || exit $rc
# croq names the files ncu_<kernel>_round<R>; the seeds' caller may have chosen another --out.
# A cpp task's profile is the CPU runner's timing roofline (a cpuprof_*.json report, no CSV): it
# is not copied under an .ncu-rep name.
rep="$(printf '%s' "$res" | json_field report)"
csv="$(printf '%s' "$res" | json_field csv)"
abs_out="$out"
case "$abs_out" in /*) ;; *) abs_out="$CROQ_ROOT/$out" ;; esac
case "$rep" in
  *.ncu-rep) [ "$rep" != "$abs_out.ncu-rep" ] && cp -f "$rep" "$abs_out.ncu-rep" 2>/dev/null ;;
esac
[ -n "$csv" ] && [ "$csv" != "$abs_out.csv" ] && cp -f "$csv" "$abs_out.csv" 2>/dev/null
exit 0
