# compare-storh: storh's bench JSON (seconds per timed block) next to a
# storhd run: per-operation figures, ratio, limit and fractions, goal
# verdicts; an unreadable file exits 2. Files are written here, not kept.
file(MAKE_DIRECTORY ${WORK})
set(php "{\"dataset\":1000,\"engine\":\"all\",\"php\":\"8.2\",\"results\":{\"doc\":{\"put\":2.0,\"get\":0.01}},\"peakRssKb\":102400}")
set(cur "{\"schema\":1,\"dataset\":1000,\"metrics\":{\"doc.put\":{\"value\":1000,\"unit\":\"records/s\",\"better\":\"higher\"},\"doc.get_answer\":{\"value\":5,\"unit\":\"µs\",\"better\":\"lower\"},\"limit.doc_put\":{\"value\":1000,\"unit\":\"records/s\",\"better\":\"higher\"},\"limit.stat\":{\"value\":2,\"unit\":\"µs\",\"better\":\"lower\"},\"rss.peak\":{\"value\":50,\"unit\":\"MiB\",\"better\":\"lower\"}}}")
file(WRITE ${WORK}/php.json "${php}")
file(WRITE ${WORK}/cur.json "${cur}")
execute_process(COMMAND ${BENCH} compare-storh ${WORK}/php.json ${WORK}/cur.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
execute_process(COMMAND ${BENCH} compare-storh ${WORK}/php.json,${WORK}/php.json ${WORK}/missing.json
  RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
set(want
  "`doc.put` <-> `doc.put` | 500 records/s | 1000 records/s | 2.00x | 1000 records/s | 50% | 100% | met"
  "`doc.get_answer` <-> `doc.get` | 10.00 µs | 5.00 µs | 2.00x | 2.00 µs | 20% | 40% | NOT met"
  "`rss.peak` <-> `peakRssKb` | 100 MiB | 50.00 MiB | 2.00x | - | - | - | met"
  "`doc.stream` <-> `doc.stream` | | (not in storhd's run)")
set(bad 0)
foreach(w IN LISTS want)
  string(FIND "${out}" "${w}" at)
  if(at EQUAL -1)
    message("missing: ${w}")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
if(NOT rc EQUAL 0 OR NOT missing EQUAL 2 OR NOT bad EQUAL 0)
  message(FATAL_ERROR "compare-storh: rc=${rc} missing=${missing} bad=${bad}\n${out}")
endif()
message("6 passed, 0 failed")
