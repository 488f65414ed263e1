/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_LOG_H
#define MODSIGND_LOG_H

/*
 * The daemon logs to stderr, one line per event.  Under systemd
 * (JOURNAL_STREAM set) each line carries a "<N>" syslog priority prefix so
 * the journal records the level.  Never pass secrets to these functions.
 */

#include <syslog.h>

#include "macro.h"

void log_setup(void);
void log_msg(int prio, const char *fmt, ...) _printf_(2, 3);

/* Log and return @err (a negative errno), with %m bound to it. */
int log_errno(int prio, int err, const char *fmt, ...) _printf_(3, 4);

#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_error_errno(err, ...) log_errno(LOG_ERR, err, __VA_ARGS__)
#define log_warning_errno(err, ...) log_errno(LOG_WARNING, err, __VA_ARGS__)

/* The last OpenSSL error as text (thread-local buffer), or "unknown". */
const char *log_ssl_error(void);

#endif
