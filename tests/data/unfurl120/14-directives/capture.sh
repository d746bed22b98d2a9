#!/bin/bash
# capture Unfurl 1.2.0 runs: $1 = scenario ensemble file, $2 = out dir, rest = steps "name:command args"
set -u
src=$1; out=$2; shift 2
work=$(mktemp -d /tmp/unfurl-research/slXXXX); cd $work
git init -q && git config user.email a@b && git config user.name a
cp $src ensemble.yaml && git add -A && git commit -qm init
for step in "$@"; do
  name=${step%%:*}; cmd=${step#*:}
  mkdir -p $out/$name; cp ensemble.yaml $out/$name/ensemble.before.yaml
  /work/venvs/unfurl120/bin/unfurl --home '' $cmd > $out/$name/console.raw 2>&1; echo $? > $out/$name/exitcode.txt
  sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$work/##g" $out/$name/console.raw > $out/$name/console.txt; rm $out/$name/console.raw
  cp ensemble.yaml $out/$name/ensemble.after.yaml; [ -f jobs.tsv ] && cp jobs.tsv $out/$name/jobs.tsv
done
