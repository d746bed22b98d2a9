#!/bin/bash
# usage: run.sh CASEDIR OUTDIR step cmd...   (CASEDIR: a dir of input files)
# copies CASEDIR into a scratch git repo once (kept in /tmp/hI/scratch/NAME), runs the command, captures outputs.
case=$1; out=$(realpath -m $2); step=$3; shift 3
name=$(basename $case)
s=/tmp/hI/scratch/$name
if [ ! -d $s ]; then mkdir -p $s; cp -r $case/. $s/; (cd $s && git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init); fi
d=$out/$name/$step; mkdir -p $d
cp $s/ensemble.yaml $d/ensemble.before.yaml
(cd $s && /work/venvs/unfurl120/bin/unfurl --home '' "$@" > /tmp/hI/console.raw 2>&1; echo $? > $d/exitcode.txt)
sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$s/##g" -e "s#$s#.#g" /tmp/hI/console.raw > $d/console.txt
cp $s/ensemble.yaml $d/ensemble.after.yaml
[ -f $s/jobs.tsv ] && cp $s/jobs.tsv $d/
echo "== $name $step exit $(cat $d/exitcode.txt)"; tail -${TAILN:-25} $d/console.txt
