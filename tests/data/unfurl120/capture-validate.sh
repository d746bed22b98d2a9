#!/bin/bash
# Unfurl 1.2.0's `validate` of each probe in folder $1 (UNFURL120_VENV names its virtualenv):
# $1/NAME/console.txt (ANSI codes and the work dir stripped) and $1/NAME/exitcode.txt for
# each $1/NAME.yaml; tests/recorded_probes.py reads them
set -u
here=$(cd "$1" && pwd)
for f in "$here"/*.yaml; do
  name=$(basename "$f" .yaml); work=$(mktemp -d); cd "$work"
  git init -q && git config user.email a@b && git config user.name a
  cp "$f" ensemble.yaml && git add -A && git commit -qm init
  mkdir -p "$here/$name"
  "${UNFURL120_VENV:?set UNFURL120_VENV}/bin/unfurl" --home '' validate ensemble.yaml > out.raw 2>&1
  echo $? > "$here/$name/exitcode.txt"
  sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$work/##g" -e '/full log written/d' out.raw > "$here/$name/console.txt"
  cd "$here"; rm -rf "$work"
done
