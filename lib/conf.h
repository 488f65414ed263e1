/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_CONF_H
#define MODSIGN_CONF_H

/*
 * The configuration file format of modsignd.conf(5) and the client's
 * config: one "key = value" per line, '#' starts a comment line, blank
 * lines are ignored, keys are the long command-line option names, and a
 * repeatable option is given on several lines.  Values run to the end of
 * the line with surrounding blanks removed; there is no quoting.
 */

#include <stddef.h>

#define CONF_MAX_FILE (256u * 1024)
#define CONF_MAX_LINE 4096u

/*
 * Called for each setting; @key and @value are NUL-terminated and valid
 * for the duration of the call only.  A negative return stops parsing and
 * is returned by conf_parse().
 */
typedef int (*conf_cb)(const char *key, const char *value, void *userdata);

/*
 * Parse @path.  Returns 0; -errno from opening or reading; -EBADMSG for a
 * line that is not "key = value" (or too long, or holds a NUL); or the
 * callback's error.  While a callback runs, *@ret_line is the 1-based
 * line it is called for (so that it can name where a setting came from);
 * on failure it is the line at fault (0 if none), on success 0.  Never
 * logs.
 */
int conf_parse(const char *path, conf_cb cb, void *userdata, unsigned *ret_line);

/* The same from the open file @fd (a caller that checked whose file it
 * is before trusting it: owned_file_open()); @fd stays open. */
int conf_parse_fd(int fd, conf_cb cb, void *userdata, unsigned *ret_line);

/* The same over a buffer (for fuzzing and tests). */
int conf_parse_buf(const char *buf, size_t len, conf_cb cb, void *userdata,
		   unsigned *ret_line);

#endif
