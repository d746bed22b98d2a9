#!/bin/bash
# this folder's captures were made by the shared script
exec "$(dirname "$0")/../capture.sh" "$@"
