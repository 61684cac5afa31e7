#!/bin/bash
# A wrapper as jobs have them: helpers before and after the trainer, which it runs as a child.
set -e
scratch=$(mktemp)
cat /proc/self/stat > "$scratch"
/usr/bin/python3 "$(dirname "$0")/fork_arrays.py" together "$@"
rm -f "$scratch"
