#!/usr/bin/env bash
# The CI smoke form of the HTTP trials (a ctest): every scenario, three short
# trials in random order, against the test command's PostgreSQL
# (STORHD_TEST_PG). Passes when no request failed, results.json validates
# against bench/http/results.schema.json, and the report page has its
# sections, a plot per trial and the download link.
#   bench/http/smoke.sh STORHD STORH_TRIAL OUT_DIR
set -euo pipefail
storhd=${1:?storhd binary}
trial=${2:?storh-trial binary}
out=${3:?output directory}
cd "$(dirname "$0")/../.."
: "${STORHD_TEST_PG:?scripts/test.sh provides the PostgreSQL of the tests}"
rm -rf "$out"
mkdir -p "$out"
psql "$STORHD_TEST_PG" -q -f deploy/postgres/fixture.sql >/dev/null
deploy/postgres/mint.sh keys "$out/keys" >/dev/null
"$trial" --storhd="$storhd" --pg="$STORHD_TEST_PG" --jwt-key="$out/keys/jwt.key" \
  --jwt-pub="$out/keys/jwt.pub" --trials=3 --warmup=1 --duration=2 --sample-ms=250 \
  --records=200 --api-arg=--rpc-cache-bytes=4194304 --disk-publish=0.2 --fail-on-errors \
  --out="$out/run"
jsonschema -i "$out/run/results.json" bench/http/results.schema.json
echo "results.json: valid against bench/http/results.schema.json"
left=$(find "$out/run/work" -maxdepth 1 -name 'root-*' | wc -l)
[ "$left" -eq 0 ] || { echo "the run left $left trial roots or disk-probe directories"; exit 1; }
jq -e '[.scenarios[].trials[] | .disk_publish_per_s > 0] | all' "$out/run/results.json" \
  >/dev/null || { echo "a trial has no disk-publish figure"; exit 1; }
trials=$(jq '[.scenarios[].trials[]] | length' "$out/run/results.json")
scenarios=$(jq '.scenarios | length' "$out/run/results.json")
[ "$trials" -eq $((3 * scenarios)) ] || { echo "expected $((3 * scenarios)) trials, got $trials"; exit 1; }
jq -e '[.scenarios[].trials[] | .successful > 0 and .api.pss_samples > 0] | all' \
  "$out/run/results.json" >/dev/null || { echo "a trial served nothing or was never sampled"; exit 1; }
page="$out/run/index.html"
for section in '<h2>Results</h2>' '<h2>Workload and environment</h2>' '<h2>Method</h2>' \
               '<h2>How to reproduce</h2>' 'download href="results.json"'; do
  grep -qF "$section" "$page" || { echo "index.html lacks $section"; exit 1; }
done
plots=$(grep -o '<svg class=plot' "$page" | wc -l)
[ "$plots" -eq $((3 * trials)) ] || { echo "expected $((3 * trials)) plots, got $plots"; exit 1; }
echo "index.html: 4 sections, $plots plots for $trials trials, the JSON download link"
