#!/bin/sh
# The trial image's entrypoint.
#   keys DIR   the deployment's secrets, made fresh and never stored in the
#              image: an RSA key pair for JWTs (jwt.key for the trial user,
#              jwt.pub for all), a PostgreSQL password (pg.pass for the
#              postgres user) and its libpq password file (pgpass for storhd)
#   run [storh-trial options]
#              the trial suite against the API at $TRIAL_TARGET
#              (http://api:8080; its /readyz waited for up to 120 s) into /results,
#              recording the image ids $TRIAL_IMAGE_API and $TRIAL_IMAGE_PG
set -eu
cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
keys)
  dir=${1:-/keys}
  mkdir -p "$dir"
  # once per deployment: a later run (compose starts this step again with
  # every "run") must not change the secrets under running services
  if [ -s "$dir/jwt.key" ] && [ -s "$dir/jwt.pub" ] && [ -s "$dir/pg.pass" ] && [ -s "$dir/pgpass" ]; then
    echo "keys: kept the ones in $dir"
    exit 0
  fi
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/jwt.key" 2>/dev/null
  openssl pkey -in "$dir/jwt.key" -pubout -out "$dir/jwt.pub"
  pass=$(openssl rand -hex 16)
  printf '%s\n' "$pass" >"$dir/pg.pass"
  printf 'postgres:5432:storhd:storhd:%s\n' "$pass" >"$dir/pgpass"
  chown 10002 "$dir/jwt.key" && chmod 600 "$dir/jwt.key"
  chmod 644 "$dir/jwt.pub"
  chown 10003 "$dir/pg.pass" && chmod 600 "$dir/pg.pass"
  chown 10001 "$dir/pgpass" && chmod 600 "$dir/pgpass"
  echo "keys: made in $dir"
  ;;
run)
  exec storh-trial --target="${TRIAL_TARGET:-http://api:8080}" --wait=120 \
    --jwt-key=/keys/jwt.key --out=/results \
    ${TRIAL_IMAGE_API:+--image-api="$TRIAL_IMAGE_API"} \
    ${TRIAL_IMAGE_PG:+--image-pg="$TRIAL_IMAGE_PG"} "$@"
  ;;
*)
  exec "$cmd" "$@"
  ;;
esac
