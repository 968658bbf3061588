/* svgplot: small inline SVG line charts for the trial report: several
 * series on shared axes with "nice" ticks, a legend, and a percentile axis
 * (0% .. 99.99%, spread as -log10(1 - p), the way latency-by-percentile
 * plots are drawn). */
#ifndef STORHD_TRIAL_SVGPLOT_H
#define STORHD_TRIAL_SVGPLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct svgplot_series {
    const char *label;
    const double *x, *y;
    size_t n;
} svgplot_series;

typedef struct svgplot_chart {
    const char *title, *xlabel, *ylabel;
    int width, height;
    bool x_percentile; /* x holds percentiles 0..100 */
} svgplot_chart;

/* Appends <svg>...</svg> to out. */
void svgplot_lines(buf *out, const svgplot_chart *c, const svgplot_series *s, size_t ns);
/* Appends text with &, <, >, " escaped. */
void svgplot_escape(buf *out, const char *text);

#endif
