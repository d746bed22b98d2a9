#!/bin/sh
echo example "$@"
