"""What GET /search refuses that its OpenAPI description cannot state, for .ci/fuzz-api.

Schemathesis loads this module (SCHEMATHESIS_HOOKS=fuzz_hooks) and generates, for /search,
only queries these rules allow; every check then runs on them, positive-data acceptance
included. docs/openapi.md lists the rules:

- in `fts` mode, `q` must be an expression FTS5 parses: SQLite's own FTS5 (Python's sqlite3
  module) is asked, on a table shaped as hooklog's `search` (migrations/0013_search.sql);
- at most 64 terms and 8 prefix terms (`word*`) in the expression `q` becomes
  (src/http/search.rs: MAX_TERMS, MAX_PREFIXES, terms_of);
- `cursor` must be the `nextCursor` a search handed out, so none is made up.
"""

import sqlite3

import schemathesis

MAX_TERMS = 64
MAX_PREFIXES = 8

_fts = sqlite3.connect(":memory:")
_fts.execute(
    "CREATE VIRTUAL TABLE search USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')"
)


def fts5_parses(expression):
    try:
        _fts.execute("SELECT rowid FROM search WHERE search MATCH ?", (expression,)).fetchall()
        return True
    except sqlite3.Error:
        return False


def terms_of(expression):
    """The terms and prefixes of an FTS5 expression, counted as src/http/search.rs counts them."""
    terms = prefixes = 0
    quoted = in_term = False
    for c in expression:
        if c == '"':
            if not quoted:
                terms += 1
                in_term = False
            quoted = not quoted
        elif quoted:
            continue
        elif c == "*":
            prefixes += 1
        elif c.isspace() or c in "()":
            in_term = False
        else:
            if not in_term:
                terms += 1
            in_term = True
    return terms, prefixes


def words_bound(text):
    """At least as many terms and prefixes as `words` mode makes of `text` (each piece between
    white space or double quotes becomes at most one term)."""
    pieces = text.replace('"', " ").split()
    return len(pieces), text.count("*")


@schemathesis.hook("filter_query").apply_to(path="/search")
def search_the_server_takes(ctx, query):
    if not query:
        return True
    if "cursor" in query:
        return False
    q = query.get("q")
    if not isinstance(q, str):
        return True
    if query.get("mode") == "fts":
        if not fts5_parses(q):
            return False
        terms, prefixes = terms_of(q)
    else:
        terms, prefixes = words_bound(q)
    return terms <= MAX_TERMS and prefixes <= MAX_PREFIXES
