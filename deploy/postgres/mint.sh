#!/usr/bin/env bash
# Test keys and tokens for the page RPC and /v1 (nothing here is committed):
#   deploy/postgres/mint.sh keys DIR          RSA key pair: DIR/jwt.key, DIR/jwt.pub
#   deploy/postgres/mint.sh token DIR CLAIMS  an RS256 token, e.g. '{"tenant":7,"scope":"*"}'
# Tokens expire in an hour; storh-token is built by cmake (build/*/bench/).
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
keys)
  dir=${2:?DIR}
  mkdir -p "$dir"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/jwt.key" 2>/dev/null
  openssl pkey -in "$dir/jwt.key" -pubout -out "$dir/jwt.pub"
  chmod 600 "$dir/jwt.key"
  echo "$dir/jwt.key $dir/jwt.pub"
  ;;
token)
  dir=${2:?DIR}
  tool=$(ls build/*/bench/storh-token 2>/dev/null | head -n 1)
  [ -n "$tool" ] || { echo "build storh-token first (cmake --build build/release)" >&2; exit 1; }
  exec "$tool" "$dir/jwt.key" "${3:?CLAIMS}" 3600
  ;;
*)
  echo "usage: mint.sh keys DIR | token DIR CLAIMS" >&2
  exit 2
  ;;
esac
