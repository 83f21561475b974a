"""schemathesis against the served OpenAPI document of a real server: no 5xx, no off-schema answer.

Runs the schemathesis CLI (examples, coverage, fuzzing and stateful phases, positive and negative
data) as a subprocess against a live server. Every check runs except positive_data_acceptance:
some valid-looking inputs are refused on purpose for reasons a schema cannot state (a duplicate
token name, a turn whose texts are both blank). Token revocation and shutdown are left out
because the fuzzer would revoke its own token, or stop the server it tests. ensure_resource_availability is off too: its
inferred links read a 404 for a memory id in a body as "the session just created is missing".
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SEED = 20261130
# Schema-violating bodies can also be too large: 413 (server.max_body_bytes) is a right answer too.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 409, 413, 415, 422]
"""


def st_command() -> str:
    local = Path(sys.executable).parent / "st"
    return str(local) if local.exists() else shutil.which("st")


def test_schemathesis_finds_no_server_error_and_no_schema_violation(live, tmp_path):
    secret = live.make_token("schemathesis", "personal")
    excluded = ["revoke_token", "shutdown"]
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    cmd = [st_command(), "--config-file", str(config), "run", f"{live.url}/api/v1/openapi.json", "-H", f"Authorization: Bearer {secret}",
           "--checks", "all", "--exclude-checks", "positive_data_acceptance,ensure_resource_availability",
           "--max-examples", "12", "--seed", str(SEED), "--workers", "1", "--generation-database", "none",
           "--report-dir", str(tmp_path / "report"), "--no-color", "--request-timeout", "20"]
    for op in excluded:
        cmd += ["--exclude-operation-id", op]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "Tested:" in output
