#!/bin/sh
# Runs the command examples of the README and of docs/*.md with the built binary and expects exit
# status 0 from each. Only fenced blocks opened with "```sh check" are run, and in them only the lines
# that start with "hipstudio " (a trailing "# ..." is a shell comment). The lines of one page run in
# order in one scratch folder, so a page can write a capture and then read it; assets/ is linked into
# that folder, so "@assets/prompts/default.txt" names the default prompt. Commands without --model
# run on the default model (stories15M), which scripts/setup fetches. Keep checked examples fast
# (stories15M, few tokens): the whole test should stay under a minute.
# Usage: commands_test.sh SOURCE_DIR HIPSTUDIO_BINARY WORK_DIR
set -u
src=$(cd "$1" && pwd) bin=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
hipstudio() { timeout 120 "$bin" "$@"; }
failed=0 ran=0
for page in "$src/README.md" "$src"/docs/*.md; do
  [ -f "$page" ] || continue
  name=$(basename "$page" .md)
  dir="$work/$name"
  mkdir -p "$dir" && ln -s "$src/assets" "$dir/assets"
  # The checked lines of this page, one a line.
  awk '/^```sh check[ \t]*$/ { on = 1; next } /^```/ { on = 0 } on && /^hipstudio / { print }' "$page" >"$dir/commands.txt"
  while IFS= read -r line; do
    ran=$((ran + 1))
    start=$(date +%s)
    if (cd "$dir" && eval "$line") >"$dir/out.log" 2>&1 </dev/null; then
      echo "ok   ($(( $(date +%s) - start )) s) $name: $line"
    else
      status=$?
      echo "FAIL (exit $status) $name: $line"
      sed 's/^/    /' "$dir/out.log" | tail -20
      failed=$((failed + 1))
    fi
  done <"$dir/commands.txt"
done
echo "docs commands: $ran run, $failed failed"
[ "$ran" -gt 0 ] || { echo "no checked commands found (blocks opened with \`\`\`sh check)"; exit 1; }
[ "$failed" -eq 0 ]
