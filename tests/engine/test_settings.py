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
    ({"policy.cross_boundary_reads": ["x"]}, "policy.cross_boundary_reads", "an object mapping"),
])
def test_bad_values_name_the_key_and_allowed_values(raw, key, allowed):
    with pytest.raises(SettingsError) as info:
        st.validate(raw)
    assert key in info.value.message and allowed in info.value.message


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
