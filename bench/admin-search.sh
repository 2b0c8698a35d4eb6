#!/usr/bin/env bash
# The admin's user search over a million users (issue 18): the server with its managed
# PostgreSQL, a million users seeded with generate_series (typed custom fields: isMarried,
# weight, height, dateOfBirth, city; created over two years), then wrk on each kind of search,
# one at a time, with an admin token: the latency percentiles of each (p99 is the figure).
# Usage: bench/admin-search.sh [users=1000000] [seconds=10] [connections=4]
#   EXOSPHERE_BIN=path: use that binary instead of building (scripts/build-release.sh) here.
# Needs: wrk, curl, psql, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${1:-1000000}
SECONDS_PER_RUN=${2:-10}
CONNECTIONS=${3:-4}
PORT=18489
DIR=$(mktemp -d /tmp/exo-admin-bench.XXXXXX)
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

. bench/lib.sh
exosphere_binary "$DIR"
chmod 755 "$DIR"
start_managed_server
API="http://127.0.0.1:$PORT"

started=$(date +%s)
psql "$CONN" -qAtX -v ON_ERROR_STOP=1 <<SQL
INSERT INTO field_types (name, type) VALUES
    ('isMarried', 'boolean'), ('weight', 'integer'), ('height', 'double'), ('dateOfBirth', 'date'), ('city', 'string')
ON CONFLICT DO NOTHING;
INSERT INTO users (email, email_normalized, password_hash, firstname, lastname, data, created_at, updated_at)
SELECT 'User' || n || '@mail' || (n % 997) || '.example', 'user' || n || '@mail' || (n % 997) || '.example',
       '\$scrypt\$ln=1,r=8,p=1\$c2FsdHNhbHRzYWx0c2FsdA\$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'First' || n, 'Last' || n,
       jsonb_build_object(
           'isMarried', n % 2 = 0, 'weight', 45 + n % 60, 'height', (145 + n % 50) / 100.0,
           'dateOfBirth', to_char(date '1950-01-01' + ((n::int8 * 7919) % 20000)::int, 'YYYY-MM-DD'),
           'city', (ARRAY['Jakarta', 'Surabaya', 'Bandung', 'Medan', 'Semarang', 'Makassar', 'Palembang', 'Denpasar'])[1 + n % 8]),
       now() - n * interval '63 seconds', now()
FROM generate_series(1, $USERS) n;
VACUUM ANALYZE users;
SQL
echo "$USERS users seeded in $(( $(date +%s) - started )) s; table and indexes: $(psql "$CONN" -qAtX -c "SELECT pg_size_pretty(pg_total_relation_size('users'))")"

printf '%s\n' 'bench admin passphrase' | "$BIN" admin create --email bench@example.com --password-stdin --database-url "$CONN" --log-level warning
TOKEN=$(curl -fs "$API/admin/signin" -H 'Content-Type: application/json' \
    -d '{"email": "bench@example.com", "password": "bench admin passphrase"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])')
# A cursor deep in the newest-first order: the position of the (users/2)th newest user, encoded as
# the server's cursors are (base64url of the microseconds, big-endian, and the id's 16 bytes).
AFTER=$(psql "$CONN" -qAtX -F ' ' -c "SELECT (extract(epoch FROM created_at) * 1000000)::int8, id FROM users ORDER BY created_at DESC, id DESC OFFSET $((USERS / 2)) LIMIT 1" |
    python3 -c 'import base64, sys, uuid; m, i = sys.stdin.read().split(); print(base64.urlsafe_b64encode(int(m).to_bytes(8, "big") + uuid.UUID(i).bytes).decode().rstrip("="))')

printf '%-58s %8s %8s %8s %8s %9s %s\n' search p50 p90 p99 max req/s found
while read -r name query; do
    found=$(curl -fs -H "Authorization: Bearer $TOKEN" "$API/admin/users?limit=25&$query" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["users"]))')
    out=$(wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_RUN}s" --latency -H "Authorization: Bearer $TOKEN" "$API/admin/users?limit=25&$query")
    p50=$(awk '$1 == "50%" {print $2}' <<< "$out")
    p90=$(awk '$1 == "90%" {print $2}' <<< "$out")
    p99=$(awk '$1 == "99%" {print $2}' <<< "$out")
    max=$(awk '$1 == "Latency" {print $4; exit}' <<< "$out")
    rps=$(awk '$1 == "Requests/sec:" {print $2}' <<< "$out")
    errors=$(grep -E 'Non-2xx|Socket errors' <<< "$out" || true)
    printf '%-58s %8s %8s %8s %8s %9s %s %s\n' "$name ($query)" "$p50" "$p90" "$p99" "$max" "$rps" "$found" "$errors"
done <<LIST
newest-page order=newest
email-rare q=user123456
email-common q=mail7
email-none q=zzzq
field-selective field.dateOfBirth=1994-05-17
field-integer field.weight=78
field-none field.weight=999
field-rare-pair field.city=Bandung&field.dateOfBirth=1994-05-17
field-double field.height=1.62
field-boolean+string field.isMarried=true&field.city=Bandung
field+email field.city=Medan&q=mail3
deep-cursor after=$AFTER
LIST
