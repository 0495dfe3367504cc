#!/usr/bin/env bash
# expect-exit.sh CODE COMMAND...: runs COMMAND and fails unless it exits with exactly CODE.
# (lit's shell has no $?; scanc's exit codes 0/1/2 are part of its interface.)
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-exit: '$*' exited with $got, expected $want" >&2
  exit 1
fi
