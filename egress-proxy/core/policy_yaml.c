/*
 * policy_yaml.c: libyaml events into a small tree with 1-based positions,
 * for the policy validator. Refuses aliases (a policy is read by people;
 * an alias also lets a small file expand into a huge one), several
 * documents, and nesting deeper than a policy ever needs.
 */
#include <stdio.h>
#include <string.h>

#include <yaml.h>

#include "policy_int.h"

#define YTREE_DEPTH_MAX	16

struct ytree {
	struct parena	*a;
	struct ynode	*root;
	struct ynode	*stack[YTREE_DEPTH_MAX];
	int		 depth;
	int		 docs;
};

static void	ytree_syntax_error(const yaml_parser_t *, const char *buf,
		    size_t len, struct yerror *);
static void	ytree_offset_pos(const char *buf, size_t len, size_t off,
		    int *line, int *col);
static int	ytree_event(struct ytree *, const yaml_event_t *,
		    struct yerror *);
static struct ynode *ytree_node(struct ytree *, enum ynode_type,
		    const yaml_event_t *);
static void	ytree_error(struct yerror *, const yaml_mark_t *,
		    const char *);

int
ytree_parse(struct parena *a, const char *buf, size_t len,
    struct ynode **root, struct yerror *err)
{
	yaml_parser_t	parser;
	yaml_event_t	ev;
	struct ytree	t;
	int		done = 0, rc = 0;

	memset(&t, 0, sizeof(t));
	t.a = a;
	*root = NULL;
	if (!yaml_parser_initialize(&parser)) {
		err->line = err->col = 0;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf,
	    len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			ytree_syntax_error(&parser, buf, len, err);
			rc = -1;
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rc = ytree_event(&t, &ev, err);
		yaml_event_delete(&ev);
		if (rc == -1)
			break;
	}
	yaml_parser_delete(&parser);
	if (rc == 0)
		*root = t.root;
	return rc;
}

/* Handle one event: build nodes, open and close containers. */
static int
ytree_event(struct ytree *t, const yaml_event_t *ev, struct yerror *err)
{
	struct ynode	*n;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++t->docs > 1) {
			ytree_error(err, &ev->start_mark, "a policy file "
			    "holds one YAML document; remove the second "
			    "'---' and what follows, or move it to its own "
			    "file");
			return -1;
		}
		return 0;
	case YAML_ALIAS_EVENT:
		ytree_error(err, &ev->start_mark, "aliases (*name) are not "
		    "supported in policy files; write the value out");
		return -1;
	case YAML_SCALAR_EVENT:
		if (ytree_node(t, YNODE_SCALAR, ev) != NULL)
			return 0;
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (t->depth == YTREE_DEPTH_MAX) {
			ytree_error(err, &ev->start_mark, "nesting is too "
			    "deep for a policy file");
			return -1;
		}
		n = ytree_node(t, ev->type == YAML_SEQUENCE_START_EVENT ?
		    YNODE_SEQ : YNODE_MAP, ev);
		if (n == NULL)
			break;
		t->stack[t->depth++] = n;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (t->depth > 0)
			t->depth--;
		return 0;
	default:
		return 0;
	}
	err->line = err->col = 0;
	snprintf(err->msg, sizeof(err->msg), "out of memory");
	return -1;
}

/* Make a node from an event and hang it under the open container. */
static struct ynode *
ytree_node(struct ytree *t, enum ynode_type type, const yaml_event_t *ev)
{
	struct ynode	*n, *parent;

	n = parena_alloc(t->a, sizeof(*n));
	if (n == NULL)
		return NULL;
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	if (type == YNODE_SCALAR) {
		n->len = ev->data.scalar.length;
		n->value = parena_strndup(t->a,
		    (const char *)ev->data.scalar.value, n->len);
		if (n->value == NULL)
			return NULL;
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	}
	if (t->depth == 0) {
		if (t->root == NULL)
			t->root = n;
		return n;
	}
	parent = t->stack[t->depth - 1];
	if (parent->last != NULL)
		parent->last->next = n;
	else
		parent->first = n;
	parent->last = n;
	parent->n++;
	return n;
}

static void
ytree_error(struct yerror *err, const yaml_mark_t *m, const char *msg)
{
	err->line = (int)m->line + 1;
	err->col = (int)m->column + 1;
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
}

/*
 * Turn libyaml's error into a message with a position. Reader errors
 * (invalid UTF-8, control characters) carry only a byte offset, so the
 * position is counted here.
 */
static void
ytree_syntax_error(const yaml_parser_t *p, const char *buf, size_t len,
    struct yerror *err)
{
	const char	*problem = p->problem ? p->problem : "unknown error";
	size_t		 off;

	switch (p->error) {
	case YAML_READER_ERROR:
		off = p->problem_offset < len ? p->problem_offset : len;
		if (strstr(problem, "UTF-8") == NULL) {
			ytree_offset_pos(buf, len, off, &err->line, &err->col);
			snprintf(err->msg, sizeof(err->msg),
			    "%s (byte 0x%02x); policy files must be text "
			    "without control characters", problem,
			    p->problem_value & 0xff);
			return;
		}
		/* Point at the byte that starts the bad sequence. */
		if (strstr(problem, "trailing") != NULL) {
			while (off > 0 && ((unsigned char)buf[off - 1] &
			    0xc0) == 0x80)
				off--;
			if (off > 0)
				off--;
		}
		ytree_offset_pos(buf, len, off, &err->line, &err->col);
		snprintf(err->msg, sizeof(err->msg), "invalid UTF-8 at byte "
		    "0x%02x; policy files must be UTF-8 text (convert it, "
		    "e.g. with iconv -t UTF-8)", off < len ?
		    (unsigned char)buf[off] : 0);
		return;
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
		err->line = (int)p->problem_mark.line + 1;
		err->col = (int)p->problem_mark.column + 1;
		if (p->context != NULL)
			snprintf(err->msg, sizeof(err->msg), "YAML syntax "
			    "error: %s (%s at line %d); check indentation, "
			    "colons and quoting", problem, p->context,
			    (int)p->context_mark.line + 1);
		else
			snprintf(err->msg, sizeof(err->msg), "YAML syntax "
			    "error: %s; check indentation, colons and "
			    "quoting", problem);
		return;
	default:
		err->line = err->col = 0;
		snprintf(err->msg, sizeof(err->msg), "cannot parse: %s",
		    problem);
		return;
	}
}

/* 1-based line and column (in characters) of byte offset off. */
static void
ytree_offset_pos(const char *buf, size_t len, size_t off, int *line,
    int *col)
{
	size_t	i;

	*line = 1;
	*col = 1;
	if (off > len)
		off = len;
	for (i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)buf[i] & 0xc0) != 0x80)
			(*col)++;
	}
}
