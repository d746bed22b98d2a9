#!/bin/bash
# re-capture every scenario of this folder with Unfurl 1.2.0 (run from this folder)
here=$(cd $(dirname $0) && pwd)
J="--approve --dirty=ok --commit ensemble.yaml"
for s in ${@:-dependent discover discover-ok check check-ok virtual select substitute default default-only default-unmatched dependent-created}; do
  rm -rf $here/$s
  bash $here/capture.sh $here/$s.yaml $here/$s "1-validate:validate ensemble.yaml" "2-plan:plan ensemble.yaml" \
    "3-deploy:deploy $J" "4-deploy-again:deploy $J" "5-check:check --dirty=ok --commit ensemble.yaml" "6-undeploy:undeploy $J"
done
