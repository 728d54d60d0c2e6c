/* posemb probe order, which posemb probe hands its arguments to. */
#ifndef POSEMB_CLI_PROBE_ORDER_H
#define POSEMB_CLI_PROBE_ORDER_H

/* argv[0] is "order"; returns the exit status (commands.h). */
int cmd_probe_order(int argc, char **argv);

#endif
