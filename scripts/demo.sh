#!/usr/bin/env bash
# Mounts a temporary store, writes a short session with a compaction through ctl,
# shows every view, and unmounts. Run from anywhere: scripts/demo.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cargo build --quiet --manifest-path "$repo/Cargo.toml"
fen="$repo/target/debug/fen-fs"
work=$(mktemp -d)
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() { "$fen" umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

run() { printf '\n$ %s\n' "$*"; "$@"; }

"$fen" mount "$mnt" --store "$work/store" --log-file "$work/daemon.log" --no-detect
echo "mounted $work/store at $mnt"
cd "$mnt"

# Root ctl: create a session; the reply comes back on the same handle.
exec 3<>ctl
echo '{"cwd":"/home/demo/proj","role":"user","content":"Add a --verbose flag to the CLI"}' >&3
read -r reply <&3
exec 3>&-
echo "root ctl replied: $reply"
s="./${reply##* }"
first_id=$(echo "$reply" | cut -d' ' -f2)

# Session ctl: append with plain echo.
echo '{"role":"assistant","content":"Added --verbose in src/main.rs"}' >> "$s/ctl"
echo '{"type":"bash-output","command":"cargo test","exit":0}' >> "$s/ctl"
echo '{"type":"title","title":"Verbose flag"}' >> "$s/ctl"
exec 3<>"$s/ctl"
echo '{"role":"user","content":"Now document it in the README"}' >&3
read -r reply <&3
exec 3>&-
kept=$(echo "$reply" | cut -d' ' -f2)
echo "{\"type\":\"compaction\",\"summary\":\"User asked for --verbose; it was added and tested.\",\"first-kept-entry-id\":\"$kept\"}" >> "$s/ctl"
echo '{"role":"assistant","content":"README updated"}' >> "$s/ctl"
echo "(first entry $first_id; compaction keeps from $kept)"

# A bad line is refused (the shell reports the write error) and nothing is appended.
echo 'writing a line that sets "id" (refused: fen-fs assigns ids):'
if echo '{"role":"user","id":"mine"}' >> "$s/ctl"; then echo "unexpected: bad line accepted"; exit 1; fi

run ls -l
run ls -l ./home-demo-proj
run ls -l "$s"
run cat "$s/conversation.json"
run cat "$s/summary.txt"
run cat "$s/meta.json"
run cat ./home-demo-proj/index.json
run cat "$s/ctl"
run cat "$s/transcript.jsonl"
cd /
"$fen" umount "$mnt"
echo
echo "unmounted; demo done"
