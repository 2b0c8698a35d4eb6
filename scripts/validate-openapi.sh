#!/bin/sh
# Validates the OpenAPI document that `exosphere openapi` prints with openapi-spec-validator
# (`pip install openapi-spec-validator`; PYTHON names another interpreter, such as a venv's).
set -eu
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
document=$(mktemp "${TMPDIR:-/tmp}/openapi.XXXXXX.json")
trap 'rm -f "$document"' EXIT
swift build --product exosphere >&2
swift run --skip-build exosphere openapi > "$document"
"$python" -m openapi_spec_validator "$document"
