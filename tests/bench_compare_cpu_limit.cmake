# compare-storh: a CPU-bound row held against a limit the harness measures
# (the queue's bulk calls; a push of unchanged records against the stat
# scan made in turns with it) is met at 10x storh, or at >= 80% of its limit
# and never slower than storh; under 80% and under 10x it is not.
file(MAKE_DIRECTORY ${WORK})
# storh: 1000 jobs in 0.1 s each = 10k jobs/s
set(php "{\"dataset\":1000,\"engine\":\"queue\",\"php\":\"8.2\",\"results\":{\"queue\":{\"bulk_enqueue\":0.1,\"bulk_claim\":0.1,\"bulk_complete\":0.1},\"mirror\":{\"reconcile\":0.1}}}")
set(m "\"unit\":\"jobs/s\",\"better\":\"higher\"")
set(r "\"unit\":\"records/s\",\"better\":\"higher\"")
set(cur "{\"schema\":1,\"dataset\":1000,\"metrics\":{\
\"queue.enqueue_many\":{\"value\":18000,${m}},\"limit.queue_enqueue_many\":{\"value\":20000,${m}},\
\"queue.claim_many\":{\"value\":15000,${m}},\"limit.queue_claim_many\":{\"value\":20000,${m}},\
\"queue.complete_many\":{\"value\":8500,${m}},\"limit.queue_complete_many\":{\"value\":10000,${m}},\
\"mirror.push_nochange\":{\"value\":30000,${r}},\"limit.mirror_push_nochange\":{\"value\":35000,${r}},\
\"limit.stat_scan\":{\"value\":100000,${r}}}}")
file(WRITE ${WORK}/php.json "${php}")
file(WRITE ${WORK}/cur.json "${cur}")
execute_process(COMMAND ${BENCH} compare-storh ${WORK}/php.json ${WORK}/cur.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
set(want
  "`queue.enqueue_many` <-> `queue.bulk_enqueue` | 10.0k jobs/s | 18.0k jobs/s | 1.80x | 20.0k jobs/s | 50% | 90% | met"
  "`queue.claim_many` <-> `queue.bulk_claim` | 10.0k jobs/s | 15.0k jobs/s | 1.50x | 20.0k jobs/s | 50% | 75% | NOT met"
  "`queue.complete_many` <-> `queue.bulk_complete` | 10.0k jobs/s | 8500 jobs/s | 0.85x | 10.0k jobs/s | 100% | 85% | NOT met"
  "`mirror.push_nochange` <-> `mirror.reconcile` | 10.0k records/s | 30.0k records/s | 3.00x | 35.0k records/s | 29% | 86% | met")
set(bad 0)
foreach(w IN LISTS want)
  string(FIND "${out}" "${w}" at)
  if(at EQUAL -1)
    message("missing: ${w}")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
if(NOT rc EQUAL 0 OR NOT bad EQUAL 0)
  message(FATAL_ERROR "compare-storh: rc=${rc} bad=${bad}\n${out}")
endif()
message("4 passed, 0 failed")
