#!/bin/bash
# Unfurl 1.2.0 on each input/*.yaml: deploy with --jobexitcode error, then list the files
exec "$(dirname "$0")/../capture.sh" "$@"
