# shellcheck shell=bash
# Sourced by scripts/container.sh (after bootstrap.sh and build.sh): smoke,
# the CI smoke test of the built images: PostgreSQL and storhd on a private
# network, HTTP checks, the CLI, user and HEALTHCHECK in the image, Prometheus
# (monitoring), two page-RPC replicas behind HAProxy (replicas) and a short
# trial from the trial image. Its containers, network and volume are removed
# on exit.
: "${state:?scripts/container/bootstrap.sh sets it}"
run=smoke-$$
port=$((20000 + RANDOM % 20000))
base=http://127.0.0.1:$port
prom=http://127.0.0.1:$((port + 1))
lb=http://127.0.0.1:$((port + 2))
cleanup() {
  podman rm -f -v -t 0 "$run-api" "$run-pg" "$run-prom" "$run-rpc1" "$run-rpc2" "$run-lb" \
    >/dev/null 2>&1 || true
  podman network rm -f "$run" >/dev/null 2>&1 || true
  podman volume rm -f "$run-keys" >/dev/null 2>&1 || true
}
fail() {
  echo "container smoke: FAILED: $*"
  local c
  for c in api pg prom rpc1 rpc2 lb; do
    podman logs "$run-$c" 2>&1 | tail -n 20 || true
  done
  exit 1
}
expect() { # expect STATUS METHOD PATH [curl args]: the reply body goes to $body
  local want=$1 method=$2 path=$3 got
  shift 3
  got=$(curl -s -o "$state/body" -w '%{http_code}' -X "$method" "$@" "$base$path")
  body=$(cat "$state/body")
  [ "$got" = "$want" ] || fail "$method $path: $got, want $want: $body"
  echo "ok $method $path -> $got"
}

