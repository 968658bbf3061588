#!/usr/bin/env bash
# storh and storhd side by side: runs PHP storh's own bench (bench/bench.php
# of a storh checkout) and storh-bench interleaved, PHP, C, PHP, C, ..., at
# one dataset size on the same filesystem, then prints and writes the
# compare-storh table of the medians (ratios, class goals, limits).
#   bench/storh-side-by-side.sh /path/to/storh [--dataset=10000] [--runs=3]
#   STORH_DIR=/path/to/storh bench/storh-side-by-side.sh
# Needs php (PHP=..., else php8.2 or php) with pdo_sqlite, and the checkout's
# vendor/ (composer install). Writes build/side-by-side/ (JSON of every run,
# side-by-side.md).
set -euo pipefail
cd "$(dirname "$0")/.."
storh=${STORH_DIR:-}
dataset=10000
runs=3
for a in "$@"; do
  case $a in
    --dataset=*) dataset=${a#*=} ;;
    --runs=*) runs=${a#*=} ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "storh-side-by-side: unknown option $a" >&2; exit 2 ;;
    *) storh=$a ;;
  esac
done
php=${PHP:-$(command -v php8.2 || command -v php || true)}
if [ -z "$php" ]; then
  echo "storh-side-by-side: no php found: install php8.2-cli and php8.2-sqlite3, or set PHP=" >&2
  exit 2
fi
if [ -z "$storh" ]; then
  echo "storh-side-by-side: no storh checkout given: pass its path or set STORH_DIR" >&2
  exit 2
fi
if [ ! -f "$storh/bench/bench.php" ] || [ ! -f "$storh/vendor/autoload.php" ]; then
  echo "storh-side-by-side: $storh is not a storh checkout with vendor/ (run composer install there)" >&2
  exit 2
fi
# (grep reads all of it: with pipefail, grep -q leaving early would SIGPIPE php
# and report pdo_sqlite missing when it is there)
"$php" -m | grep -i '^pdo_sqlite$' >/dev/null ||
  echo "storh-side-by-side: php has no pdo_sqlite: storh will skip its mirror figures" >&2

dir="build/bench-default"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target storh_bench >/dev/null
bench="$dir/bench/storh-bench"

out="$PWD/build/side-by-side"
rm -rf "$out"
mkdir -p "$out/tmp"
timer=()
command -v /usr/bin/time >/dev/null && timer=(/usr/bin/time -f %M -o)
php_list=""
c_list=""
for i in $(seq 1 "$runs"); do
  echo "storh-side-by-side: run $i/$runs: storh (PHP), $dataset records" >&2
  # storh's scratch root is sys_get_temp_dir(): put it on storhd's filesystem
  if [ ${#timer[@]} -gt 0 ]; then
    TMPDIR="$out/tmp" "${timer[@]}" "$out/php-$i.rss" "$php" "$storh/bench/bench.php" \
      --dataset="$dataset" --engine=all --output="$out/php-$i.json" >/dev/null
    # storh's JSON has no memory figure: add the run's peak RSS (kB)
    # shellcheck disable=SC2016 # PHP code, not shell
    "$php" -r '$j = json_decode(file_get_contents($argv[1]), true);
      $j["peakRssKb"] = (int) trim(file_get_contents($argv[2]));
      file_put_contents($argv[1], json_encode($j, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES));' \
      "$out/php-$i.json" "$out/php-$i.rss"
  else
    TMPDIR="$out/tmp" "$php" "$storh/bench/bench.php" --dataset="$dataset" --engine=all \
      --output="$out/php-$i.json" >/dev/null
  fi
  echo "storh-side-by-side: run $i/$runs: storhd (C), $dataset records" >&2
  "$bench" run --dataset="$dataset" --engine=limits,doc,log,queue,cache,uuid,filter,mirror \
    --out="$out/storhd-$i.json" >/dev/null
  php_list+="${php_list:+,}$out/php-$i.json"
  c_list+="${c_list:+,}$out/storhd-$i.json"
done
"$bench" compare-storh "$php_list" "$c_list" | tee "$out/side-by-side.md"
echo "storh-side-by-side: wrote $out/side-by-side.md" >&2
