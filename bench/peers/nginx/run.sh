#!/usr/bin/env bash
# nginx as a storhd peer for storh-trial --peer (bench/http/peer.sh):
#   bench/peers/nginx/run.sh static|limit
# static: GET /v1/docs/{c}/{id} from the record files storhd wrote, no
#   open-file cache (storhd stat()s every record it serves, so nginx opens
#   every file): what a team would put in front of the files instead.
# limit: the same with open_file_cache, and POST /rpc/page answered with
#   the bytes of $ANSWER (a page RPC answer saved by peer.sh): the same
#   bytes from memory, the HTTP limit of this machine for them.
# Environment: PORT (from storh-trial), STORHD (a storhd binary: the helper
# that stores doc-get's records on the root nginx serves), JWT_PUBLIC_KEY
# (the helper checks the trial's tokens like storhd), ANSWER (limit).
# The helper stops when nginx does. Ends with exec: the pid storh-trial
# measures is nginx's, the one process that serves.
set -euo pipefail
mode=${1:?static or limit}
here=$(cd "$(dirname "$0")" && pwd)
: "${PORT:?}" "${STORHD:?a storhd binary for the helper}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/storhd-nginx-XXXXXX")
chmod 755 "$dir"
mkdir -p "$dir/root"
helper=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
auth=()
[ -n "${JWT_PUBLIC_KEY:-}" ] && auth=(--jwt-public-key "$JWT_PUBLIC_KEY")
"$STORHD" --root "$dir/root" --listen "127.0.0.1:$helper" --access-log=false "${auth[@]}" \
  >"$dir/helper.log" 2>&1 &
hpid=$!
# when nginx (this shell after exec) is gone: stop the helper, remove the dir
self=$$
(
  while kill -0 "$self" 2>/dev/null; do sleep 0.5; done
  kill "$hpid" 2>/dev/null
  while kill -0 "$hpid" 2>/dev/null; do sleep 0.1; done
  rm -rf "$dir"
) </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$helper/healthz" >/dev/null && break
  sleep 0.1
done
cache="open_file_cache off;"
answer=$dir/no-answer
if [ "$mode" = limit ]; then
  cache="open_file_cache max=10000 inactive=60s; open_file_cache_valid 60s;"
  answer=$(realpath "${ANSWER:?the page RPC answer to serve}")
fi
sed -e "s|@DIR@|$dir|g" -e "s|@ROOT@|$dir/root|g" -e "s|@PORT@|$PORT|g" \
  -e "s|@HELPER@|$helper|g" -e "s|@ANSWER@|$answer|g" -e "s|@CACHE@|$cache|g" \
  "$here/nginx.conf.in" >"$dir/nginx.conf"
exec nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
