#!/bin/sh
# scripts/check-comments over the tree: no comment in the source or the scripts tells history instead
# of a contract, or names a script path that does not exist.
# Usage: check_comments_test.sh SOURCE_DIR
exec python3 "$1/scripts/check-comments" "$1"