smoke() {
  trap cleanup EXIT
  podman network create "$run" >/dev/null
  podman volume create "$run-keys" >/dev/null
  podman run --rm -v "$run-keys:/keys" localhost/storhd-trial keys /keys >/dev/null
  podman run -d --name "$run-pg" --network "$run" --network-alias postgres \
    -v "$run-keys:/keys:ro" localhost/storhd-postgres >/dev/null 2>>"$state/podman.log"
  podman run -d --name "$run-api" --network "$run" --network-alias api --init --cpuset-cpus=0 \
    -p "127.0.0.1:$port:8080" -v "$run-keys:/keys:ro" \
    -e STORHD_JWT_PUBLIC_KEY=/keys/jwt.pub -e STORHD_RPC_FUNCTIONS=page \
    -e "STORHD_RPC_CONNINFO=host=postgres dbname=storhd user=storhd passfile=/keys/pgpass" \
    localhost/storhd >/dev/null 2>>"$state/podman.log" # podman: "no systemd" noise
  local i
  for i in $(seq 120); do # up, and PostgreSQL reachable (its first start loads the fixture)
    curl -fs -o /dev/null "$base/readyz" && break
    sleep 0.5
  done
  expect 200 GET /healthz
  expect 200 GET /readyz
  local token
  token=$(podman run --rm -v "$run-keys:/keys:ro" localhost/storhd-trial \
    storh-token /keys/jwt.key '{"sub":"smoke","tenant":7,"role":"reader","scope":"*"}' 600)
  local auth=(-H "Authorization: Bearer $token" -H 'Content-Type: application/json')
  expect 401 GET /v1/docs/smoke/_stats
  expect 201 POST /v1/docs/smoke "${auth[@]}" -d '{"title":"in a container"}'
  local id
  id=$(echo "$body" | jq -r .id)
  expect 200 GET "/v1/docs/smoke/$id" "${auth[@]}"
  [ "$(echo "$body" | jq -r .data.title)" = "in a container" ] || fail "read back: $body"
  expect 201 POST /v1/logs/smoke "${auth[@]}" -d '{"type":"smoke"}'
  expect 201 POST /v1/queues/smoke/jobs "${auth[@]}" -d '{"to":"x"}'
  expect 200 POST /rpc/page "${auth[@]}" -d '{"limit":100}'
  [ "$(echo "$body" | jq 'length')" = 100 ] || fail "page() rows: $(echo "$body" | jq length)"
  [ "$(echo "$body" | jq '[.[].tenant] | unique')" = "[
  7
]" ] || fail "page() rows of other tenants"
  expect 200 GET /metrics
  grep -q 'storhd_http_requests_total{route="/rpc/{function}",method="POST",status="200"} 1' \
    "$state/body" || fail "metrics do not count the call"
  # the CLI in the image, on the volume; the user; the HEALTHCHECK
  podman exec "$run-api" storh verify /data smoke >/dev/null || fail "storh verify in the container"
  [ "$(podman exec "$run-api" id -u)" = 10001 ] || fail "storhd does not run as uid 10001"
  # podman runs HEALTHCHECKs from systemd timers; without systemd, run it here
  podman healthcheck run "$run-api" >/dev/null 2>&1 || fail "the HEALTHCHECK failed"
  [ "$(podman inspect --format '{{.State.Health.Status}}' "$run-api")" = healthy ] ||
    fail "the HEALTHCHECK did not report healthy"
  echo "ok storh verify in the container, uid 10001, HEALTHCHECK healthy"
  monitoring
  replicas "$token"
  # a short trial from the trial image against the running API
  local out=$PWD/build/container-smoke
  rm -rf "$out"
  mkdir -p "$out"
  podman run --rm --network "$run" --cpuset-cpus="$(($(nproc) - 1))" -v "$run-keys:/keys:ro" \
    -v "$out:/results" -e "TRIAL_TARGET=http://$run-api:8080" \
    -e "TRIAL_IMAGE_API=$(podman image inspect --format '{{.Id}}' localhost/storhd)" \
    -e "TRIAL_IMAGE_PG=$(podman image inspect --format '{{.Id}}' localhost/storhd-postgres)" \
    localhost/storhd-trial run --scenarios=rpc-hit,doc-get --trials=1 --warmup=1 --duration=2 \
    --records=100 --sample-ms=250 --fail-on-errors --api-cpus=0 --wrk-cpus="$(($(nproc) - 1))" \
    >"$out/trial.log" 2>&1 || { tail -n 20 "$out/trial.log"; fail "the trial image's run"; }
  /usr/bin/jsonschema -i "$out/results.json" bench/http/results.schema.json ||
    fail "results.json from the container does not validate"
  jq -e '.config.mode == "remote" and .environment.container and
         ([.environment.images[] | test("^(sha256:)?[0-9a-f]{64}$")] | all) and ([.scenarios[].trials[].successful] | all(. > 0))' \
    "$out/results.json" >/dev/null || fail "results.json: $(head -c 300 "$out/results.json")"
  grep -E "req/s" "$out/trial.log"
  echo "container smoke: passed (images built from the Dockerfile, storhd with PostgreSQL, HTTP, a trial from the trial image)"
}

