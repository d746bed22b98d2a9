#!/bin/bash
# this folder's probes were recorded by the shared script
exec "$(dirname "$0")/../capture-validate.sh" "$(dirname "$0")"
