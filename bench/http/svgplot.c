#include "svgplot.h"

#include <math.h>
#include <string.h>

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                     "#ff7f0e", "#9467bd", "#8c564b"};
#define NCOLORS (sizeof colors / sizeof colors[0])
#define LEFT 58
#define RIGHT 24
#define TOP 26
#define BOTTOM 42

void svgplot_escape(buf *out, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++) {
        switch (*c) {
        case '&':
            buf_appends(out, "&amp;");
            break;
        case '<':
            buf_appends(out, "&lt;");
            break;
        case '>':
            buf_appends(out, "&gt;");
            break;
        case '"':
            buf_appends(out, "&quot;");
            break;
        default:
            buf_appendc(out, *c);
        }
    }
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks. */
static double nice_step(double span)
{
    if (span <= 0)
        return 1;
    double raw = span / 5, mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static double pct_x(double p)
{
    if (p >= 99.9999)
        p = 99.9999;
    return -log10(1 - p / 100);
}

static void tick_label(buf *out, double v)
{
    if (fabs(v) >= 10000)
        buf_printf(out, "%.0fk", v / 1000);
    else if (v == floor(v))
        buf_printf(out, "%.0f", v);
    else
        buf_printf(out, "%g", v);
}

void svgplot_lines(buf *out, const svgplot_chart *c, const svgplot_series *s, size_t ns)
{
    double xmin = 0, xmax = 0, ymax = 0;
    bool any = false;
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            double x = c->x_percentile ? pct_x(s[k].x[i]) : s[k].x[i];
            if (!any || x < xmin)
                xmin = x;
            if (!any || x > xmax)
                xmax = x;
            if (s[k].y[i] > ymax)
                ymax = s[k].y[i];
            any = true;
        }
    if (c->x_percentile) {
        xmin = 0;
        xmax = xmax < 4 ? 4 : ceil(xmax);
    }
    if (xmax <= xmin)
        xmax = xmin + 1;
    double ystep = nice_step(ymax > 0 ? ymax : 1);
    double ytop = ceil((ymax > 0 ? ymax : 1) / ystep) * ystep;
    double pw = c->width - LEFT - RIGHT, ph = c->height - TOP - BOTTOM;
#define PX(x) (LEFT + ((x)-xmin) / (xmax - xmin) * pw)
#define PY(y) (TOP + ph - (y) / ytop * ph)
    buf_printf(out, "<svg class=plot width=%d height=%d viewBox=\"0 0 %d %d\" role=img><title>",
               c->width, c->height, c->width, c->height);
    svgplot_escape(out, c->title);
    buf_printf(out, "</title><text x=%d y=16 class=t>", LEFT);
    svgplot_escape(out, c->title);
    buf_appends(out, "</text>");
    for (double y = 0; y <= ytop + ystep / 2; y += ystep) {
        buf_printf(out,
                   "<line x1=%d x2=%.1f y1=%.1f y2=%.1f class=g /><text x=%d y=%.1f "
                   "class=yl>",
                   LEFT, LEFT + pw, PY(y), PY(y), LEFT - 4, PY(y) + 4);
        tick_label(out, y);
        buf_appends(out, "</text>");
    }
    if (c->x_percentile) {
        static const double ticks[] = {0, 50, 90, 99, 99.9, 99.99};
        static const char *const names[] = {"0%", "50%", "90%", "99%", "99.9%", "99.99%"};
        for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++)
            buf_printf(out,
                       "<line x1=%.1f x2=%.1f y1=%d y2=%.1f class=g /><text x=%.1f y=%.1f "
                       "class=xl>%s</text>",
                       PX(pct_x(ticks[i])), PX(pct_x(ticks[i])), TOP, TOP + ph, PX(pct_x(ticks[i])),
                       TOP + ph + 14, names[i]);
    } else {
        double xstep = nice_step(xmax - xmin);
        for (double x = ceil(xmin / xstep) * xstep; x <= xmax + xstep / 100; x += xstep) {
            buf_printf(out, "<text x=%.1f y=%.1f class=xl>", PX(x), TOP + ph + 14);
            tick_label(out, x);
            buf_appends(out, "</text>");
        }
    }
    buf_printf(out, "<line x1=%d x2=%.1f y1=%.1f y2=%.1f class=a />", LEFT, LEFT + pw, TOP + ph,
               TOP + ph);
    buf_printf(out, "<line x1=%d x2=%d y1=%d y2=%.1f class=a />", LEFT, LEFT, TOP, TOP + ph);
    buf_printf(out, "<text x=%.1f y=%d class=xt>", LEFT + pw / 2, c->height - 6);
    svgplot_escape(out, c->xlabel);
    buf_printf(out, "</text><text transform=\"translate(12 %.1f) rotate(-90)\" class=xt>",
               TOP + ph / 2);
    svgplot_escape(out, c->ylabel);
    buf_appends(out, "</text>");
    for (size_t k = 0; k < ns; k++) {
        const char *col = colors[k % NCOLORS];
        buf_printf(out, "<polyline fill=none stroke=\"%s\" stroke-width=1.6 points=\"", col);
        for (size_t i = 0; i < s[k].n; i++) {
            double x = c->x_percentile ? pct_x(s[k].x[i]) : s[k].x[i];
            buf_printf(out, "%s%.1f,%.1f", i ? " " : "", PX(x), PY(s[k].y[i]));
        }
        buf_appends(out, "\" />");
        if (s[k].label && ns > 1) {
            double lx = LEFT + 8 + (double)k * 90;
            buf_printf(out,
                       "<rect x=%.1f y=%d width=10 height=3 fill=\"%s\" /><text x=%.1f y=%d "
                       "class=lg>",
                       lx, TOP + 4, col, lx + 14, TOP + 8);
            svgplot_escape(out, s[k].label);
            buf_appends(out, "</text>");
        }
    }
#undef PX
#undef PY
    buf_appends(out, "</svg>");
}
