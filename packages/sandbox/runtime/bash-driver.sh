# jitbox sandbox: the child side for Bash tools (JT-CTR-06), run as `bash --norc --noprofile driver.sh`.
# Bash cannot parse JSON, so the protocol is reduced. Each invocation runs in a subshell forked in
# advance, in its own process group, which prepares everything it can before the call arrives
# (work after the call arrives is slow: a freshly forked process pays a copy-on-write fault on every
# page it writes first): signal and EXIT traps, stdin from $JB_IO/in.json, stdout and stderr
# appended to $JB_OUT/stdout and $JB_OUT/stderr, the protocol kept on fd 3 (out) and fd 4 (in),
# and one dry run of the builtins the call path uses, so their pages are copied already. For
# an invocation the host rewrites in.json in place with the arguments and sends the invocation id
# on one line; the subshell reads it, closes fd 4 and sources main.sh, and its EXIT trap answers
# {"_tag":"Output","invocationId":…,"exitCode":N} before the process is torn down. This driver then
# reaps it, kills whatever the script left running in its group, answers
# {"_tag":"Reaped","exitCode":N} (which also ends an invocation whose script exec'd or replaced the
# trap) and forks the next subshell. The host sends the next invocation only after Reaped, so it
# knows where each call's output starts in stdout and stderr, and reads that part back. The host
# creates the three files before the driver starts; no file is created or truncated per call.
__jb_pkg=$JB_PKG __jb_io=$JB_IO __jb_out=$JB_OUT
unset JB_PKG JB_IO JB_OUT
# Descriptors the host held without close-on-exec came through prlimit and bubblewrap: keep stdin,
# stdout, stderr and bash's own descriptor of this script, close the rest (listed: an inherited
# number may exceed RLIMIT_NOFILE). Without /proc/self/fd nothing can be promised: stop.
[[ -d /proc/self/fd ]] || { echo "jitbox: cannot list /proc/self/fd" >&2; exit 70; }
for __jb_fd in /proc/self/fd/*; do
  __jb_fd=${__jb_fd##*/}
  (( __jb_fd > 2 )) && ! [[ /proc/self/fd/$__jb_fd -ef $0 ]] && exec {__jb_fd}<&-
done
unset __jb_fd

__jb_json_string() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  s=${s//[$'\x01'-$'\x1f']/?}
  printf '"%s"' "$s"
}

if [[ ! -f $__jb_pkg/main.sh ]]; then
  printf '{"_tag":"LoadFailed","reason":"MissingEntrypoint","path":"main.sh","detail":"the package has no main.sh"}\n'
  exit 0
fi

# Parse main.sh without running it: as the body of a function that is never called. The error
# goes to the (still empty) stderr file the host created, so no file is made for it.
IFS= read -r -d '' __jb_src <"$__jb_pkg/main.sh"
__jb_fn=$'__jb_check() {\n'"$__jb_src"$'\n}'
__jb_base=$LINENO; if ! eval "$__jb_fn" 2>>"$__jb_out/stderr"; then
  IFS=$'\n' read -r __jb_err <"$__jb_out/stderr"
  __jb_line=${__jb_err#*: line }
  __jb_line=${__jb_line%%:*}
  __jb_err=${__jb_err#*: line *: }
  [[ $__jb_line =~ ^[0-9]+$ ]] && __jb_err="line $((__jb_line - __jb_base)): $__jb_err"
  printf '{"_tag":"LoadFailed","reason":"CompileError","path":"main.sh","detail":%s}\n' "$(__jb_json_string "main.sh $__jb_err")"
  exit 0
fi
unset -f __jb_check
unset __jb_src __jb_fn __jb_base

set -m
__jb_loaded='{"_tag":"Loaded","metadata":{}}'
while :; do
  (
    # a resource limit ends the script with the status of its signal, as if bash had not caught it
    trap 'exit 152' XCPU
    trap 'exit 153' XFSZ
    set +m
    exec 3>&1 4<&0 <"$__jb_io/in.json" >>"$__jb_out/stdout" 2>>"$__jb_out/stderr" || exit 125
    trap 'printf '\''{"_tag":"Output","invocationId":"%s","exitCode":%d}\n'\'' "$__jb_id" "$?" >&3' EXIT
    # run once what runs after the call arrives (a redirection, source, printf to the protocol,
    # read): a forked process copies each page it first writes (the first redirection in a fresh
    # subshell measured 70-90 µs here, the next one 15-25 µs)
    exec 5<&4 5<&-; source /dev/null; printf '' >&3; IFS= read -r -t 0 -u 4 __jb_id
    IFS= read -r -u 4 __jb_id || { trap - EXIT; kill -KILL $$; exit 0; }
    exec 4<&-
    source "$__jb_pkg/main.sh"
  ) &
  # Loaded goes out once the first subshell is forked, so it gets ready while the host answers
  [[ -n $__jb_loaded ]] && { printf '%s\n' "$__jb_loaded"; __jb_loaded=; }
  wait $!
  __jb_rc=$?
  kill -KILL -- -$! 2>/dev/null
  printf '{"_tag":"Reaped","exitCode":%d}\n' "$__jb_rc"
done