# Prometheus (deploy/prometheus) scrapes the API: the target is up and the
# rules evaluate (a recording rule has a value, every group is healthy).
monitoring() {
  podman run -d --name "$run-prom" --network "$run" -p "127.0.0.1:$((port + 1)):9090" \
    localhost/storhd-prometheus >/dev/null 2>>"$state/podman.log"
  local i up="" rec="" health="" nrules
  nrules=$(grep -cE '^ +- (alert|record):' deploy/prometheus/storhd.rules.yml)
  for i in $(seq 90); do
    up=$(curl -fs "$prom/api/v1/query" --data-urlencode 'query=up{job="storhd"}' |
      jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
    rec=$(curl -fs "$prom/api/v1/query" --data-urlencode 'query=storhd:http_requests:rate5m' |
      jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
    # "healthy of all" rules, each evaluated at least once
    health=$(curl -fs "$prom/api/v1/rules" | jq -r '[.data.groups[].rules[]] |
      "\([.[] | select(.health == "ok" and (.lastEvaluation | startswith("0001") | not))] |
      length) of \(length)"' 2>/dev/null || true)
    [ "$up" = 1 ] && [ -n "$rec" ] && [ "$health" = "$nrules of $nrules" ] && break
    sleep 1
  done
  [ "$up" = 1 ] || fail "Prometheus does not see the API up: up=$up"
  [ -n "$rec" ] || fail "the recording rule storhd:http_requests:rate5m has no value"
  [ "$health" = "$nrules of $nrules" ] ||
    fail "rules evaluated healthy: $health (want $nrules of $nrules)"
  local firing
  firing=$(curl -fs "$prom/api/v1/alerts" | jq -r '[.data.alerts[] | .labels.alertname] | join(",")')
  echo "ok Prometheus scrapes the API (up 1), $nrules rules evaluated, storhd:http_requests:rate5m=$rec, alerts firing: ${firing:-none}"
}

# The "replicas" profile: two page-RPC replicas behind HAProxy over the one
# PostgreSQL. Both answer; one stopped mid-run loses no request.
replicas() {
  local token=$1 r
  for r in rpc1 rpc2; do
    podman run -d --name "$run-$r" --network "$run" --network-alias "$r" --init \
      -v "$run-keys:/keys:ro" -e STORHD_JWT_PUBLIC_KEY=/keys/jwt.pub -e STORHD_RPC_FUNCTIONS=page \
      -e "STORHD_RPC_CONNINFO=host=postgres dbname=storhd user=storhd passfile=/keys/pgpass" \
      -e STORHD_ACCESS_LOG=false localhost/storhd >/dev/null 2>>"$state/podman.log"
  done
  podman run -d --name "$run-lb" --network "$run" -p "127.0.0.1:$((port + 2)):8080" \
    localhost/storhd-haproxy >/dev/null 2>>"$state/podman.log"
  local auth=(-H "Authorization: Bearer $token" -H 'Content-Type: application/json')
  local i seen=""
  for i in $(seq 120); do # both replicas in the rotation (ready, checked twice)
    # (until HAProxy listens curl fails: under pipefail that must not end the run)
    { curl -s -D - -o /dev/null "${auth[@]}" -d '{"limit":10}' "$lb/rpc/page" 2>/dev/null || true; } |
      tr -d '\r' | awk -F': ' 'tolower($1) == "x-served-by" {print $2}' >>"$state/served"
    seen=$(sort -u "$state/served" | tr '\n' ' ')
    [ "$seen" = "rpc1 rpc2 " ] && break
    sleep 0.25
  done
  rm -f "$state/served"
  [ "$seen" = "rpc1 rpc2 " ] || fail "the balancer does not reach both replicas: $seen"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$lb/v1/docs/x/_stats")" = 404 ] ||
    fail "the balancer passes a route other than /rpc/"
  echo "ok both replicas answer through HAProxy, which refuses routes other than /rpc/"
  # 4 clients x 150 calls; rpc1 is stopped (SIGTERM) 1.5 s in
  local out=$state/lb-run k
  rm -rf "$out"
  mkdir -p "$out"
  local t0 t1
  t0=$(date +%s.%N)
  for k in 1 2 3 4; do
    (
      for i in $(seq 150); do
        curl -s -o /dev/null -w '%{http_code} %header{x-served-by}\n' "${auth[@]}" \
          -d '{"limit":10}' "$lb/rpc/page" || true
      done >"$out/client-$k"
    ) &
  done
  sleep 1.5
  podman stop -t 10 "$run-rpc1" >/dev/null 2>>"$state/podman.log"
  wait
  t1=$(date +%s.%N)
  cat "$out"/client-* >"$out/all"
  local total ok by1 by2
  total=$(wc -l <"$out/all")
  ok=$(grep -c '^200 ' "$out/all" || true)
  by1=$(grep -c ' rpc1$' "$out/all" || true)
  by2=$(grep -c ' rpc2$' "$out/all" || true)
  [ "$total" = 600 ] && [ "$ok" = 600 ] ||
    fail "calls through HAProxy with a replica stopped: $ok of $total answered 200: $(grep -v '^200 ' "$out/all" | sort | uniq -c | head)"
  [ "$by1" -gt 0 ] && [ "$by2" -gt "$by1" ] || fail "replica shares: rpc1 $by1, rpc2 $by2"
  local retried
  retried=$(podman logs "$run-lb" 2>&1 | grep -cE 'retries=\+?[1-9]' || true) # +N: redispatched
  printf 'ok 600 calls through HAProxy in %.1f s, all 200 (rpc1 %s, rpc2 %s, %s retried; rpc1 stopped 1.5 s in)\n' \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$by1" "$by2" "$retried"
}

