/* allocs: heap allocation calls of the bench process so far (malloc,
 * calloc, realloc); -1 where they are not counted (sanitizer builds). */
#ifndef STORH_BENCH_ALLOCS_H
#define STORH_BENCH_ALLOCS_H

long long allocs_count(void);

#endif
