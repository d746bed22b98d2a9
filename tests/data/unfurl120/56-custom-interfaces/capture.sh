#!/bin/bash
# Unfurl 1.2.0's `validate` of each probe here (UNFURL120_VENV names its virtualenv):
# NAME/console.txt (ANSI codes and the work dir stripped) and NAME/exitcode.txt
set -u
here=$(cd "$(dirname "$0")" && pwd)
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
