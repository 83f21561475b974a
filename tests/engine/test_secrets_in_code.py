"""Code that names a credential is kept; a credential in a command line or a glued key is not.

The credentials are templates and every value is made at run time by a seeded generator (no
credential-shaped literal in the repository).
"""

from __future__ import annotations

import random
import string

import pytest

from keepmind.engine.errors import SecretBlocked
from keepmind.engine.memory import Provenance
from keepmind.engine.secretfilter import MARKER, redact, secret_kinds
from keepmind.engine.store import MemoryDraft, refuse_secret_draft
from support.secret_corpus import chosen_password

RNG = random.Random(20261203)


def mixed():
    """Letters in both cases and digits, no symbol (a shell or an env file keeps it whole)."""
    return "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(6)) + RNG.choice(string.digits) * 2


# A value with digits inside is no name in code, and an env file has no names without `$`.
@pytest.mark.parametrize("template", [
    "DB_PASSWORD={v}", "API_TOKEN={v}", "password={v}", "db.password={v}", "POSTGRES_PASSWORD: {v}",
    "password = {v}",
])
def test_a_literal_under_a_credential_key_is_still_a_secret(template):
    for _ in range(10):
        assert redact(template.format(v=mixed())) == (template.format(v=MARKER), ["credential_assignment"])


@pytest.mark.parametrize("template", [
    "To reach the prod db run PGPASSWORD={v} psql -h db.internal -U app", "DBPASSWORD={v}",
    "adminPassword: {v}", "userPassword={v}", "export GITHUBTOKEN={v}",
])
def test_a_credential_word_glued_to_a_prefix_is_a_key(template):
    for _ in range(10):
        assert redact(template.format(v=mixed())) == (template.format(v=MARKER), ["credential_assignment"])


@pytest.mark.parametrize("text", ["compass: north", "bypass: enabled", "the bypass = manual", "passport: expired"])
def test_pass_glued_to_a_word_is_not_a_key(text):
    assert secret_kinds(text) == []


@pytest.mark.parametrize("template", [
    "Deploy with curl -u deploy:{v} https://ci.example.com/hook",
    "curl -s -X POST --user deploy:{v} https://ci.example.com/hook",
    "wget --user=deploy:{v} https://ci.example.com/file",
    "mysql -p'{v}'", "mysql -uroot -p{v} shop", "sshpass -p '{v}' ssh host", "sshpass -p{v} ssh host",
])
def test_a_password_on_a_command_line_is_found_and_only_it_is_redacted(template):
    for _ in range(10):
        sentence = template.format(v=chosen_password(RNG))
        assert redact(sentence) == (template.format(v=MARKER), ["command_line_password"]), sentence


@pytest.mark.parametrize("text", [
    "mysql -p$PASS", "mysql -p<password>", "curl -u user:$TOKEN https://ci.example.com/hook",
    'curl -u "$CI_USER:$CI_PASS" https://ci.example.com', "curl -u deploy: https://ci.example.com",
    "mysql -u root -p shop", "mysql -P 3306 -h db.internal", "sshpass -e ssh host",
    "docker run -u 1000:1000 app",
])
def test_a_command_that_asks_for_its_password_or_reads_a_variable_holds_none(text):
    assert secret_kinds(text) == []


def _draft(section: str) -> MemoryDraft:
    external = ({"kind": "file", "ref": "h.md", "line": 5, "section": section},)
    return MemoryDraft(title="Setup notes", body="The client loads its key at start.", memory_class="durable_fact",
                       audience="personal", boundary="default", author_audience="personal", source="import",
                       provenance=Provenance(None, (), external))


def test_provenance_is_checked_as_its_strings_not_its_json_text():
    # in JSON the quotes of the heading read \" and that backslash hid the line's code shape
    refuse_secret_draft(_draft('Setup notes › api_key = os.environ["OPENAI_API_KEY"]'))
    # ... and hid a credential written as JSON
    with pytest.raises(SecretBlocked) as blocked:
        refuse_secret_draft(_draft(f'Setup notes › {{"password": "{chosen_password(RNG)}"}}'))
    assert blocked.value.kinds == ("credential_assignment",)


def test_a_markdown_heading_holding_code_in_double_quotes_imports(engine, tmp_path):
    path = tmp_path / "h.md"
    path.write_text('# Setup notes\n\n## api_key = os.environ["OPENAI_API_KEY"]\n\n'
                    "- The client loads its key at start.\n")
    report = engine.import_path(path, audience="personal", boundary="default")
    assert report["errors"] == [] and report["queued"] == 1
    engine.drain_checkpoints()
    outcome = engine.import_outcome(report["checkpoints"])
    assert outcome["counts"]["kept"] == 1, outcome
