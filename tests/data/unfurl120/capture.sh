#!/bin/bash
# capture Unfurl 1.2.0 runs (shared by the capture folders here; UNFURL120_VENV names Unfurl 1.2.0's virtualenv): $1 = scenario ensemble file, $2 = out dir, rest = steps "name:command args"
# a step "name:!shell command" runs the shell command in the work dir instead (e.g. edit the ensemble)
set -u
src=$1; out=$2; shift 2
work=$(mktemp -d); cd "$work"
git init -q && git config user.email a@b && git config user.name a
cp $src ensemble.yaml && git add -A && git commit -qm init
for step in "$@"; do
  name=${step%%:*}; cmd=${step#*:}; senv=${STEP_ENV:-}; case $name in *@*) senv=${name#*@}; name=${name%%@*};; esac
  if [ "${cmd:0:1}" = "!" ]; then (eval "${cmd:1}"); git commit -qam "$name"; continue; fi
  mkdir -p $out/$name; cp ensemble.yaml $out/$name/ensemble.before.yaml
  rm -rf jobs.before; [ -d jobs ] && cp -r jobs jobs.before
  env $senv "${UNFURL120_VENV:?set UNFURL120_VENV to a virtualenv with unfurl==1.2.0}/bin/unfurl" --home '' $cmd > $out/$name/console.raw 2>&1; echo $? > $out/$name/exitcode.txt
  sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$work/##g" $out/$name/console.raw > $out/$name/console.txt; rm $out/$name/console.raw
  cp ensemble.yaml $out/$name/ensemble.after.yaml; [ -f jobs.tsv ] && cp jobs.tsv $out/$name/jobs.tsv
  if [ -d jobs ]; then mkdir -p $out/$name/jobs; for f in jobs/*.yaml; do [ -f jobs.before/$(basename $f) ] || cp $f $out/$name/jobs/; done; fi
  rm -rf jobs.before
  git log --stat -1 | grep -v '^commit\|^Date' > $out/$name/git-last-commit.txt
done
