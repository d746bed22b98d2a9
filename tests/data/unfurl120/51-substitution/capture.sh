#!/bin/bash
# Unfurl 1.2.0 (UNFURL120_VENV) on each scenario folder here: its ensemble.yaml (and the files
# it imports) committed in a fresh git repo, then `validate` and `deploy`; each step's console
# (ANSI codes and the work dir stripped), exit code, and after deploy the ensemble and jobs.tsv
set -u
here=$(cd "$(dirname "$0")" && pwd)
for dir in "$here"/*/; do
  work=$(mktemp -d); cd "$work"; git init -q && git config user.email a@b && git config user.name a
  for f in "$dir"*.yaml; do case $f in *.after.yaml) ;; *) cp "$f" .;; esac; done
  git add -A && git commit -qm init
  for step in validate "deploy --approve --dirty=ok --commit"; do
    name=${step%% *}
    "${UNFURL120_VENV:?set UNFURL120_VENV}/bin/unfurl" --home '' $step ensemble.yaml > out.raw 2>&1
    echo $? > "$dir/$name.exitcode.txt"
    sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$work/##g" -e '/full log written/d' out.raw > "$dir/$name.console.txt"
  done
  cp ensemble.yaml "$dir/ensemble.after.yaml"; [ -f jobs.tsv ] && cp jobs.tsv "$dir/jobs.tsv"
  cd "$here"; rm -rf "$work"
done
