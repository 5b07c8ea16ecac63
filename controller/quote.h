/*
 * quote.h: names and text that a sandbox wrote, made safe to show on a
 * reviewer's terminal.
 *
 * A byte sequence is "unsafe" for a terminal when it is a C0 control
 * (0x00-0x1f) or DEL (0x7f), a C1 control (U+0080-U+009F, as one byte or
 * UTF-8 encoded), a bidirectional formatting character (U+061C, U+200E,
 * U+200F, U+202A-U+202E, U+2066-U+2069, which reorder what is shown), a
 * character that shows nothing or breaks the line (zero-width U+200B-
 * U+200D, U+2060-U+2064, U+FEFF, U+2028, U+2029, soft hyphen, variation
 * selectors, Hangul fillers, tags: a name holding one looks like another
 * name), a character that renders blank or as nothing (quote_blank_cp,
 * by Unicode property: "build.sh" + U+00A0 must not pass for build.sh,
 * nor "guest" + U+17B4 for "guest" in a file's text), or a byte that is
 * not part of valid UTF-8. Everything else (printable ASCII and
 * well-formed UTF-8) is shown as it is.
 *
 * In a name, a character drawn like '/' or '.' is unsafe too
 * (risky_lookalike_cp: U+2215, U+2044, U+FF0F, U+2024, ...: "src" +
 * U+2215 + "app.py" must not pass for src/app.py).
 *
 * Names are quoted the way git quotes them (core.quotePath=false): a
 * name with an unsafe byte, '"' or '\\', or whose last character (or a
 * folder's) is a space, is printed between double quotes with C escapes
 * (\a \b \t \n \v \f \r \" \\, and \ooo, three octal digits, for every
 * other unsafe byte). Any other name is printed as it is. So a listing line is always one line and a name can never pose as
 * another line or erase one.
 *
 * Text (one line of a file, without its newline) is shown with every
 * unsafe byte as \xHH, except a tab and a carriage return at the very end
 * of the line (CRLF line ends; quote_line can show that one too). A
 * backslash before 'x' is shown as \x5c, so every "\x" shown starts an
 * escape: the text "\x0d" reads "\x5cx0d", a CR reads "\x0d".
 *
 * Pure functions: no I/O but the FILE * they are given.
 */
#ifndef SG_QUOTE_H
#define SG_QUOTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Length of the well-formed UTF-8 sequence at s (at most n bytes), 1 for
 * ASCII, 0 if s does not start one (bad lead byte, truncated, overlong,
 * surrogate, past U+10FFFF). *cp gets the code point.
 */
size_t	quote_utf8_len(const unsigned char *s, size_t n, uint32_t *cp);

/* Is the code point one of the unsafe ones above (C0, DEL, C1, bidi, invisible)? */
int	quote_unsafe_cp(uint32_t cp);

/*
 * Does the code point render blank or as space (White_Space, a space
 * separator, Default_Ignorable_Code_Point, U+2800), other than U+0020?
 */
int	quote_blank_cp(uint32_t cp);

/* 1 if name (len bytes) must be quoted, else 0. */
int	quote_path_needed(const char *name, size_t len);

/* Write name, quoted if needed; returns -1 on a write error, else 0. */
int	quote_path(FILE *, const char *name, size_t len);

/*
 * The quoted form of a NUL-terminated name (malloc'ed), or NULL when out
 * of memory.
 */
char	*quote_path_dup(const char *name);

/*
 * Write one line of text (len bytes, no newline) with unsafe bytes as
 * \xHH. *escaped (may be NULL) grows by the number of bytes escaped.
 * Returns -1 on a write error, else 0.
 */
int	quote_text(FILE *, const char *line, size_t len, size_t *escaped);

/*
 * quote_text, the CR at the end of the line kept only when keep_cr (a
 * diff's - and + lines show it, so a line-end change is seen).
 */
int	quote_line(FILE *, const char *line, size_t len, int keep_cr,
	    size_t *escaped);

/*
 * msg shown as text (unsafe bytes as \xHH, so a name inside an error
 * message can't reach the terminal raw; a CR at its end too: it is a
 * value inside a line, atk1921k F3), malloc'ed; NULL when out of memory.
 */
char	*quote_text_dup(const char *msg);

#endif
