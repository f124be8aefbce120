#!/usr/bin/env bash
# Index the Apache HTTP Server 2.4 manual as a user would: `hoptree index build` over the English
# HTML pages that Debian's apache2-doc package installs (244 pages, about 4,550 passages; about
# 13 minutes on two cores, most of it embedding). The questions of
# apache_httpd_questions.jsonl were written and checked against apache2-doc 2.4.71-1~deb12u1.
#
#   usage: evals/data/docs/build_index.sh INDEX_DIR [DOC_ROOT]
#
# DOC_ROOT defaults to the package's path, /usr/share/doc/apache2-doc/manual/en
# (apt-get install apache2-doc). HOPTREE overrides the hoptree command (default: the repository's
# .venv/bin/hoptree). The build runs at the lowest CPU priority; re-running it adds nothing.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 INDEX_DIR [DOC_ROOT]" >&2
    exit 2
fi
index=$1
root=${2:-/usr/share/doc/apache2-doc/manual/en}
written_against="2.4.71-1~deb12u1"

if [ ! -d "$root" ]; then
    echo "$root: no such directory; install the manual with: apt-get install apache2-doc" >&2
    exit 2
fi
if command -v dpkg-query >/dev/null 2>&1; then
    installed=$(dpkg-query -W -f='${Version}' apache2-doc 2>/dev/null || true)
    if [ -n "$installed" ] && [ "$installed" != "$written_against" ]; then
        echo "note: apache2-doc $installed is installed; the questions were checked against" \
            "$written_against (run evals/data/docs/check_questions.py $root)" >&2
    fi
fi

repo=$(cd "$(dirname "$0")/../../.." && pwd)
hoptree=${HOPTREE:-$repo/.venv/bin/hoptree}
exec nice -n 19 "$hoptree" index build --index "$index" "$root"
