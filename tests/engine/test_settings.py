"""Settings: validated on load, unknown keys warned about, every key documented."""

import json
import re
from pathlib import Path

import pytest

from keepmind.engine import settings as st
from keepmind.engine.errors import SettingsError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_every_key_is_documented_with_its_default():
    documented = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([^`]+)` \| `([^`]*)` \|", line)
        if m:
            documented[m.group(1)] = m.group(2)
    missing = [k.name for k in st.KEYS if k.name not in documented]
    assert missing == [], f"undocumented settings: {missing}"
    wrong_default = [k.name for k in st.KEYS if json.loads(documented[k.name]) != k.default]
    assert wrong_default == [], f"docs/settings.md shows a wrong default for {wrong_default}"
    stale = sorted(set(documented) - {k.name for k in st.KEYS})
    assert stale == [], f"docs/settings.md documents keys that do not exist: {stale}"


def test_missing_file_means_defaults(tmp_path):
    assert st.load(tmp_path / "keepmind.json").values == st.defaults().values


def test_flat_and_nested_forms_are_equivalent(tmp_path):
    flat = tmp_path / "a.json"
    flat.write_text(json.dumps({"memory.enabled": False, "memory.recall.max_items": 2}))
    nested = tmp_path / "b.json"
    nested.write_text(json.dumps({"memory": {"enabled": False, "recall": {"max_items": 2}}}))
    assert st.load(flat).values == st.load(nested).values
    assert st.load(flat)["memory.enabled"] is False


@pytest.mark.parametrize("raw, key, allowed", [
    ({"memory.enabled": "yes"}, "memory.enabled", "true or false"),
    ({"memory.recall.max_items": 0}, "memory.recall.max_items", "from 1 to 10"),
    ({"memory.recall.vector_weight": 2}, "memory.recall.vector_weight", "from 0.0 to 1.0"),
    ({"session.observer_idle_seconds": 5}, "session.observer_idle_seconds", "from 10 to"),
    ({"memory.recall.vector_weight": float("nan")}, "memory.recall.vector_weight", "from 0.0 to 1.0"),
    ({"memory.recall.min_cosine": float("nan")}, "memory.recall.min_cosine", "a number"),
    ({"session.observer_idle_seconds": float("inf")}, "session.observer_idle_seconds", "from 10 to"),
    ({"policy.cross_boundary_reads": ["x"]}, "policy.cross_boundary_reads", "an object mapping"),
])
def test_bad_values_name_the_key_and_allowed_values(raw, key, allowed):
    with pytest.raises(SettingsError) as info:
        st.validate(raw)
    assert key in info.value.message and allowed in info.value.message


def test_every_bad_value_is_said_at_once_not_only_the_first():
    with pytest.raises(SettingsError) as info:
        st.validate({"memory.enabled": "yes", "memory.recall.max_items": 0, "memory.recall.top_k": 5})
    assert sorted(info.value.problems) == ["memory.enabled", "memory.recall.max_items"]
    assert "true or false" in info.value.problems["memory.enabled"]
    assert "from 1 to 10" in info.value.problems["memory.recall.max_items"]
    assert all(said in info.value.message for said in info.value.problems.values())


def test_unknown_keys_are_warned_about_not_ignored_silently():
    result = st.validate({"memory.enabeld": False, "memory.recall.max_items": 2})
    assert result["memory.enabled"] is True and result["memory.recall.max_items"] == 2
    assert len(result.warnings) == 1 and "memory.enabeld" in result.warnings[0]


def test_invalid_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "keepmind.json"
    bad.write_text('{"memory.enabled": false,,}')
    with pytest.raises(SettingsError, match="not valid JSON"):
        st.load(bad)


def test_save_roundtrip_keeps_only_changes(tmp_path):
    path = tmp_path / "keepmind.json"
    changed = st.defaults().with_overrides(memory__enabled=False)
    st.save(path, changed)
    assert json.loads(path.read_text()) == {"memory.enabled": False}
    assert st.load(path).values == changed.values


def _documented_rows():
    """(heading, key, applies) of every settings row of docs/settings.md."""
    heading, out = None, []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        m = re.match(r"^\| `([^`]+)` \| `[^`]*` \| .* \| (at once|next start) \|$", line)
        if m:
            out.append((heading, m.group(1), m.group(2)))
    return out


def test_docs_group_every_key_under_its_group_and_say_when_it_applies():
    found = {key: (heading, applies) for heading, key, applies in _documented_rows()}
    assert set(found) == {k.name for k in st.KEYS}, "every key needs its row: | `key` | `default` | meaning | applies |"
    wrong_group = [k.name for k in st.KEYS if found[k.name][0] != st.group_of(k.name)]
    assert wrong_group == [], f"docs/settings.md lists these under another heading than group_of(): {wrong_group}"
    wrong_applies = [k.name for k in st.KEYS if found[k.name][1] != ("at once" if k.live else "next start")]
    assert wrong_applies == [], f"docs/settings.md says the wrong time a change applies for {wrong_applies}"


def test_saving_a_change_keeps_a_hand_edited_files_other_keys_and_style(tmp_path):
    path = tmp_path / "keepmind.json"
    path.write_text(json.dumps({"memory": {"recall": {"max_items": 2}}, "my.own.note": "kept",
                                "server.port": 9000}))
    result = st.save_changes(path, {"memory.recall.max_items": 4, "memory.curation.review": True,
                                    "server.port": 9001})
    raw = json.loads(path.read_text())
    assert raw["memory"]["recall"]["max_items"] == 4  # changed where it was written (nested)
    assert raw["memory"]["curation"]["review"] is True  # a new key follows the file's nesting
    assert raw["server.port"] == 9001 and raw["my.own.note"] == "kept"
    assert result["memory.recall.max_items"] == 4 and st.load(path)["memory.curation.review"] is True


def test_a_bad_change_is_refused_with_the_files_error_and_nothing_is_written(tmp_path):
    path = tmp_path / "keepmind.json"
    path.write_text('{"server.port": 9000}')
    with pytest.raises(SettingsError) as info:
        st.save_changes(path, {"memory.recall.max_items": 99})
    assert "memory.recall.max_items" in info.value.message and "from 1 to 10" in info.value.message
    assert json.loads(path.read_text()) == {"server.port": 9000}


def test_a_secret_is_never_written_to_the_settings_file(tmp_path):
    path = tmp_path / "keepmind.json"
    with pytest.raises(SettingsError) as info:
        st.save_changes(path, {"memory.llm.api_key_env": "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2})
    assert "memory.llm.api_key_env" in info.value.message and "environment variable" in info.value.message
    assert not path.exists()


def test_keys_are_grouped_by_their_longest_prefix():
    assert st.group_of("memory.enabled") == "Memory"
    assert st.group_of("memory.recall.gate.threshold") == "Recall"
    assert st.group_of("memory.models_dir") == "Models and embeddings"
    assert st.group_of("memory.curation.review") == "Curation and review"
    assert st.group_of("something.new") == "Other"


def test_the_api_key_variable_must_be_a_variable_name_and_a_pasted_key_is_not_said_back():
    """A walk saved a key of no known shape ("plainkey-Zebra-991") as memory.llm.api_key_env: it can
    be no variable's name, and keepmind.json never holds a secret."""
    from keepmind.engine.settings import SettingsError, validate

    assert validate({"memory.llm.api_key_env": "OPENAI_API_KEY"}).values["memory.llm.api_key_env"] == "OPENAI_API_KEY"
    with pytest.raises(SettingsError) as refused:
        validate({"memory.llm.api_key_env": "plainkey-Zebra-991"})
    assert "plainkey" not in str(refused.value) and "the name of an environment variable" in str(refused.value)
