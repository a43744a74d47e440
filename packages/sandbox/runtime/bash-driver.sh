# jitbox sandbox: the child side for Bash tools (JT-CTR-06), run as `bash --norc --noprofile driver.sh`.
# Bash cannot parse JSON, so the protocol is reduced. Each invocation runs in a subshell forked in
# advance, in its own process group, which prepares everything it can before the call arrives
# (work after the call arrives is slow: a freshly forked process pays a copy-on-write fault on every
# page it writes first): signal traps, stdin from $JB_IO/in.json, stdout and stderr on the two
# output files (which this driver holds open for its whole life), the protocol's input on fd 4,
# and one dry run of the builtins the call path uses, so their pages are copied already. For an
# invocation the host rewrites in.json in place with the arguments and sends an empty line; the
# subshell reads it, closes fd 4 and sources main.sh. It keeps no descriptor of the protocol, so
# nothing the call starts can speak it. This driver then reaps the subshell, kills everything the
# call left running and waits until it is gone, and only then answers
# {"_tag":"Reaped","exitCode":N}: the host answers the call on Reaped, reads the call's output
# from the files and empties them, so each call sees only its own input and output, and no process
# of an earlier call is alive when the next one starts. With JB_PIDNS=1 (bubblewrap: this driver is
# pid 2 of its own pid namespace, bubblewrap's init pid 1) `kill -KILL -1` reaches every process
# the call started, whatever session, group or environment it moved to; without it only the call's
# process group is killed here and the host kills the rest by their marker variable.
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

# The driver holds the output files open for its whole life and every subshell writes through a
# copy of its descriptors: the host empties the files after each call, and on ext4 closing the
# last descriptor of a file truncated to zero starts its write-back, which the next truncation
# waits for (measured 0.24 ms a call, against 0.02 ms when the file stays open).
exec 5>>"$__jb_out/stdout" 6>>"$__jb_out/stderr" 7>/dev/null
__jb_pidns=$JB_PIDNS
unset JB_PIDNS
# each subshell leads a process group of its own (job control), as a script started from a
# terminal does: `kill 0` in main.sh ends main.sh and what it started
set -m
__jb_loaded='{"_tag":"Loaded","metadata":{}}'
while :; do
  (
    # a resource limit ends the script with the status of its signal, as if bash had not caught it
    trap 'exit 152' XCPU
    trap 'exit 153' XFSZ
    set +m
    exec 4<&0 <"$__jb_io/in.json" >&5 2>&6 5>&- 6>&- 7>&- || exit 125
    # run once what runs after the call arrives (a redirection, source, read): a forked process
    # copies each page it first writes (the first redirection in a fresh subshell measured
    # 70-90 µs here, the next one 15-25 µs)
    exec 3<&4 3<&-; source /dev/null; IFS= read -r -t 0 -u 4 __jb_go
    IFS= read -r -u 4 __jb_go || { kill -KILL $$; exit 0; }
    exec 4<&-
    unset __jb_go
    source "$__jb_pkg/main.sh"
  ) &
  # Loaded goes out once the first subshell is forked, so it gets ready while the host answers
  [[ -n $__jb_loaded ]] && { printf '%s\n' "$__jb_loaded"; __jb_loaded=; }
  wait $!
  __jb_rc=$?
  if [[ $__jb_pidns == 1 ]]; then
    # every process but this driver and pid 1; it succeeds while any is left, zombies included
    while kill -KILL -1 2>&7; do wait; done
  else
    kill -KILL -- -$! 2>&7
  fi
  printf '{"_tag":"Reaped","exitCode":%d}\n' "$__jb_rc"
  # the next subshell is forked once the host has answered the call (it sends an empty line, which
  # may also come after the next call's): a fork takes longer than the answer, and on a busy CPU
  # it would run first
  IFS= read -r __jb_ack || exit 0
done
