/* posemb plot lines: small multiples from a long CSV table (plot_lines.c). */
#ifndef POSEMB_CLI_PLOT_LINES_H
#define POSEMB_CLI_PLOT_LINES_H

typedef struct plot_lines_args {
    const char *csv, *out;               /* the table, the figure (.png, .svg, .pdf) */
    const char *title, *xlabel, *ylabel; /* NULL: none */
    const char *reference;               /* the series drawn in grey in every panel; NULL: none */
    int cols;                            /* panels per row; 0: posemb_plot_lines_grid's choice */
    int markers;                         /* 1: a marker at every point, as well as the line */
    int free_x;                          /* 1: each panel's x axis from its own points */
} plot_lines_args;

/* Reads a->csv (columns panel, series, x, y and no other), draws it with
 * posemb_plot_lines_grid and prints one line on stderr: what it wrote, or
 * "posemb plot: FILE:LINE: problem". 0, or 1 with no figure written. */
int plot_lines(const plot_lines_args *a);

#endif
